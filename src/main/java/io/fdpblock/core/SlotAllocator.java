package io.fdpblock.core;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Slots of the data area: O(1) allocate and free. Never-used slots come from a high-water mark
 * ({@code nextSlot}); freed slots go to a stack. With placement affinity, a freed slot remembers the
 * placement id it held and is handed to that id first. With groups (FDP: the slots of one reclaim
 * unit), a placement id takes fresh slots from a group of its own, so one reclaim unit's worth of
 * LBAs holds one lifetime of data; a group whose every slot is free again (e.g. evicted whole,
 * {@link SlotGroups}) goes back as a whole group, opened for the next placement id that needs one,
 * rather than slot by slot to the free stack. Not thread-safe: the core calls it under its lock.
 */
public final class SlotAllocator {
    static final byte FREE = 0;
    static final byte RESERVED = 1;
    static final byte USED = 2;
    /**
     * Free, but held whole: the unhanded slots of a placement id's open group, or of a group that is free
     * as a whole. Never taken from the free stacks (they may still list it: entries there are checked).
     */
    static final byte HELD = 3;

    private final int maxSlots;
    private final boolean affinity;
    /** Slots per group (1 = no grouping). */
    private final int groupSlots;
    /** Per placement id: its open group's next fresh slot and end. */
    private final Map<Integer, int[]> openGroups = new HashMap<>();
    private final byte[] state;
    /** Placement id a slot was last written with (affinity only). */
    private final char[] lastPlacement;
    private int nextSlot;
    private IntStack shared = new IntStack();
    private final Map<Integer, IntStack> byPlacement = new HashMap<>();
    private int freeCount;
    /** Whole groups (slot k is in group k / groupSlots; a trailing partial group is none). */
    private final int groupCount;
    /** Per group: slots reserved or in use. */
    private final int[] groupUsed;
    /** Per group: when it was last opened for a placement id (a count of openings; 0 = never, e.g. recovered). */
    private final long[] groupOpened;
    /** Per group: the placement id it was last opened for (-1 = none). */
    private final int[] groupOwner;
    private long openings;
    /** Groups free as a whole (their slots {@link #HELD}), reused before ungrouped slots. */
    private final IntStack freeGroups = new IntStack();
    /** Per group: evicted whole, its slots on their way back ({@link #groupComing}). */
    private final boolean[] comingBack;
    private int groupsComing;
    private long affinityHits;
    private long affinityFallbacks;

    SlotAllocator(int maxSlots, boolean affinity) {
        this(maxSlots, affinity, 1);
    }

    SlotAllocator(int maxSlots, boolean affinity, int groupSlots) {
        this.maxSlots = maxSlots;
        this.affinity = affinity;
        this.groupSlots = Math.max(1, groupSlots);
        this.state = new byte[maxSlots];
        this.lastPlacement = affinity ? new char[maxSlots] : new char[0];
        this.groupCount = this.groupSlots > 1 ? maxSlots / this.groupSlots : 0;
        this.groupUsed = new int[groupCount];
        this.groupOpened = new long[groupCount];
        this.groupOwner = new int[groupCount];
        this.comingBack = new boolean[groupCount];
        Arrays.fill(groupOwner, -1);
    }

    /** Slots the data area holds. */
    public int maxSlots() {
        return maxSlots;
    }

    /** The first slot never handed out. */
    public int nextSlot() {
        return nextSlot;
    }

    /** Slots in use or reserved. */
    int usedSlots() {
        return nextSlot - freeCount;
    }

    int freeSlots() {
        return maxSlots - usedSlots();
    }

    long affinityHits() {
        return affinityHits;
    }

    long affinityFallbacks() {
        return affinityFallbacks;
    }

    byte state(int slot) {
        return state[slot];
    }

    /**
     * @return a reserved slot, or -1 when the device is full, or when the placement id's own sources are
     *         empty while a group evicted whole is on its way back (the caller waits for the slots coming)
     */
    int allocate(int placementId) {
        int slot = -1;
        if (affinity && placementId != 0) {
            IntStack own = byPlacement.get(placementId);
            slot = own == null ? -1 : popFree(own);
            if (slot >= 0) {
                affinityHits++;
            } else {
                affinityFallbacks++;
            }
        }
        if (slot < 0 && groupSlots > 1) { // id 0 too: writes without a directive fill the default handle's units
            slot = fromOwnGroup(placementId);
        }
        if (slot < 0) {
            slot = popFree(shared);
        }
        if (slot < 0 && groupsComing > 0) {
            // a whole group is on its way back (its range is being deallocated, then its slots are free): wait for
            // it rather than put this id's data outside its own group (a slot past the last whole group, or
            // another id's group), which would leave its reclaim units straddling groups from then on
            return -1;
        }
        if (slot < 0 && nextSlot < maxSlots) {
            slot = nextSlot++;
            freeCount++; // counted as free below
        }
        if (slot < 0 && groupSlots > 1) { // full: take a fresh slot from any open group
            for (int[] g : openGroups.values()) {
                if (g[0] < g[1]) {
                    slot = g[0]++;
                    break;
                }
            }
        }
        if (slot < 0 && affinity) { // take a slot another placement id freed
            for (IntStack s : byPlacement.values()) {
                slot = popFree(s);
                if (slot >= 0) {
                    break;
                }
            }
        }
        if (slot < 0 && !freeGroups.isEmpty()) { // the last free slots are in whole free groups: break one up
            int g = freeGroups.pop();
            for (int k = (g + 1) * groupSlots - 1; k >= g * groupSlots; k--) {
                state[k] = FREE;
                shared.push(k);
            }
            slot = popFree(shared);
        }
        if (slot < 0) {
            return -1;
        }
        state[slot] = RESERVED;
        freeCount--;
        if (slot < groupCount * groupSlots) {
            groupUsed[slot / groupSlots]++;
        }
        if (affinity) {
            lastPlacement[slot] = (char) placementId;
        }
        return slot;
    }

    /**
     * A fresh slot of the placement id's open group, opening a new group when needed: at the high-water
     * mark while the device has never-used room, else a group that is free as a whole.
     */
    private int fromOwnGroup(int placementId) {
        int[] g = openGroups.get(placementId);
        if (g == null || g[0] == g[1]) {
            int start = (nextSlot + groupSlots - 1) / groupSlots * groupSlots; // groups start on a boundary
            if (start + groupSlots <= maxSlots) {
                for (int k = nextSlot; k < start; k++) { // slots skipped to reach the boundary stay usable
                    shared.push(k);
                }
                Arrays.fill(state, start, start + groupSlots, HELD);
                freeCount += start + groupSlots - nextSlot; // the whole group is free until handed out
                nextSlot = start + groupSlots;
            } else if (!freeGroups.isEmpty()) {
                start = freeGroups.pop() * groupSlots; // its slots are HELD and counted free already
            } else {
                return -1;
            }
            g = new int[] {start, start + groupSlots};
            openGroups.put(placementId, g);
            groupOwner[start / groupSlots] = placementId;
            groupOpened[start / groupSlots] = ++openings;
        }
        return g[0]++;
    }

    /** The top of {@code s} that is really free (entries of slots held or handed out since are dropped). */
    private int popFree(IntStack s) {
        while (!s.isEmpty()) {
            int slot = s.pop();
            if (state[slot] == FREE) {
                return slot;
            }
        }
        return -1;
    }

    /** Entries on the shared free stack, stale ones included (they are dropped when it outgrows the device). */
    int sharedStackEntries() {
        return shared.size();
    }

    // ---- groups, for SlotGroups ----

    int groupCount() {
        return groupCount;
    }

    int groupUsed(int group) {
        return groupUsed[group];
    }

    long groupOpened(int group) {
        return groupOpened[group];
    }

    int groupOwner(int group) {
        return groupOwner[group];
    }

    /** A placement id's open group that still has fresh slots to hand out. */
    boolean isOpen(int group) {
        for (int[] g : openGroups.values()) {
            if (g[0] < g[1] && g[1] == (group + 1) * groupSlots) {
                return true;
            }
        }
        return false;
    }

    /**
     * Group {@code group} was evicted whole and its slots (all reserved or in use) are being released:
     * until they are, an allocation that its own sources cannot serve waits rather than take a slot
     * outside its group.
     */
    void groupComing(int group) {
        if (!comingBack[group]) {
            comingBack[group] = true;
            groupsComing++;
        }
    }

    /** Groups evicted whole whose slots are not back yet. */
    int groupsComing() {
        return groupsComing;
    }

    /**
     * Takes a free slot out of circulation (reserved) so that it can be deallocated with the rest of its
     * group and then freed with it. @return false when the slot is not {@link #FREE}
     */
    boolean claimFree(int slot) {
        if (state[slot] != FREE) {
            return false;
        }
        state[slot] = RESERVED;
        freeCount--;
        if (slot < groupCount * groupSlots) {
            groupUsed[slot / groupSlots]++;
        }
        return true;
    }

    /** The placement group a slot was last taken for (0 without affinity, or for none). */
    public int groupOf(int slot) {
        return affinity ? lastPlacement[slot] : 0;
    }

    int groupSlots() {
        return groupSlots;
    }

    void markUsed(int slot) {
        state[slot] = USED;
    }

    void free(int slot) {
        freeAll(new int[] {slot}, 1);
    }

    /**
     * Frees {@code slots[0..count)}. A group they leave with no slot in use (and that is no placement
     * id's open group) becomes a whole free group; the other slots go to the free stacks.
     */
    void freeAll(int[] slots, int count) {
        for (int i = 0; i < count; i++) {
            int slot = slots[i];
            if (state[slot] == FREE || state[slot] == HELD) {
                throw new IllegalStateException("slot " + slot + " freed twice");
            }
            state[slot] = FREE;
            freeCount++;
            if (slot < groupCount * groupSlots) {
                int g = slot / groupSlots;
                groupUsed[g]--;
                if (comingBack[g]) { // its release frees it all at once
                    comingBack[g] = false;
                    groupsComing--;
                }
            }
        }
        for (int i = 0; i < count; i++) {
            int slot = slots[i];
            if (state[slot] != FREE) {
                continue; // its group became a whole free group below
            }
            int g = slot < groupCount * groupSlots ? slot / groupSlots : -1;
            if (g >= 0 && groupUsed[g] == 0 && (g + 1) * groupSlots <= nextSlot && !isOpen(g)) {
                Arrays.fill(state, g * groupSlots, (g + 1) * groupSlots, HELD);
                freeGroups.push(g);
                continue;
            }
            int pid = affinity ? lastPlacement[slot] : 0;
            IntStack to = pid != 0 ? byPlacement.computeIfAbsent(pid, k -> new IntStack()) : shared;
            to.push(slot);
            if (to.size() > 2 * maxSlots) { // entries of slots held or handed out since: drop them now and then
                to.retainFree(state, maxSlots);
            }
        }
    }

    /**
     * Rebuilds from recovered state: {@code used[k]} marks slots holding entries; every other slot below
     * {@code nextSlot} is free.
     */
    public void rebuild(int recoveredNextSlot, boolean[] used, char[] placements) {
        Arrays.fill(state, FREE);
        shared = new IntStack();
        byPlacement.clear();
        openGroups.clear();
        freeGroups.clear();
        Arrays.fill(comingBack, false);
        groupsComing = 0;
        Arrays.fill(groupUsed, 0);
        Arrays.fill(groupOpened, 0);
        Arrays.fill(groupOwner, -1);
        nextSlot = Math.min(recoveredNextSlot, maxSlots);
        freeCount = 0;
        for (int k = 0; k < nextSlot; k++) {
            if (used[k] && k < groupCount * groupSlots) {
                groupUsed[k / groupSlots]++;
            }
        }
        for (int k = nextSlot - 1; k >= 0; k--) {
            int g = k < groupCount * groupSlots ? k / groupSlots : -1;
            if (used[k]) {
                state[k] = USED;
                if (affinity && placements != null) {
                    lastPlacement[k] = placements[k];
                }
            } else if (g >= 0 && groupUsed[g] == 0 && (g + 1) * groupSlots <= nextSlot) {
                freeCount++;
                state[k] = HELD;
                if (k == g * groupSlots) {
                    freeGroups.push(g);
                }
            } else {
                freeCount++;
                shared.push(k);
            }
        }
    }

    /** A growable stack of ints. */
    static final class IntStack {
        private int[] items = new int[16];
        private int size;

        void push(int v) {
            if (size == items.length) {
                items = Arrays.copyOf(items, size * 2);
            }
            items[size++] = v;
        }

        int pop() {
            return items[--size];
        }

        boolean isEmpty() {
            return size == 0;
        }

        int size() {
            return size;
        }

        void clear() {
            size = 0;
        }

        /** Keeps one entry per slot that is {@link #FREE} in {@code state}, in order. */
        void retainFree(byte[] state, int maxSlots) {
            boolean[] seen = new boolean[maxSlots];
            int n = 0;
            for (int i = 0; i < size; i++) {
                int slot = items[i];
                if (state[slot] == FREE && !seen[slot]) {
                    seen[slot] = true;
                    items[n++] = slot;
                }
            }
            size = n;
        }
    }
}
