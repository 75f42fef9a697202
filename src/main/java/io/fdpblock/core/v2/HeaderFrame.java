package io.fdpblock.core.v2;

import io.fdpblock.core.OnDiskFormat;

import java.lang.foreign.MemorySegment;

/**
 * The frame each fdpblock_v2 header shares (the superblock, a snapshot's header, a log chunk's header):
 * an 8-byte ASCII magic at byte 0, the header's own fields, then at {@code crcAt} a u32 CRC32C of every
 * byte before it. Each header declares its fields' offsets once, beside its magic.
 */
final class HeaderFrame {
    private HeaderFrame() {}

    /** Writes the magic and, over it and the fields already set, the CRC32C at {@code crcAt}. */
    static void seal(MemorySegment header, byte[] magic, int crcAt) {
        OnDiskFormat.putMagic(header, magic);
        header.set(OnDiskFormat.U32, crcAt, crc(header, crcAt));
    }

    /** Whether the CRC32C at {@code crcAt} is that of the bytes before it (the magic is checked apart). */
    static boolean crcHolds(MemorySegment header, int crcAt) {
        return header.get(OnDiskFormat.U32, crcAt) == crc(header, crcAt);
    }

    private static int crc(MemorySegment header, int crcAt) {
        return OnDiskFormat.crc32c(header.asSlice(0, crcAt));
    }
}
