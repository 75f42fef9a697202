package io.fdpblock.core;

import io.fdpblock.util.Segments;

import java.lang.foreign.MemorySegment;

/**
 * One key to load into a caller-owned buffer of at least the stored size. Read straight into it when
 * its address is aligned to {@code block_align} and it has room for the size rounded up to
 * {@code block_align}; otherwise through an aligned bounce buffer.
 *
 * @param storeKey the key, with its hash when the caller keeps it ({@link StoreKey})
 * @param destination where its payload goes
 */
public record LoadRequest(StoreKey storeKey, MemorySegment destination) {

    /**
     * @throws IllegalArgumentException for a destination the load could not fill: read-only, of a closed
     *         arena, or confined to one thread (the I/O thread that completes the load checks and copies the
     *         bytes there; the kernel would have written them into it and the load reported a miss)
     */
    public LoadRequest {
        if (storeKey == null || storeKey.text() == null || destination == null) {
            throw new IllegalArgumentException("load: key and destination are required");
        }
        String key = storeKey.text();
        String problem = destination.isReadOnly() ? "is read-only"
                : !destination.scope().isAlive() ? "belongs to an arena that is closed"
                : Segments.isConfined(destination) ? "is confined to one thread (Arena.ofConfined()),"
                        + " and the I/O thread that completes the load cannot touch it"
                : null;
        if (problem != null) {
            throw new IllegalArgumentException("load " + key + ": the destination (" + destination.byteSize()
                    + " bytes) " + problem + "; a load's destination must be writable from any thread: allocate it"
                    + " from a shared, global or automatic arena (e.g. IoMemory.allocate(Arena.ofShared(), size));"
                    + " nothing was loaded");
        }
    }

    /** @param key the encoded key, whose hash the store computes when it needs it */
    public LoadRequest(String key, MemorySegment destination) {
        this(key == null ? null : new StoreKey(key), destination);
    }

    /** The encoded key. */
    public String key() {
        return storeKey.text();
    }
}
