package io.fdpblock.core;

import io.fdpblock.l2.ObjectMeta;

import java.io.IOException;

/**
 * One committed entry of an open store as its format lists it ({@link RawBlockCore#forEachEntry}), with
 * the slot header it points at, checked by that format's rule: what a tool that carries the entries
 * elsewhere (migrate) needs, in terms every format shares.
 *
 * @param key the entry's key; null when the format keeps no keys (fdpblock_v2 keeps their hashes) and the
 *        slot header does not name this entry's
 * @param slot the slot the payload is in
 * @param size bytes of payload
 * @param crc the payload's CRC32C, where {@code hasCrc}
 * @param hasCrc whether the CRC32C is known: lmcache_v1 takes it from the slot header, which LMCache writes
 *        without one; fdpblock_v2 from its index, which always has it
 * @param meta the object metadata the format keeps (shape, dtype, ...), or null
 * @param header the slot header as read
 * @param problem why the slot header is not this entry's (no magic, another key's, another length), or
 *        null when it is
 */
public record StoreEntry(String key, int slot, int size, int crc, boolean hasCrc, ObjectMeta meta,
        OnDiskFormat.SlotHeader header, String problem) {
    /** Gets each entry of a listing, on the caller's thread, without the store's lock held. */
    @FunctionalInterface
    public interface Visitor {
        void entry(StoreEntry entry) throws IOException;
    }
}
