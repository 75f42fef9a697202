package io.fdpblock.core;

/**
 * Deletes of committed keys, made the one way the store makes them: under the core's lock each key's
 * entry leaves the index, its salt's count drops and its delete is logged; then, without the lock, the
 * freed slots are released together, without waiting for those records to be durable
 * ({@link SlotReleaser#releaseDeleted} says why that is safe; deallocated first where the device takes
 * it, contiguous slots as one range). A slot still being loaded is released when its
 * last load ends instead. Used by {@link #delete} (a store's deletes) and by group eviction
 * ({@link SlotGroups}).
 */
final class Deletions {
    private final StoreParts store;
    private final int[] freed;
    private int count;

    /** @param capacity the most slots this batch frees */
    Deletions(StoreParts store, int capacity) {
        this.store = store;
        this.freed = new int[capacity];
    }

    /**
     * Removes keys ({@link RawBlockCore#deleteWithOutcome}): a locked key is kept unless {@code force}; a
     * key whose write is in flight is cancelled.
     */
    static DeleteOutcome[] delete(StoreParts store, KeyBatch keys, boolean force) {
        DeleteOutcome[] out = new DeleteOutcome[keys.size()];
        Deletions deletions = new Deletions(store, keys.size());
        store.lock().lock();
        try {
            store.gate().checkOpenLocked();
            for (int i = 0; i < out.length; i++) {
                StoreKey storeKey = keys.key(i);
                StoreIndex.Found f = store.index().get(storeKey);
                int slot = f == null ? StoreIndex.MISSING : deletions.remove(storeKey, f, force);
                if (slot == StoreIndex.LOCKED) {
                    out[i] = DeleteOutcome.LOCKED;
                } else if (slot == StoreIndex.MISSING) {
                    out[i] = store.inflight().cancelWrite(storeKey.text()) != null ? DeleteOutcome.CANCELLED
                            : DeleteOutcome.MISSING;
                } else {
                    out[i] = DeleteOutcome.REMOVED;
                }
            }
            deletions.endLocked();
        } finally {
            store.lock().unlock();
        }
        deletions.release();
        return out;
    }

    /**
     * Under the core's lock: removes {@code key}, committed as {@code found}, unless it is locked and not
     * {@code force}d.
     *
     * @return its slot, or {@link StoreIndex#LOCKED} (kept) / {@link StoreIndex#MISSING}
     */
    int remove(StoreKey key, StoreIndex.Found found, boolean force) {
        int slot = store.index().remove(key, force);
        if (slot >= 0) {
            store.salts().removed(found.saltId());
            store.meta().deleted(key, slot);
            if (store.inflight().freeSlot(slot)) { // else released when the last load of it ends
                freed[count++] = slot;
            }
        }
        return slot;
    }

    /** Under the core's lock: a slot no key holds, released with the others (the free slots of an evicted group). */
    void addFree(int slot) {
        freed[count++] = slot;
    }

    /**
     * Under the core's lock, after the last change: the release is an operation in flight that close waits
     * for, and its slots are coming (a put that finds no slot from now on waits for them).
     */
    void endLocked() {
        if (count > 0) {
            store.ops().add(1);
            store.releaser().expect(count);
        }
    }

    /**
     * Without the core's lock: releases the freed slots, without waiting for the deletes' durability
     * ({@link SlotReleaser#releaseDeleted}).
     */
    void release() {
        if (count > 0) {
            store.releaser().releaseExpected(freed, count);
        }
    }
}
