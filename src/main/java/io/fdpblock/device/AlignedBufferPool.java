package io.fdpblock.device;

import io.fdpblock.linux.IoMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A fixed set of equally sized, aligned off-heap buffers carved from one region, so that the region
 * can be registered with an io_uring once and every buffer then uses fixed-buffer I/O.
 *
 * <p>{@link #tryAcquire()} and {@link #release} are thread-safe and allocate nothing (the slices are
 * made once). Closing the pool frees the memory: buffers must not be used after that.
 */
public final class AlignedBufferPool implements AutoCloseable {
    private final Arena arena = Arena.ofShared();
    private final MemorySegment region;
    private final MemorySegment[] slices;
    private final int bufferSize;
    private final int alignment;
    private final int[] free;
    private final boolean[] inUse;
    private int freeCount;

    /**
     * @param bufferSize bytes per buffer, a multiple of {@code alignment}
     * @param count number of buffers (0 allowed: an empty pool)
     * @param alignment a power of two, at least the device's logical block size for O_DIRECT
     */
    public AlignedBufferPool(int bufferSize, int count, int alignment) {
        if (alignment < 1 || Integer.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("buffer alignment " + alignment + " must be a power of two");
        }
        if (bufferSize < 1 || bufferSize % alignment != 0) {
            throw new IllegalArgumentException("buffer size " + bufferSize + " must be a positive multiple of the"
                    + " alignment " + alignment);
        }
        if (count < 0) {
            throw new IllegalArgumentException("buffer count " + count + " must be >= 0");
        }
        this.bufferSize = bufferSize;
        this.alignment = alignment;
        long total = (long) bufferSize * count;
        this.region = count == 0 ? MemorySegment.NULL : IoMemory.allocate(arena, total, Math.max(alignment, 4096));
        this.slices = new MemorySegment[count];
        this.free = new int[count];
        this.inUse = new boolean[count];
        for (int i = 0; i < count; i++) {
            slices[i] = region.asSlice((long) i * bufferSize, bufferSize);
            free[i] = count - 1 - i;
        }
        this.freeCount = count;
    }

    /** The whole region (what gets registered with a ring). */
    public MemorySegment region() {
        return region;
    }

    public int bufferSize() {
        return bufferSize;
    }

    public int alignment() {
        return alignment;
    }

    public int capacity() {
        return slices.length;
    }

    public synchronized int available() {
        return freeCount;
    }

    /** @return a free buffer, or null when all are in use */
    public synchronized MemorySegment tryAcquire() {
        if (freeCount == 0) {
            return null;
        }
        int i = free[--freeCount];
        inUse[i] = true;
        return slices[i];
    }

    /** @throws IllegalStateException naming the pool's size when every buffer is in use */
    public MemorySegment acquire() {
        MemorySegment b = tryAcquire();
        if (b == null) {
            throw new IllegalStateException("all " + slices.length + " buffers of " + bufferSize
                    + " bytes are in use: release some, or make the pool larger");
        }
        return b;
    }

    /** Returns a buffer from {@link #tryAcquire()} (any slice starting where it started is accepted). */
    public synchronized void release(MemorySegment buffer) {
        long rel = buffer.address() - region.address();
        if (slices.length == 0 || rel < 0 || rel % bufferSize != 0 || rel / bufferSize >= slices.length) {
            throw new IllegalArgumentException("buffer at 0x" + Long.toHexString(buffer.address())
                    + " does not belong to this pool");
        }
        int i = (int) (rel / bufferSize);
        if (!inUse[i]) {
            throw new IllegalStateException("buffer " + i + " of the pool released twice");
        }
        inUse[i] = false;
        free[freeCount++] = i;
    }

    /** True when {@code segment} lies entirely inside this pool's region. */
    public boolean contains(MemorySegment segment) {
        long rel = segment.address() - region.address();
        return slices.length > 0 && rel >= 0 && rel + segment.byteSize() <= region.byteSize();
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "AlignedBufferPool[" + slices.length + " x " + bufferSize + " B, aligned " + alignment + "]";
    }
}
