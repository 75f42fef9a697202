package io.fdpblock.core;

import io.fdpblock.device.AlignedBufferPool;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Slot header buffers for puts and loads: from the store's pool, registered with the device where it
 * could be (fixed-buffer I/O), else new automatic ones when the pool is empty. The pool's owner is the
 * store: close unregisters and frees it.
 */
final class HeaderBuffers {
    private final AlignedBufferPool pool;
    private final int headerBytes;
    private final int align;

    HeaderBuffers(AlignedBufferPool pool, int headerBytes, int align) {
        this.pool = pool;
        this.headerBytes = headerBytes;
        this.align = align;
    }

    /** A buffer of one slot header: the pool's, else a new one. */
    MemorySegment acquire() {
        MemorySegment h = pool.tryAcquire();
        return h != null ? h : Arena.ofAuto().allocate(headerBytes, align);
    }

    /** Gives a buffer back; one not from the pool (or null) is left to the garbage collector. */
    void release(MemorySegment header) {
        if (header != null && pool.contains(header)) {
            pool.release(header);
        }
    }

    AlignedBufferPool pool() {
        return pool;
    }
}
