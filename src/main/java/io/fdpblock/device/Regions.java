package io.fdpblock.device;

import java.lang.foreign.MemorySegment;

/**
 * The table of registered buffer slots an io_uring device keeps the same on every one of its rings:
 * {@code [base, end)} per slot, end 0 for an empty slot. A table is never changed once published; a
 * registration makes a new one with a higher {@link #generation}, which each ring applies on its own
 * thread ({@link RingDriver#syncRegions}), so readers need no lock.
 */
record Regions(long generation, long[] base, long[] end) {
    /** Registered buffer slots per ring. */
    static final int SLOTS = 64;
    /** The kernel caps one registered buffer at 1 GiB: larger regions take several slots. */
    static final long MAX_SLOT_BYTES = 1L << 30;
    /** No slot used. */
    static final Regions EMPTY = new Regions(0, new long[SLOTS], new long[SLOTS]);

    /** {@code region} added in free slots (1 GiB each), or null when too few are free. */
    Regions with(MemorySegment region) {
        long chunks = (region.byteSize() + MAX_SLOT_BYTES - 1) / MAX_SLOT_BYTES;
        int free = 0;
        for (int i = 0; i < SLOTS; i++) {
            free += end[i] == 0 ? 1 : 0;
        }
        if (chunks > free) {
            return null;
        }
        long[] b = base.clone();
        long[] e = end.clone();
        int slot = 0;
        for (long off = 0; off < region.byteSize(); off += MAX_SLOT_BYTES) {
            while (e[slot] != 0) {
                slot++;
            }
            b[slot] = region.address() + off;
            e[slot] = region.address() + Math.min(region.byteSize(), off + MAX_SLOT_BYTES);
        }
        return new Regions(generation + 1, b, e);
    }

    /** Every slot inside {@code region} emptied. */
    Regions without(MemorySegment region) {
        long a = region.address();
        long z = a + region.byteSize();
        long[] b = base.clone();
        long[] e = end.clone();
        for (int i = 0; i < SLOTS; i++) {
            if (e[i] != 0 && b[i] >= a && e[i] <= z) {
                b[i] = 0;
                e[i] = 0;
            }
        }
        return new Regions(generation + 1, b, e);
    }
}
