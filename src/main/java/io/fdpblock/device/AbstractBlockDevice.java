package io.fdpblock.device;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What every engine shares: geometry, the buffer pool, argument checks done before any I/O, and a
 * close that waits for the submitters still inside {@link #submit} (a count, not a lock held across I/O).
 */
abstract class AbstractBlockDevice implements BlockDevice {
    static final System.Logger LOG = System.getLogger("io.fdpblock.device");
    private static final int CLOSED = Integer.MIN_VALUE / 2;

    private final String path;
    private final long sizeBytes;
    private final int logicalBlockSize;
    private final int maxTransferBytes;
    private final int bufferAlignment;
    private final AlignedBufferPool buffers;
    /** Submitters inside the device; {@link #CLOSED} is added once at close. */
    private final AtomicInteger users = new AtomicInteger();

    AbstractBlockDevice(String path, long sizeBytes, int logicalBlockSize, int maxTransferBytes, int bufferAlignment,
            DeviceOptions options) {
        this.path = path;
        this.sizeBytes = sizeBytes;
        this.logicalBlockSize = logicalBlockSize;
        this.maxTransferBytes = maxTransferBytes;
        this.bufferAlignment = bufferAlignment;
        int align = Math.max(logicalBlockSize, Math.max(bufferAlignment, 4096));
        int size = Math.max(options.bufferSize(), align) / align * align;
        this.buffers = new AlignedBufferPool(size, options.bufferCount(), align);
    }

    @Override
    public final String path() {
        return path;
    }

    @Override
    public final long sizeBytes() {
        return sizeBytes;
    }

    @Override
    public final int logicalBlockSize() {
        return logicalBlockSize;
    }

    @Override
    public final int maxTransferBytes() {
        return maxTransferBytes;
    }

    @Override
    public final int bufferAlignment() {
        return bufferAlignment;
    }

    @Override
    public final AlignedBufferPool buffers() {
        return buffers;
    }

    /** Enters the device; pair with {@link #leave()}. @throws IOException when closed */
    final void enter(String what) throws IOException {
        if (users.incrementAndGet() < 0) {
            leave();
            throw closedException(what);
        }
    }

    final void leave() {
        users.decrementAndGet();
    }

    final boolean isClosed() {
        return users.get() < 0;
    }

    IOException closedException(String what) {
        return new IOException(what + " on " + engine() + " device " + path + ": the device is closed");
    }

    /**
     * Marks the device closed and waits for the submitters inside it to leave.
     *
     * @return false when it was closed already
     */
    final boolean markClosedAndDrain() {
        int prev;
        do {
            prev = users.get();
            if (prev < 0) {
                return false;
            }
        } while (!users.compareAndSet(prev, prev + CLOSED));
        while (users.get() != CLOSED) {
            Thread.onSpinWait();
            Thread.yield();
        }
        return true;
    }

    /** Checks every operation of {@code batch} before any I/O (allocating nothing unless it refuses one). */
    final void validate(IoBatch batch) throws IOException {
        batch.devicePath = path;
        if (batch.buffersMayBeInUse()) {
            throw new IOException(batch + " was abandoned with operations in the kernel: it must not be reused");
        }
        for (int i = 0; i < batch.size(); i++) {
            byte kind = batch.kind(i);
            if (kind == IoBatch.FLUSH) {
                continue;
            }
            long offset = batch.offset(i);
            long len = batch.length(i);
            if (offset < 0 || offset % logicalBlockSize != 0) {
                throw new IOException(batch.describe(i) + ": offset " + offset + " is not a non-negative multiple of the logical"
                        + " block size " + logicalBlockSize + (isDirectIo() ? " (O_DIRECT)" : "") + "; align offsets to it");
            }
            if (len <= 0 || len % logicalBlockSize != 0) {
                throw new IOException(batch.describe(i) + ": length " + len + " is not a positive multiple of the logical block"
                        + " size " + logicalBlockSize + (isDirectIo() ? " (O_DIRECT)" : ""));
            }
            // offset + len may overflow a long: compare against what is left instead
            if ((kind == IoBatch.WRITE || kind == IoBatch.DEALLOCATE) && (offset > sizeBytes || len > sizeBytes - offset)) {
                throw new IOException(batch.describe(i) + ": ends past the end of the device (" + sizeBytes + " bytes); the last"
                        + " valid byte is at " + (sizeBytes - 1));
            }
            if (kind == IoBatch.READ && offset > sizeBytes) {
                throw new IOException(batch.describe(i) + ": starts past the end of the device (" + sizeBytes + " bytes)");
            }
            if (kind == IoBatch.DEALLOCATE) {
                validateDeallocate(batch, i);
                continue;
            }
            MemorySegment buf = batch.buffer(i);
            if (len > maxTransferBytes) {
                throw new IOException(batch.describe(i) + ": length " + len + " exceeds the maximum transfer of " + maxTransferBytes
                        + " bytes; split it");
            }
            if (bufferAlignment > 1 && buf.address() % bufferAlignment != 0) {
                throw new IOException(batch.describe(i) + ": buffer address 0x" + Long.toHexString(buf.address())
                        + " is not aligned to " + bufferAlignment + " bytes as O_DIRECT requires; take buffers from"
                        + " device.buffers() or allocate them with that alignment");
            }
            if (buf.isReadOnly() && kind == IoBatch.READ) {
                throw new IOException(batch.describe(i) + ": the buffer is read-only");
            }
            if (!buf.isNative()) {
                throw new IOException(batch.describe(i) + ": the buffer is on the Java heap; native I/O needs an off-heap segment");
            }
        }
    }

    /** An engine's own limits on deallocation {@code i} of {@code batch}. */
    void validateDeallocate(IoBatch batch, int i) throws IOException {
    }

    /** Whether buffers/offsets follow O_DIRECT rules (for messages). */
    abstract boolean isDirectIo();

    /** Runs the submitter's callback; its failure is logged, never propagated into the I/O path. */
    static void complete(IoBatch batch, IoBatch.Callback callback) {
        try {
            callback.onComplete(batch);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "completion callback of " + batch + " threw", t);
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + path + ", " + sizeBytes + " bytes, block " + logicalBlockSize + "]";
    }
}
