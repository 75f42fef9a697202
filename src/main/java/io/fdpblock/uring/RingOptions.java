package io.fdpblock.uring;

/**
 * How to set up a {@link Ring}.
 *
 * @param entries submission queue entries (rounded up to a power of two by the kernel); the
 *        completion queue gets twice as many
 * @param bigEntries {@code IORING_SETUP_SQE128 | IORING_SETUP_CQE32}: 128-byte SQEs and 32-byte CQEs,
 *        required for NVMe passthru ({@code IORING_OP_URING_CMD})
 * @param taskrunHints try {@code SINGLE_ISSUER|DEFER_TASKRUN}, then {@code COOP_TASKRUN}, falling back
 *        when the kernel answers EINVAL; the ring must then be driven by the thread that created it
 * @param sqPollIdleMillis {@code > 0}: a kernel thread polls the submission queue ({@code
 *        IORING_SETUP_SQPOLL}) and sleeps after this idle time; {@code 0}: off
 */
public record RingOptions(int entries, boolean bigEntries, boolean taskrunHints, int sqPollIdleMillis) {
    public static final int MAX_ENTRIES = 32768;

    public RingOptions {
        if (entries < 1 || entries > MAX_ENTRIES) {
            throw new IllegalArgumentException("ring entries " + entries + " must be in 1.." + MAX_ENTRIES);
        }
        if (sqPollIdleMillis < 0) {
            throw new IllegalArgumentException("sqPollIdleMillis " + sqPollIdleMillis + " must be >= 0 (0 = off)");
        }
    }

    /** Normal 64-byte SQEs, task-run hints on, no SQPOLL. */
    public static RingOptions of(int entries) {
        return new RingOptions(entries, false, true, 0);
    }

    public RingOptions withBigEntries(boolean on) {
        return new RingOptions(entries, on, taskrunHints, sqPollIdleMillis);
    }

    public RingOptions withTaskrunHints(boolean on) {
        return new RingOptions(entries, bigEntries, on, sqPollIdleMillis);
    }

    public RingOptions withSqPoll(int idleMillis) {
        return new RingOptions(entries, bigEntries, taskrunHints, idleMillis);
    }
}
