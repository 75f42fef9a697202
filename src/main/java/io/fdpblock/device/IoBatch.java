package io.fdpblock.device;

import io.fdpblock.nvme.NvmeStatus;
import io.fdpblock.nvme.NvmeStatusException;
import io.fdpblock.linux.Errno;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A batch of reads and writes handed to a {@link BlockDevice} in one submission, and then their
 * results. Reusable: {@link #reset()} and fill it again; its arrays grow once and are kept, so a
 * steady stream of batches allocates nothing per operation.
 *
 * <p>Each write may carry a placement id (FDP: 1..65535; 0 = no directive). A batch belongs to one
 * submitter at a time: do not touch it between {@link BlockDevice#submit} and its completion.
 */
public final class IoBatch {
    /** Placement id meaning "no directive". */
    public static final int NO_PLACEMENT = 0;
    public static final int MAX_PLACEMENT_ID = 0xFFFF;

    static final byte READ = 0;
    static final byte WRITE = 1;
    static final byte FLUSH = 2;

    /** Called once when every operation of the batch has completed; on the device's I/O thread. */
    @FunctionalInterface
    public interface Callback {
        void onComplete(IoBatch batch);
    }

    private int size;
    private byte[] kinds;
    private long[] offsets;
    private MemorySegment[] buffers;
    private int[] placements;
    /** Bytes transferred, or {@code -errno}. */
    private long[] results;
    /** When non-null, a failure that is not an errno (e.g. the device was closed). */
    private String[] errors;
    /** Parts (SQEs) of an operation still in flight, for engines that split. */
    private int[] partsLeft;

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
        buffers = new MemorySegment[c];
        placements = new int[c];
        results = new long[c];
        errors = new String[c];
        partsLeft = new int[c];
    }

    /** Reads {@code buffer.byteSize()} bytes at {@code offset} into {@code buffer}. @return its index */
    public int read(long offset, MemorySegment buffer) {
        return add(READ, offset, buffer, NO_PLACEMENT);
    }

    /** Writes {@code buffer} at {@code offset} with no placement directive. @return its index */
    public int write(long offset, MemorySegment buffer) {
        return add(WRITE, offset, buffer, NO_PLACEMENT);
    }

    /**
     * Writes {@code buffer} at {@code offset} with a placement id (1..65535, or {@link #NO_PLACEMENT}).
     *
     * @return its index
     */
    public int write(long offset, MemorySegment buffer, int placementId) {
        if (placementId < 0 || placementId > MAX_PLACEMENT_ID) {
            throw new IllegalArgumentException("placement id " + placementId + " is outside 1.." + MAX_PLACEMENT_ID
                    + " (0 = no placement directive)");
        }
        return add(WRITE, offset, buffer, placementId);
    }

    /** A write barrier: makes every completed write durable (fdatasync / NVMe flush). */
    int flush() {
        return add(FLUSH, 0, MemorySegment.NULL, NO_PLACEMENT);
    }

    private int add(byte kind, long offset, MemorySegment buffer, int placementId) {
        if (buffer == null) {
            throw new NullPointerException("buffer");
        }
        if (size == kinds.length) {
            grow();
        }
        int i = size++;
        kinds[i] = kind;
        offsets[i] = offset;
        buffers[i] = buffer;
        placements[i] = placementId;
        results[i] = 0;
        errors[i] = null;
        return i;
    }

    private void grow() {
        int c = kinds.length * 2;
        kinds = Arrays.copyOf(kinds, c);
        offsets = Arrays.copyOf(offsets, c);
        buffers = Arrays.copyOf(buffers, c);
        placements = Arrays.copyOf(placements, c);
        results = Arrays.copyOf(results, c);
        errors = Arrays.copyOf(errors, c);
        partsLeft = Arrays.copyOf(partsLeft, c);
    }

    /** Empties the batch for reuse (drops buffer references). */
    public void reset() {
        Arrays.fill(buffers, 0, size, null);
        Arrays.fill(errors, 0, size, null);
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

    byte kind(int i) {
        return kinds[i];
    }

    public long offset(int i) {
        return offsets[check(i)];
    }

    public MemorySegment buffer(int i) {
        return buffers[check(i)];
    }

    public long length(int i) {
        return buffers[check(i)].byteSize();
    }

    public int placementId(int i) {
        return placements[check(i)];
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
        results[i] = -Errno.ECANCELED;
        errors[i] = message;
    }

    /** Result codes below this carry an NVMe status (engines that speak NVMe). */
    static final long NVME_STATUS_FLAG = 1L << 20;

    /** The failure code for an NVMe status. */
    static long nvmeFailure(int status) {
        return -(NVME_STATUS_FLAG | (status & 0xFFFF));
    }

    void beginParts(int i, int parts) {
        partsLeft[i] = parts;
        results[i] = 0;
    }

    /**
     * Adds a part's result: bytes add up; the first failure sticks.
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

    boolean failPart(int i, String message) {
        if (results[i] >= 0) {
            results[i] = -Errno.ECANCELED;
            errors[i] = message;
        }
        return --partsLeft[i] == 0;
    }

    /** Bytes transferred by operation {@code i} (fewer than its length only for a read at end of device). */
    public long result(int i) {
        long r = results[check(i)];
        return Math.max(r, 0);
    }

    /** The operation failed (an errno, a cancellation). A short read at end of device is not a failure. */
    public boolean failed(int i) {
        return results[check(i)] < 0;
    }

    /** The operation transferred its whole buffer. */
    public boolean isComplete(int i) {
        return results[check(i)] == (kinds[i] == FLUSH ? 0 : buffers[i].byteSize());
    }

    /** @return the failure of operation {@code i}, or null when it did not fail */
    public IOException failure(int i) {
        long r = results[check(i)];
        if (r >= 0) {
            return null;
        }
        String what = describe(i);
        if (errors[i] != null) {
            return new IOException(what + " failed: " + errors[i]);
        }
        if ((-r & NVME_STATUS_FLAG) != 0) {
            return new NvmeStatusException(what, new NvmeStatus((int) (-r & 0xFFFF)));
        }
        int errno = (int) -r;
        String hint = errno == Errno.EINVAL
                ? "with O_DIRECT the buffer address, length and offset must be aligned to the device's logical block size"
                : null;
        return Errno.exception(what, errno, hint);
    }

    /**
     * @throws IOException for the first operation that failed or transferred less than its length
     *         (naming the operation, the device, the errno)
     */
    public void throwIfFailed() throws IOException {
        for (int i = 0; i < size; i++) {
            IOException e = failure(i);
            if (e != null) {
                throw e;
            }
            if (!isComplete(i)) {
                throw new IOException(describe(i) + " transferred only " + results[i] + " of " + buffers[i].byteSize()
                        + " bytes (end of device?)");
            }
        }
    }

    String describe(int i) {
        return switch (kinds[i]) {
            case READ -> "read(" + devicePath + ", offset=" + offsets[i] + ", length=" + buffers[i].byteSize() + ")";
            case WRITE -> "write(" + devicePath + ", offset=" + offsets[i] + ", length=" + buffers[i].byteSize()
                    + (placements[i] != NO_PLACEMENT ? ", placement id=" + placements[i] : "") + ")";
            default -> "flush(" + devicePath + ")";
        };
    }

    @Override
    public String toString() {
        return "IoBatch[" + size + " ops]";
    }
}
