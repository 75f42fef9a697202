package io.fdpblock.device;

/**
 * How to open a {@link BlockDevice}.
 *
 * @param engine the I/O engine
 * @param queueDepth operations in flight at most (io_uring ring size)
 * @param direct O_DIRECT (no page cache); the posix engine may turn it off, io_uring always uses it
 * @param bufferSize bytes per buffer of the device's {@link AlignedBufferPool}
 * @param bufferCount buffers in that pool (0: none)
 * @param sqPollIdleMillis {@code > 0}: io_uring SQPOLL with this idle time; 0: off
 * @param exclusive one owner: an exclusive {@code flock} on the device (and {@code O_EXCL} for a block
 *        device), so a second opener, in this process or another, fails at once (on by default)
 */
public record DeviceOptions(IoEngine engine, int queueDepth, boolean direct, int bufferSize, int bufferCount,
        int sqPollIdleMillis, boolean exclusive) {
    public static final int DEFAULT_QUEUE_DEPTH = 256;
    public static final int DEFAULT_BUFFER_SIZE = 1 << 20;
    public static final int DEFAULT_BUFFER_COUNT = 64;

    public DeviceOptions {
        if (engine == null) {
            throw new IllegalArgumentException("engine must be set: one of posix, io_uring, uring_cmd, memory");
        }
        if (queueDepth < 1 || queueDepth > 4096) {
            throw new IllegalArgumentException("queue depth " + queueDepth + " must be in 1..4096");
        }
        if (bufferSize < 4096 || bufferSize % 4096 != 0) {
            throw new IllegalArgumentException("buffer size " + bufferSize + " must be a positive multiple of 4096");
        }
        if (bufferCount < 0 || (long) bufferSize * bufferCount > (1L << 34)) {
            throw new IllegalArgumentException("buffer pool of " + bufferCount + " x " + bufferSize
                    + " bytes must have a count >= 0 and at most 16 GiB in all");
        }
        if (sqPollIdleMillis < 0) {
            throw new IllegalArgumentException("sqPollIdleMillis " + sqPollIdleMillis + " must be >= 0 (0 = off)");
        }
    }

    public static DeviceOptions of(IoEngine engine) {
        return new DeviceOptions(engine, DEFAULT_QUEUE_DEPTH, true, DEFAULT_BUFFER_SIZE, DEFAULT_BUFFER_COUNT, 0, true);
    }

    public DeviceOptions withQueueDepth(int qd) {
        return new DeviceOptions(engine, qd, direct, bufferSize, bufferCount, sqPollIdleMillis, exclusive);
    }

    public DeviceOptions withDirect(boolean on) {
        return new DeviceOptions(engine, queueDepth, on, bufferSize, bufferCount, sqPollIdleMillis, exclusive);
    }

    public DeviceOptions withBuffers(int size, int count) {
        return new DeviceOptions(engine, queueDepth, direct, size, count, sqPollIdleMillis, exclusive);
    }

    public DeviceOptions withSqPoll(int idleMillis) {
        return new DeviceOptions(engine, queueDepth, direct, bufferSize, bufferCount, idleMillis, exclusive);
    }

    public DeviceOptions withExclusive(boolean on) {
        return new DeviceOptions(engine, queueDepth, direct, bufferSize, bufferCount, sqPollIdleMillis, on);
    }
}
