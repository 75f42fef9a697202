package io.fdpblock.core;

import io.fdpblock.l2.ObjectMeta;

/**
 * The store's committed keys: per key its slot, payload size, payload CRC32C and lock count. Each
 * {@link StoreFormat} brings its own: LMCache's v1 keeps the keys themselves (its checkpoints are lists
 * of keys), fdpblock_v2 a fixed-size off-heap entry per key, keyed by a 128-bit hash, with no key and
 * no Java object per entry (for tens of millions of keys). Not thread-safe: the core calls it under
 * its lock.
 */
public interface StoreIndex extends AutoCloseable {
    /** What the index holds for a key (a copy: the index may reuse its storage). */
    record Found(int slot, int size, int crc, boolean hasCrc, ObjectMeta meta, int saltId) {}

    /** @return the entry, or null when the key is not committed */
    Found get(StoreKey key);

    boolean contains(StoreKey key);

    /** Commits (or replaces) {@code key}; the lock count of a new key is 0. */
    void put(StoreKey key, int slot, int size, int crc, boolean hasCrc, ObjectMeta meta, int saltId);

    /** @return per key: committed; with {@code lockHits}, each hit's lock count goes up by one */
    boolean[] lookup(KeyBatch keys, boolean lockHits);

    /** Lock count -1 per key, never below zero; unknown keys are ignored. */
    void unlock(KeyBatch keys);

    /** The lock count of a key (0 when unknown). */
    int lockCount(StoreKey key);

    /** {@link #remove} result: the key is locked and was kept. */
    int LOCKED = -2;
    /** {@link #remove} result: the key is not committed. */
    int MISSING = -1;

    /**
     * Removes {@code key} unless it is locked and not {@code force}d.
     *
     * @return its slot, or {@link #LOCKED} / {@link #MISSING}
     */
    int remove(StoreKey key, boolean force);

    /** The payload CRC32C of {@code key} became known (its slot header was read). */
    void setCrc(StoreKey key, int crc);

    int size();

    int lockedCount();

    /** Bytes the index uses (heap or off-heap), for status and the scale benchmark; an estimate for the heap one. */
    long memoryBytes();

    /** Of {@link #memoryBytes()}, the bytes allocated off the heap (exact for an off-heap table). */
    default long offHeapBytes() {
        return 0;
    }

    /** Whether the index keeps the keys themselves ({@link #keyAt} answers without reading a slot header). */
    default boolean keepsKeys() {
        return false;
    }

    /** The key in {@code slot}, or null (always null when the index does not {@linkplain #keepsKeys keep keys}). */
    default String keyAt(int slot) {
        return null;
    }

    @Override
    void close();
}
