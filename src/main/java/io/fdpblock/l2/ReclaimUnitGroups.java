package io.fdpblock.l2;

import java.util.List;

/**
 * An optional capability of an adapter that lays its storage out in reclaim-unit groups (NVMe FDP):
 * consecutive slots, a reclaim unit's worth, that one placement id fills together. Evicting such a group
 * whole lets the device erase its reclaim unit without copying anything, where key-by-key eviction
 * scatters invalid data over many units. An eviction policy finds it with {@code instanceof
 * ReclaimUnitGroups} (docs/contract.md section 7); adapters that do not group do not implement it.
 */
public interface ReclaimUnitGroups {
    /** Bytes of one group; 0 when this adapter does not group its storage (no reclaim unit size known). */
    long groupBytes();

    /** Per key, the group that holds it now; -1 for a key not held, or held outside every group. */
    int[] groupsOf(List<ObjectKey> keys);

    /** The groups that hold data, in index order. */
    List<Group> groups();

    /**
     * Evicts group {@code group} whole, unless one of its keys is locked ({@link Outcome#LOCKED}), a write
     * into it or a load from it is in flight, or slots deleted from it are not yet back ({@link Outcome#BUSY}),
     * a placement id is still filling it ({@link Outcome#OPEN}) or it holds nothing ({@link Outcome#EMPTY});
     * then nothing is changed. Evicted:
     * every key in it is deleted and announced to the listeners ({@code onKeysDeleted}), and the device is
     * told that the group's whole range is dead in one deallocation, before its slots are reused.
     *
     * @throws IllegalArgumentException for a group index outside {@code 0 .. capacity / groupBytes - 1}
     * @throws IllegalStateException after close
     * @throws java.io.UncheckedIOException when the adapter must read which keys the group holds and cannot
     *         (nothing is evicted then)
     */
    Eviction evictGroup(int group);

    /**
     * One group.
     *
     * @param index its number: it covers the adapter's bytes {@code offset .. offset + bytes}
     * @param usedSlots slots holding keys or writes in flight
     * @param usedBytes what those slots are charged in {@code usage()}: about what evicting the group frees
     * @param placementId the placement id it was last opened for; -1 when unknown (e.g. recovered)
     * @param opened when it was last opened for a placement id: a count of group openings, larger = newer;
     *        0 when unknown (e.g. recovered at open)
     * @param open a placement id is still filling it
     */
    record Group(int index, long offset, long bytes, int usedSlots, long usedBytes, int placementId, long opened,
            boolean open) {}

    /** What {@link #evictGroup} did. */
    enum Outcome {
        EVICTED, LOCKED, BUSY, OPEN, EMPTY
    }

    /**
     * @param deleted the keys deleted (only when {@link Outcome#EVICTED})
     * @param freedBytes the usage ({@code usage()}) those keys were charged
     * @param offset the range deallocated (the group's), when evicted
     */
    record Eviction(int group, Outcome outcome, List<ObjectKey> deleted, long freedBytes, long offset, long bytes) {
        public Eviction {
            deleted = List.copyOf(deleted);
        }
    }
}
