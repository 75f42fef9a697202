package io.fdpblock.core;

import io.fdpblock.device.IoBatch;
import io.fdpblock.l2.ReclaimUnitGroups;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The store's slot groups as an eviction policy sees them (FDP: a reclaim unit's worth of consecutive
 * slots that one placement id fills, {@link SlotAllocator}): which group holds a key, which groups hold
 * data, and the eviction of a whole group: its keys deleted as a delete deletes them ({@link Deletions}:
 * logged, and released at once, without waiting for the records to be durable) and its whole range
 * deallocated as one range before its slots are reused. Without a reclaim unit size there are no groups.
 * Thread-safe; the store's lock is never held across I/O.
 */
public final class SlotGroups {
    private final StoreParts store;
    private final SlotLayout layout;

    SlotGroups(StoreParts store) {
        this.store = store;
        this.layout = store.layout();
    }

    /** Slots per group; 1 when the store does not group. */
    public int slotsPerGroup() {
        return store.slots().groupSlots();
    }

    /** Bytes of a group; 0 when the store does not group. */
    public long groupBytes() {
        return store.slots().groupCount() == 0 ? 0 : store.slots().groupSlots() * layout.slotBytes();
    }

    /** Groups the data area has (0 when the store does not group). */
    public int groupCount() {
        return store.slots().groupCount();
    }

    /** Per key, the group of its slot; -1 for keys not committed or outside every group. */
    public int[] groupsOf(List<String> keys) {
        return groupsOf(KeyBatch.of(keys));
    }

    /** Like {@link #groupsOf(List)}, with the keys' hashes when the batch carries them. */
    public int[] groupsOf(KeyBatch keys) {
        int[] out = new int[keys.size()];
        int g = store.slots().groupSlots();
        int grouped = store.slots().groupCount() * g;
        store.lock().lock();
        try {
            for (int i = 0; i < out.length; i++) {
                StoreIndex.Found f = store.index().get(keys.key(i));
                out[i] = f == null || f.slot() >= grouped ? -1 : f.slot() / g;
            }
        } finally {
            store.lock().unlock();
        }
        return out;
    }

    /** The groups holding data (slots in use or being written), in index order. */
    public List<ReclaimUnitGroups.Group> groups() {
        List<ReclaimUnitGroups.Group> out = new ArrayList<>();
        SlotAllocator slots = store.slots();
        store.lock().lock();
        try {
            for (int gi = 0; gi < slots.groupCount(); gi++) {
                int used = slots.groupUsed(gi);
                if (used > 0) {
                    out.add(new ReclaimUnitGroups.Group(gi, layout.slotOffset(gi * slots.groupSlots()), groupBytes(),
                            used, used * layout.slotBytes(), slots.groupOwner(gi), slots.groupOpened(gi),
                            slots.isOpen(gi)));
                }
            }
        } finally {
            store.lock().unlock();
        }
        return out;
    }

    /** What {@link #evict} did: the outcome, and the keys deleted when the group was evicted. */
    public record Eviction(ReclaimUnitGroups.Outcome outcome, List<String> removed, long offset, long bytes) {
        static Eviction not(ReclaimUnitGroups.Outcome outcome) {
            return new Eviction(outcome, List.of(), 0, 0);
        }
    }

    /**
     * Evicts group {@code group} whole (see {@link ReclaimUnitGroups#evictGroup}), all or nothing. The keys
     * of its used slots come from the index where it keeps them (lmcache_v1) or from the slot headers
     * (fdpblock_v2 keeps no key in memory: one batched read, outside the lock); then, under the lock, each
     * must still own its slot, be unlocked and have no load in flight, or nothing is changed. Free slots
     * inside the group are taken out of circulation too, so that the deallocation covers the group's whole
     * range as one contiguous range and nothing new lands there before it completes.
     *
     * @throws IOException when the slot headers cannot be read (nothing is changed)
     */
    public Eviction evict(int group) throws IOException {
        SlotAllocator slots = store.slots();
        if (group < 0 || group >= slots.groupCount()) {
            throw new IllegalArgumentException("slot group " + group + " does not exist: " + store.config().devicePath()
                    + " has " + slots.groupCount() + " groups" + (slots.groupCount() == 0
                    ? "; it groups slots only with FDP and a known reclaim unit size"
                    : " (0.." + (slots.groupCount() - 1) + ")"));
        }
        int g = slots.groupSlots();
        int first = group * g;
        String[] keys = new String[g];
        int[] toRead = null;
        Pending done;
        store.lock().lock();
        try {
            store.gate().checkOpenLocked();
            Eviction early = precheckLocked(group, first, g);
            if (early != null) {
                return early;
            }
            if (store.index().keepsKeys()) {
                for (int s = first; s < first + g; s++) {
                    keys[s - first] = store.index().keyAt(s);
                }
                done = evictLocked(group, first, keys);
            } else {
                toRead = usedSlots(first, g);
                store.ops().add(1); // the header read: close waits for it
                done = null;
            }
        } finally {
            store.lock().unlock();
        }
        if (done == null) {
            try {
                readKeys(first, toRead, keys);
            } finally {
                store.ops().done(1);
            }
            store.lock().lock();
            try {
                store.gate().checkOpenLocked();
                Eviction early = precheckLocked(group, first, g);
                done = early != null ? new Pending(early, null) : evictLocked(group, first, keys);
            } finally {
                store.lock().unlock();
            }
        }
        if (done.deletions() != null) {
            done.deletions().release(); // one deallocation, then reuse
        }
        return done.eviction();
    }

    /** An outcome, and the deletes whose slots are to be released once the lock is let go. */
    private record Pending(Eviction eviction, Deletions deletions) {}

    /** Under the lock: the outcome when the group cannot be evicted whatever its keys are, else null. */
    private Eviction precheckLocked(int group, int first, int g) {
        SlotAllocator slots = store.slots();
        if (slots.groupUsed(group) == 0) {
            return Eviction.not(ReclaimUnitGroups.Outcome.EMPTY);
        }
        if (slots.isOpen(group)) {
            return Eviction.not(ReclaimUnitGroups.Outcome.OPEN);
        }
        for (int s = first; s < first + g; s++) {
            if (slots.state(s) == SlotAllocator.RESERVED) {
                return Eviction.not(ReclaimUnitGroups.Outcome.BUSY); // a write in flight, or a release not yet done
            }
        }
        return null;
    }

    private int[] usedSlots(int first, int g) {
        int n = 0;
        int[] used = new int[g];
        for (int s = first; s < first + g; s++) {
            if (store.slots().state(s) == SlotAllocator.USED) {
                used[n++] = s;
            }
        }
        return Arrays.copyOf(used, n);
    }

    /** Reads the slot headers of {@code slots} in one batch; each names its key ({@code keys[slot - first]}). */
    private void readKeys(int first, int[] slots, String[] keys) throws IOException {
        if (slots.length == 0) {
            return;
        }
        int headerBytes = layout.headerBytes();
        long align = Math.max(store.config().blockAlign(), store.device().bufferAlignment());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment headers = arena.allocate((long) slots.length * headerBytes, align);
            IoBatch batch = new IoBatch(slots.length);
            for (int i = 0; i < slots.length; i++) {
                batch.read(layout.slotOffset(slots[i]), headers.asSlice((long) i * headerBytes, headerBytes));
            }
            store.device().execute(batch);
            for (int i = 0; i < slots.length; i++) {
                keys[slots[i] - first] = OnDiskFormat.readSlotHeader(
                        headers.asSlice((long) i * headerBytes, headerBytes)).key();
            }
        }
    }

    /**
     * Under the lock, after {@link #precheckLocked}: deletes every key of the group, or nothing when one
     * of its used slots has no key known to own it (written or deleted since the keys were read, or a
     * header naming none), a load in flight, or a locked key.
     */
    private Pending evictLocked(int group, int first, String[] keys) {
        SlotAllocator slots = store.slots();
        int g = keys.length;
        StoreIndex.Found[] found = new StoreIndex.Found[g];
        StoreKey[] storeKeys = new StoreKey[g];
        for (int i = 0; i < g; i++) {
            int s = first + i;
            if (slots.state(s) != SlotAllocator.USED) {
                continue;
            }
            StoreKey key = keys[i] == null ? null : new StoreKey(keys[i]);
            storeKeys[i] = key;
            StoreIndex.Found f = key == null ? null : store.index().get(key);
            if (f == null || f.slot() != s || store.inflight().isRead(s)) {
                return new Pending(Eviction.not(ReclaimUnitGroups.Outcome.BUSY), null); // changed, loaded, or going
            }
            if (store.index().lockCount(key) > 0) {
                return new Pending(Eviction.not(ReclaimUnitGroups.Outcome.LOCKED), null);
            }
            found[i] = f;
        }
        Deletions deletions = new Deletions(store, g);
        List<String> removed = new ArrayList<>(g);
        for (int i = 0; i < g; i++) {
            int s = first + i;
            if (found[i] != null) {
                deletions.remove(storeKeys[i], found[i], false); // unlocked, unread: freed with the group's
                removed.add(keys[i]);
            } else if (slots.claimFree(s)) {
                deletions.addFree(s);
            }
        }
        slots.groupComing(group); // puts wait for it rather than spill out of their own groups
        deletions.endLocked();
        return new Pending(new Eviction(ReclaimUnitGroups.Outcome.EVICTED, removed, layout.slotOffset(first),
                g * layout.slotBytes()), deletions);
    }
}
