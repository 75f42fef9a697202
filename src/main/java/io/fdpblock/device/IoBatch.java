package io.fdpblock.device;

import io.fdpblock.linux.Errno;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A batch of reads, writes, flushes and deallocations handed to a {@link BlockDevice} in one
 * submission, and then their results. Reusable: {@link #reset()} and fill it again; its arrays grow
 * once and are kept, so a steady stream of batches allocates nothing per operation.
 *
 * <p>Each write may carry a {@link PlacementId} (FDP). A batch belongs to one submitter at a time: do
 * not touch it between {@link BlockDevice#submit} and its completion. Buffers handed to a batch must
 * stay alive and unchanged until its callback ran; if the callback finds
 * {@link #buffersMayBeInUse()} true (the device was torn down with the operation still in the
 * kernel), they must never be freed or reused.
 */
public final class IoBatch {
    static final byte READ = 0;
    static final byte WRITE = 1;
    static final byte FLUSH = 2;
    static final byte DEALLOCATE = 3;

    /** Called once when every operation of the batch has completed; on the device's I/O thread. */
    @FunctionalInterface
    public interface Callback {
        void onComplete(IoBatch batch);
    }

    private int size;
    private byte[] kinds;
    private long[] offsets;
    private long[] lengths;
    private MemorySegment[] buffers;
    private int[] placements;
    /** Bytes transferred, or {@code -errno}. */
    private long[] results;
    /** When non-null, the failure of an operation that is not a plain errno (an NVMe status, a cancellation). */
    private IOException[] failures;
    /** Parts (SQEs) of an operation still in flight, for engines that split. */
    private int[] partsLeft;
    private volatile boolean buffersMayBeInUse;

    // Set by the device at submission.
    String devicePath = "?";
    int remaining;
    Callback callback;

    public IoBatch() {
        this(16);
    }

    public IoBatch(int initialCapacity) {
        int c = Math.max(1, initialCapacity);
        kinds = new byte[c];
        offsets = new long[c];
        lengths = new long[c];
        buffers = new MemorySegment[c];
        placements = new int[c];
        results = new long[c];
        failures = new IOException[c];
        partsLeft = new int[c];
    }

    /** Reads {@code buffer.byteSize()} bytes at {@code offset} into {@code buffer}. @return its index */
    public int read(long offset, MemorySegment buffer) {
        return add(READ, offset, buffer, buffer == null ? 0 : buffer.byteSize(), PlacementId.NONE_VALUE);
    }

    /** Writes {@code buffer} at {@code offset} with no placement directive. @return its index */
    public int write(long offset, MemorySegment buffer) {
        return write(offset, buffer, PlacementId.NONE);
    }

    /** Writes {@code buffer} at {@code offset} with a placement id ({@link PlacementId#NONE}: none). @return its index */
    public int write(long offset, MemorySegment buffer, PlacementId placement) {
        if (placement == null) {
            throw new NullPointerException("placement (use PlacementId.NONE for no directive)");
        }
        return add(WRITE, offset, buffer, buffer == null ? 0 : buffer.byteSize(), placement.value());
    }

    /** A write barrier: makes every completed write durable (fdatasync / NVMe flush). @return its index */
    public int flush() {
        return add(FLUSH, 0, MemorySegment.NULL, 0, PlacementId.NONE_VALUE);
    }

    /**
     * Tells the device that {@code [offset, offset + length)} holds no live data (NVMe Dataset
     * Management deallocate). On engines that cannot, it completes at once as a no-op
     * ({@link BlockDevice#supportsDeallocate()} says which). @return its index
     */
    public int deallocate(long offset, long length) {
        return add(DEALLOCATE, offset, MemorySegment.NULL, length, PlacementId.NONE_VALUE);
    }

    private int add(byte kind, long offset, MemorySegment buffer, long length, int placementId) {
        if (buffer == null) {
            throw new NullPointerException("buffer");
        }
        if (size == kinds.length) {
            grow();
        }
        int i = size++;
        kinds[i] = kind;
        offsets[i] = offset;
        lengths[i] = length;
        buffers[i] = buffer;
        placements[i] = placementId;
        results[i] = 0;
        failures[i] = null;
        return i;
    }

    private void grow() {
        int c = kinds.length * 2;
        kinds = Arrays.copyOf(kinds, c);
        offsets = Arrays.copyOf(offsets, c);
        lengths = Arrays.copyOf(lengths, c);
        buffers = Arrays.copyOf(buffers, c);
        placements = Arrays.copyOf(placements, c);
        results = Arrays.copyOf(results, c);
        failures = Arrays.copyOf(failures, c);
        partsLeft = Arrays.copyOf(partsLeft, c);
    }

    /**
     * Empties the batch for reuse (drops buffer references).
     *
     * @throws IllegalStateException when the device may still be using its buffers
     */
    public void reset() {
        if (buffersMayBeInUse) {
            throw new IllegalStateException(this + " was abandoned with operations in the kernel: it and its"
                    + " buffers must not be reused");
        }
        Arrays.fill(buffers, 0, size, null);
        Arrays.fill(failures, 0, size, null);
        size = 0;
        callback = null;
    }

    public int size() {
        return size;
    }

    public boolean isEmpty() {
        return size == 0;
    }

    public boolean isWrite(int i) {
        return kinds[check(i)] == WRITE;
    }

    public boolean isRead(int i) {
        return kinds[check(i)] == READ;
    }

    public boolean isFlush(int i) {
        return kinds[check(i)] == FLUSH;
    }

    public boolean isDeallocate(int i) {
        return kinds[check(i)] == DEALLOCATE;
    }

    byte kind(int i) {
        return kinds[i];
    }

    public long offset(int i) {
        return offsets[check(i)];
    }

    /** The buffer of a read or write ({@link MemorySegment#NULL} for flushes and deallocations). */
    public MemorySegment buffer(int i) {
        return buffers[check(i)];
    }

    /** Bytes the operation covers (0 for a flush). */
    public long length(int i) {
        return lengths[check(i)];
    }

    public PlacementId placementId(int i) {
        return PlacementId.ofRaw(placements[check(i)]);
    }

    /** The raw placement id ({@link PlacementId#NONE_VALUE} for none), for engines. */
    int rawPlacementId(int i) {
        return placements[i];
    }

    private int check(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("operation " + i + " of a batch of " + size);
        }
        return i;
    }

    void complete(int i, long result) {
        results[i] = result;
    }

    void fail(int i, String message) {
        fail(i, new IOException(describe(i) + " failed: " + message));
    }

    void fail(int i, IOException cause) {
        results[i] = -Errno.ECANCELED;
        failures[i] = cause;
    }

    void beginParts(int i, int parts) {
        partsLeft[i] = parts;
        results[i] = 0;
    }

    /**
     * Adds a part's result (bytes, or {@code -errno}): bytes add up; the first failure sticks.
     *
     * @return true when it was the op's last part
     */
    boolean completePart(int i, long result) {
        if (result < 0) {
            if (results[i] >= 0) {
                results[i] = result;
            }
        } else if (results[i] >= 0) {
            results[i] += result;
        }
        return --partsLeft[i] == 0;
    }

    /** A part failed with {@code cause} (the first failure sticks). @return true when it was the op's last part */
    boolean failPart(int i, IOException cause) {
        if (results[i] >= 0) {
            results[i] = -Errno.ECANCELED;
            failures[i] = cause;
        }
        return --partsLeft[i] == 0;
    }

    boolean failPart(int i, String message) {
        return failPart(i, new IOException(describe(i) + " failed: " + message));
    }

    /** The device gave up on this batch while some of its operations were still in the kernel. */
    void markBuffersMayBeInUse() {
        buffersMayBeInUse = true;
    }

    /**
     * True when the device was torn down while operations of this batch were still in the kernel: the
     * batch failed, and its buffers may still be read or written by the device, so they must never be
     * freed or reused (leak them).
     */
    public boolean buffersMayBeInUse() {
        return buffersMayBeInUse;
    }

    /** Bytes transferred by operation {@code i} (fewer than its length only for a read at end of device). */
    public long result(int i) {
        long r = results[check(i)];
        return Math.max(r, 0);
    }

    /** The operation failed (an errno, an NVMe status, a cancellation). A short read at end of device is not a failure. */
    public boolean failed(int i) {
        return results[check(i)] < 0;
    }

    /** The operation transferred its whole buffer (flushes and deallocations: succeeded). */
    public boolean isComplete(int i) {
        byte k = kinds[check(i)];
        return results[i] == (k == FLUSH || k == DEALLOCATE ? 0 : lengths[i]);
    }

    /** @return the failure of operation {@code i}, or null when it did not fail */
    public IOException failure(int i) {
        long r = results[check(i)];
        if (r >= 0) {
            return null;
        }
        if (failures[i] != null) {
            return failures[i];
        }
        int errno = (int) -r;
        String hint = errno == Errno.EINVAL
                ? "with O_DIRECT the buffer address, length and offset must be aligned to the device's logical block size"
                : null;
        return Errno.exception(describe(i), errno, hint);
    }

    /**
     * @throws IOException for the first operation that failed or transferred less than its length
     *         (naming the operation, the device, the errno or status)
     */
    public void throwIfFailed() throws IOException {
        for (int i = 0; i < size; i++) {
            IOException e = failure(i);
            if (e != null) {
                throw e;
            }
            if (!isComplete(i)) {
                throw new IOException(describe(i) + " transferred only " + results[i] + " of " + lengths[i]
                        + " bytes (end of device?)");
            }
        }
    }

    String describe(int i) {
        return switch (kinds[i]) {
            case READ -> "read(" + devicePath + ", offset=" + offsets[i] + ", length=" + lengths[i] + ")";
            case WRITE -> "write(" + devicePath + ", offset=" + offsets[i] + ", length=" + lengths[i]
                    + (placements[i] != PlacementId.NONE_VALUE ? ", placement id=" + placements[i] : "") + ")";
            case DEALLOCATE -> "deallocate(" + devicePath + ", offset=" + offsets[i] + ", length=" + lengths[i] + ")";
            default -> "flush(" + devicePath + ")";
        };
    }

    @Override
    public String toString() {
        return "IoBatch[" + size + " ops]";
    }
}
