package io.fdpblock.core;

/**
 * Deletes of committed keys, made the one way the store makes them: under the core's lock each key's
 * entry leaves the index, its salt's count drops and its delete is logged; then, without the lock, the
 * freed slots are released together, without waiting for those records to be durable
 * ({@link SlotReleaser#releaseDeleted} says why that is safe; deallocated first where the device takes
 * it, contiguous slots as one range). A slot still being loaded is released when its
 * last load ends instead. Used by {@link RawBlockCore#deleteWithOutcome} and by group eviction
 * ({@link SlotGroups}).
 */
final class Deletions {
    private final RawBlockCore core;
    private final int[] freed;
    private int count;

    /** @param capacity the most slots this batch frees */
    Deletions(RawBlockCore core, int capacity) {
        this.core = core;
        this.freed = new int[capacity];
    }

    /**
     * Under the core's lock: removes {@code key}, committed as {@code found}, unless it is locked and not
     * {@code force}d.
     *
     * @return its slot, or {@link StoreIndex#LOCKED} (kept) / {@link StoreIndex#MISSING}
     */
    int remove(StoreKey key, StoreIndex.Found found, boolean force) {
        int slot = core.index.remove(key, force);
        if (slot >= 0) {
            core.salts.removed(found.saltId());
            core.meta.deleted(key, slot);
            if (core.inflight.freeSlot(slot)) { // else released when the last load of it ends
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
            core.ops.add(1);
            core.releaser.expect(count);
        }
    }

    /** Without the core's lock: releases the freed slots, without waiting for the deletes' durability ({@link SlotReleaser#releaseDeleted}). */
    void release() {
        if (count > 0) {
            core.releaser.releaseExpected(freed, count);
        }
    }
}
