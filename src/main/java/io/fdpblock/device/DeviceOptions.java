package io.fdpblock.device;

import java.util.function.Consumer;

/**
 * How to open a {@link BlockDevice}.
 *
 * @param engine the I/O engine
 * @param queueDepth operations in flight at most per ring (io_uring ring size)
 * @param direct O_DIRECT (no page cache); the posix engine may turn it off, io_uring always uses it
 * @param bufferSize bytes per buffer of the device's {@link AlignedBufferPool}
 * @param bufferCount buffers in that pool (0: none)
 * @param sqPollIdleMillis {@code > 0}: io_uring SQPOLL with this idle time; 0: off
 * @param exclusive one owner: an exclusive {@code flock} on the device (and {@code O_EXCL} for a block
 *        device), so a second opener, in this process or another, fails at once (on by default)
 * @param ioRings io_uring engines: rings per device, each with its own reactor thread; a submitting
 *        thread keeps to one of them (1..the machine's cores; default 1)
 * @param submitPolicy io_uring engines: when prepared SQEs are handed to the kernel (default
 *        {@link SubmitPolicy#ADAPTIVE})
 */
public record DeviceOptions(IoEngine engine, int queueDepth, boolean direct, int bufferSize, int bufferCount,
        int sqPollIdleMillis, boolean exclusive, int ioRings, SubmitPolicy submitPolicy) {
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
        int cores = Runtime.getRuntime().availableProcessors();
        if (ioRings < 1 || ioRings > cores) {
            throw new IllegalArgumentException("io_rings " + ioRings + " must be in 1.." + cores + " (one reactor"
                    + " thread per ring; this machine has " + cores + " cores): lower it");
        }
        if (submitPolicy == null) {
            throw new IllegalArgumentException("submitPolicy must be set: one of " + SubmitPolicy.names());
        }
    }

    public static DeviceOptions of(IoEngine engine) {
        return new DeviceOptions(engine, DEFAULT_QUEUE_DEPTH, true, DEFAULT_BUFFER_SIZE, DEFAULT_BUFFER_COUNT, 0, true, 1,
                SubmitPolicy.ADAPTIVE);
    }

    public DeviceOptions withQueueDepth(int qd) {
        return edit(c -> c.queueDepth = qd);
    }

    public DeviceOptions withDirect(boolean on) {
        return edit(c -> c.direct = on);
    }

    public DeviceOptions withBuffers(int size, int count) {
        return edit(c -> {
            c.bufferSize = size;
            c.bufferCount = count;
        });
    }

    public DeviceOptions withSqPoll(int idleMillis) {
        return edit(c -> c.sqPollIdleMillis = idleMillis);
    }

    public DeviceOptions withExclusive(boolean on) {
        return edit(c -> c.exclusive = on);
    }

    /** Rings (and reactor threads) per device for the io_uring engines; 1..cores. */
    public DeviceOptions withIoRings(int rings) {
        return edit(c -> c.ioRings = rings);
    }

    public DeviceOptions withSubmitPolicy(SubmitPolicy policy) {
        return edit(c -> c.submitPolicy = policy);
    }

    /** A copy with {@code change} applied, checked by the canonical constructor like any other. */
    private DeviceOptions edit(Consumer<Copy> change) {
        Copy c = new Copy(this);
        change.accept(c);
        return new DeviceOptions(c.engine, c.queueDepth, c.direct, c.bufferSize, c.bufferCount, c.sqPollIdleMillis,
                c.exclusive, c.ioRings, c.submitPolicy);
    }

    /** The components, mutable, for one {@link #edit}. */
    private static final class Copy {
        IoEngine engine;
        int queueDepth;
        boolean direct;
        int bufferSize;
        int bufferCount;
        int sqPollIdleMillis;
        boolean exclusive;
        int ioRings;
        SubmitPolicy submitPolicy;

        Copy(DeviceOptions o) {
            engine = o.engine;
            queueDepth = o.queueDepth;
            direct = o.direct;
            bufferSize = o.bufferSize;
            bufferCount = o.bufferCount;
            sqPollIdleMillis = o.sqPollIdleMillis;
            exclusive = o.exclusive;
            ioRings = o.ioRings;
            submitPolicy = o.submitPolicy;
        }
    }
}
