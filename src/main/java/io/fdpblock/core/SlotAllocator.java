package io.fdpblock.core;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Slots of the data area: O(1) allocate and free. Never-used slots come from a high-water mark
 * ({@code nextSlot}); freed slots go to a stack. With placement affinity, a freed slot remembers the
 * placement id it held and is handed to that id first. With groups (FDP: the slots of one reclaim
 * unit), a placement id takes fresh slots from a group of its own, so one reclaim unit's worth of
 * LBAs holds one lifetime of data. Not thread-safe: the core calls it under its lock.
 */
final class SlotAllocator {
    static final byte FREE = 0;
    static final byte RESERVED = 1;
    static final byte USED = 2;

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
    }

    int maxSlots() {
        return maxSlots;
    }

    int nextSlot() {
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

    /** @return a reserved slot, or -1 when the device is full */
    int allocate(int placementId) {
        int slot = -1;
        if (affinity && placementId != 0) {
            IntStack own = byPlacement.get(placementId);
            if (own != null && !own.isEmpty()) {
                slot = own.pop();
                affinityHits++;
            } else {
                affinityFallbacks++;
            }
        }
        if (slot < 0 && groupSlots > 1 && placementId != 0) {
            slot = fromOwnGroup(placementId);
        }
        if (slot < 0 && !shared.isEmpty()) {
            slot = shared.pop();
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
                if (!s.isEmpty()) {
                    slot = s.pop();
                    break;
                }
            }
        }
        if (slot < 0) {
            return -1;
        }
        state[slot] = RESERVED;
        freeCount--;
        if (affinity) {
            lastPlacement[slot] = (char) placementId;
        }
        return slot;
    }

    /** A fresh slot of the placement id's open group, opening a new group at the high-water mark when needed. */
    private int fromOwnGroup(int placementId) {
        int[] g = openGroups.get(placementId);
        if (g == null || g[0] == g[1]) {
            int start = (nextSlot + groupSlots - 1) / groupSlots * groupSlots; // groups start on a boundary
            if (start + groupSlots > maxSlots) {
                return -1;
            }
            for (int k = nextSlot; k < start; k++) { // slots skipped to reach the boundary stay usable
                shared.push(k);
            }
            freeCount += start + groupSlots - nextSlot; // the whole group is free until handed out
            nextSlot = start + groupSlots;
            g = new int[] {start, start + groupSlots};
            openGroups.put(placementId, g);
        }
        return g[0]++;
    }

    /** The placement group a slot was last taken for (0 without affinity, or for none). */
    int groupOf(int slot) {
        return affinity ? lastPlacement[slot] : 0;
    }

    int groupSlots() {
        return groupSlots;
    }

    void markUsed(int slot) {
        state[slot] = USED;
    }

    void free(int slot) {
        if (state[slot] == FREE) {
            throw new IllegalStateException("slot " + slot + " freed twice");
        }
        state[slot] = FREE;
        freeCount++;
        int pid = affinity ? lastPlacement[slot] : 0;
        if (pid != 0) {
            byPlacement.computeIfAbsent(pid, k -> new IntStack()).push(slot);
        } else {
            shared.push(slot);
        }
    }

    /**
     * Rebuilds from recovered state: {@code used[k]} marks slots holding entries; every other slot below
     * {@code nextSlot} is free.
     */
    void rebuild(int recoveredNextSlot, boolean[] used, char[] placements) {
        Arrays.fill(state, FREE);
        shared = new IntStack();
        byPlacement.clear();
        openGroups.clear();
        nextSlot = Math.min(recoveredNextSlot, maxSlots);
        freeCount = 0;
        for (int k = nextSlot - 1; k >= 0; k--) {
            if (used[k]) {
                state[k] = USED;
                if (affinity && placements != null) {
                    lastPlacement[k] = placements[k];
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
    }
}
