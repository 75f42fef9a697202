package io.fdpblock.device;

import java.util.Arrays;
import java.util.Locale;

/**
 * When an io_uring engine hands the SQEs it prepared to the kernel ({@code io_uring_enter}). Every policy
 * submits whatever is prepared before the ring waits; they differ in what happens while work keeps coming
 * (a burst of completions whose callbacks submit more, a large batch).
 *
 * <p>One SQE per call starts each I/O at once but costs a system call per I/O; many per call save those
 * calls (real NVMe at high IOPS) but hold the first SQEs back while the rest are built, and the block layer
 * plugs a multi-SQE submission until its end. {@link #ADAPTIVE} takes the middle: it never holds back more
 * than an eighth of what the device already has queued, so the device is never short of work on account
 * of batching, and the calls saved grow with the depth.
 *
 * <p>Under every policy, what the reactor's last completion callback of a reap prepares goes with the
 * reactor's next wait, which follows at once: one {@code io_uring_enter} submits it and waits, where a
 * call of its own made two per I/O whenever completions come one at a time.
 */
public enum SubmitPolicy {
    /** Every SQE is submitted as soon as it is prepared: one {@code io_uring_enter} per I/O. */
    IMMEDIATE,
    /**
     * SQEs wait while fewer than 1/8 of the I/Os already in the kernel: at once when the device has
     * fewer than 16 queued (QD1: immediately), in groups of up to depth/8 above that; within one batch,
     * in groups of 8 (or depth/8) and its last SQE as above.
     */
    ADAPTIVE,
    /** Everything prepared in one reactor cycle goes in one call, just before the reactor waits. */
    PER_CYCLE;

    /** How many of the I/Os in the kernel may run for each SQE held back ({@link #ADAPTIVE}). */
    static final int ADAPTIVE_SHIFT = 3;
    /** SQEs of one batch that {@link #ADAPTIVE} prepares before it submits any (more when the depth is large). */
    static final int ADAPTIVE_BATCH_SQES = 8;

    /** Should {@code prepared} SQEs not yet submitted go now, with {@code inKernel} I/Os already there? */
    boolean submitNow(int prepared, int inKernel) {
        return switch (this) {
            case IMMEDIATE -> prepared > 0;
            case ADAPTIVE -> prepared > 0 && prepared >= (inKernel >> ADAPTIVE_SHIFT);
            case PER_CYCLE -> false;
        };
    }

    /**
     * Should {@code prepared} SQEs go now, with {@code inKernel} I/Os already there, while the next SQE of
     * the same batch is prepared right after (a microsecond apart)? {@link #ADAPTIVE} holds up to
     * {@value #ADAPTIVE_BATCH_SQES} of them, or an eighth of the depth in the kernel when that is more: a
     * load of 4 chunks was 4 system calls, one per SQE, where one hands them all over as soon. A batch's
     * last SQE is judged by {@link #submitNow}.
     */
    boolean submitWithinBatch(int prepared, int inKernel) {
        return switch (this) {
            case IMMEDIATE -> prepared > 0;
            case ADAPTIVE -> prepared >= Math.max(ADAPTIVE_BATCH_SQES, inKernel >> ADAPTIVE_SHIFT);
            case PER_CYCLE -> false;
        };
    }

    /** Parses {@code immediate}, {@code adaptive} or {@code per_cycle} (case-insensitive, '-' for '_'). */
    public static SubmitPolicy parse(String s) {
        try {
            return valueOf(s.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalArgumentException("unknown submit policy '" + s + "': use one of " + names());
        }
    }

    static String names() {
        return String.join(", ", Arrays.stream(values()).map(v -> v.name().toLowerCase(Locale.ROOT)).toList());
    }
}
