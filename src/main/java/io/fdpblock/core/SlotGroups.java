package io.fdpblock.core;

import io.fdpblock.l2.ReclaimUnitGroups;

import java.util.ArrayList;
import java.util.List;

/**
 * The store's slot groups as an eviction policy sees them (FDP: a reclaim unit's worth of consecutive
 * slots that one placement id fills, {@link SlotAllocator}): which group holds a key, which groups hold
 * data, and the eviction of a whole group: its keys deleted and its whole range deallocated in one
 * deallocation before its slots are reused. Without a reclaim unit size there are no groups. Thread-safe
 * (under the core's lock, never across I/O).
 */
public final class SlotGroups {
    private final RawBlockCore core;

    SlotGroups(RawBlockCore core) {
        this.core = core;
    }

    /** Slots per group; 1 when the store does not group. */
    public int slotsPerGroup() {
        return core.slots.groupSlots();
    }

    /** Bytes of a group; 0 when the store does not group. */
    public long groupBytes() {
        return core.slots.groupCount() == 0 ? 0 : core.slots.groupSlots() * core.slotBytes;
    }

    /** Groups the data area has (0 when the store does not group). */
    public int groupCount() {
        return core.slots.groupCount();
    }

    /** Per key, the group of its slot; -1 for keys not committed or outside every group. */
    public int[] groupsOf(List<String> keys) {
        int[] out = new int[keys.size()];
        int g = core.slots.groupSlots();
        int grouped = core.slots.groupCount() * g;
        core.lock.lock();
        try {
            for (int i = 0; i < out.length; i++) {
                KeyIndex.Entry e = core.index.get(keys.get(i));
                out[i] = e == null || e.slot >= grouped ? -1 : e.slot / g;
            }
        } finally {
            core.lock.unlock();
        }
        return out;
    }

    /** The groups holding data (slots in use or being written), in index order. */
    public List<ReclaimUnitGroups.Group> groups() {
        List<ReclaimUnitGroups.Group> out = new ArrayList<>();
        SlotAllocator slots = core.slots;
        core.lock.lock();
        try {
            for (int gi = 0; gi < slots.groupCount(); gi++) {
                int used = slots.groupUsed(gi);
                if (used > 0) {
                    out.add(new ReclaimUnitGroups.Group(gi, core.slotOffset(gi * slots.groupSlots()), groupBytes(), used,
                            used * core.slotBytes, slots.groupOwner(gi), slots.groupOpened(gi), slots.isOpen(gi)));
                }
            }
        } finally {
            core.lock.unlock();
        }
        return out;
    }

    /** What {@link #evict} did: the outcome, and the keys deleted when the group was evicted. */
    public record Eviction(ReclaimUnitGroups.Outcome outcome, List<String> removed, long offset, long bytes) {}

    /**
     * Evicts group {@code group} whole (see {@link ReclaimUnitGroups#evictGroup}); all or nothing under the
     * store's lock. Free slots inside it are taken out of circulation too, so that the deallocation covers
     * the group's whole range as one contiguous range and nothing new lands there before it completes.
     */
    public Eviction evict(int group) {
        SlotAllocator slots = core.slots;
        if (group < 0 || group >= slots.groupCount()) {
            throw new IllegalArgumentException("slot group " + group + " does not exist: " + core.config.devicePath()
                    + " has " + slots.groupCount() + " groups (0.." + (slots.groupCount() - 1) + ")"
                    + (slots.groupCount() == 0 ? "; it groups slots only with FDP and a known reclaim unit size" : ""));
        }
        int g = slots.groupSlots();
        int first = group * g;
        int[] freed = new int[g];
        int nFreed = 0;
        List<String> removed = new ArrayList<>(g);
        core.lock.lock();
        try {
            core.checkOpenLocked();
            if (slots.groupUsed(group) == 0) {
                return new Eviction(ReclaimUnitGroups.Outcome.EMPTY, List.of(), 0, 0);
            }
            if (slots.isOpen(group)) {
                return new Eviction(ReclaimUnitGroups.Outcome.OPEN, List.of(), 0, 0);
            }
            ReclaimUnitGroups.Outcome blocked = null;
            for (int s = first; s < first + g && blocked == null; s++) {
                byte state = slots.state(s);
                if (state == SlotAllocator.RESERVED) {
                    blocked = ReclaimUnitGroups.Outcome.BUSY; // a write in flight, or a release not yet done
                } else if (state == SlotAllocator.USED) {
                    String key = core.index.keyAt(s);
                    KeyIndex.Entry e = key == null ? null : core.index.get(key);
                    if (e == null || e.readers > 0) {
                        blocked = ReclaimUnitGroups.Outcome.BUSY; // being loaded, or deleted while loaded
                    } else if (e.locks > 0) {
                        blocked = ReclaimUnitGroups.Outcome.LOCKED;
                    }
                }
            }
            if (blocked != null) {
                return new Eviction(blocked, List.of(), 0, 0);
            }
            for (int s = first; s < first + g; s++) {
                if (slots.state(s) == SlotAllocator.USED) {
                    String key = core.index.keyAt(s);
                    int[] n = {nFreed};
                    core.index.delete(key, false, slot -> freed[n[0]++] = slot);
                    nFreed = n[0];
                    removed.add(key);
                    core.markDirtyLocked();
                } else if (slots.claimFree(s)) {
                    freed[nFreed++] = s;
                }
            }
        } finally {
            core.lock.unlock();
        }
        core.releaser.release(freed, nFreed);
        return new Eviction(ReclaimUnitGroups.Outcome.EVICTED, removed, core.slotOffset(first), g * core.slotBytes);
    }
}
