package io.fdpblock.core;

/**
 * Where an open store's slots lie on its device: the bytes it uses, where the data area starts, and the
 * size of a slot and of its header. Immutable; the put, load and eviction paths compute offsets with it
 * rather than each with its own copy of the arithmetic.
 */
record SlotLayout(long capacityBytes, long dataBase, long slotBytes, int headerBytes) {
    /** The device offset of a slot (its header). */
    long slotOffset(int slot) {
        return dataBase + (long) slot * slotBytes;
    }

    /** The most payload bytes a slot holds. */
    long maxPayloadBytes() {
        return slotBytes - headerBytes;
    }
}
