package io.fdpblock.core;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * What both formats share on the device: the slot header in front of every payload (LMCache's raw_block
 * layout, plus this project's payload CRC and key in its unused tail), the little-endian field layouts,
 * magic and checksum helpers. Each format's metadata has its own ({@code ContainerFormat} for
 * lmcache_v1; {@code V2Layout}, {@code Snapshots} and {@code LogFormat} for fdpblock_v2).
 *
 * <pre>
 * slot header (header_bytes, zero-filled): 0 magic "LMCBLK01" | 8 u64 slot identity | 16 u64 payload length
 *                                       | 24 u32 CRC32C of the payload | 28 magic "CRC1" (present = checked)
 *                                       | 32 u16 key length | 34 the UTF-8 key, when it fits
 * </pre>
 */
public final class OnDiskFormat {
    private OnDiskFormat() {}

    /** A little-endian 32-bit field, unaligned. */
    public static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** A little-endian 64-bit field, unaligned. */
    public static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static final byte[] SLOT_MAGIC = "LMCBLK01".getBytes(StandardCharsets.US_ASCII);
    /** "CRC1" little-endian: marks a slot header that carries a payload CRC32C at byte 24. */
    static final int PAYLOAD_CRC_MARKER = 0x31435243;

    /** Whether {@code seg} starts with {@code magic}. */
    public static boolean hasMagic(MemorySegment seg, byte[] magic) {
        for (int i = 0; i < magic.length; i++) {
            if (seg.get(ValueLayout.JAVA_BYTE, i) != magic[i]) {
                return false;
            }
        }
        return true;
    }

    /** Writes {@code magic} at the start of {@code seg}. */
    public static void putMagic(MemorySegment seg, byte[] magic) {
        MemorySegment.copy(magic, 0, seg, ValueLayout.JAVA_BYTE, 0, magic.length);
    }

    // ---- slot header ----

    /** Where a slot header keeps its key (u16 length, then UTF-8 bytes): after what LMCache reads. */
    public static final int SLOT_KEY_OFFSET = 32;

    /**
     * Writes a slot header; the key goes after byte 32 when it fits (LMCache reads bytes 0..23 and
     * ignores the rest), so the device itself says which key a slot holds.
     */
    public static void writeSlotHeader(MemorySegment header, long identity, long payloadLength, int payloadCrc32c,
            byte[] key) {
        header.fill((byte) 0);
        putMagic(header, SLOT_MAGIC);
        header.set(U64, 8, identity);
        header.set(U64, 16, payloadLength);
        header.set(U32, 24, payloadCrc32c);
        header.set(U32, 28, PAYLOAD_CRC_MARKER);
        if (key != null && SLOT_KEY_OFFSET + 2 + key.length <= header.byteSize()) {
            header.set(U16, SLOT_KEY_OFFSET, (short) key.length);
            MemorySegment.copy(key, 0, header, ValueLayout.JAVA_BYTE, SLOT_KEY_OFFSET + 2, key.length);
        }
    }

    /** @param key the key the header names, or null when it names none (LMCache's headers) */
    public record SlotHeader(boolean magicOk, long identity, long payloadLength, boolean hasCrc, int crc32c, String key) {}

    /** Decodes a slot header (its magic checked, not its payload). */
    public static SlotHeader readSlotHeader(MemorySegment header) {
        boolean magic = hasMagic(header, SLOT_MAGIC);
        boolean hasCrc = header.get(U32, 28) == PAYLOAD_CRC_MARKER;
        String key = null;
        if (header.byteSize() >= SLOT_KEY_OFFSET + 2) {
            int len = Short.toUnsignedInt(header.get(U16, SLOT_KEY_OFFSET));
            if (len > 0 && SLOT_KEY_OFFSET + 2L + len <= header.byteSize()) {
                key = new String(header.asSlice(SLOT_KEY_OFFSET + 2, len).toArray(ValueLayout.JAVA_BYTE),
                        StandardCharsets.UTF_8);
            }
        }
        return new SlotHeader(magic, header.get(U64, 8), header.get(U64, 16), hasCrc, header.get(U32, 24), key);
    }

    // ---- checksums ----

    /** The CRC32C of {@code data}. */
    public static int crc32c(MemorySegment data) {
        CRC32C c = new CRC32C();
        c.update(data.asByteBuffer());
        return (int) c.getValue();
    }

    /** {@code v} rounded up to a multiple of {@code align}. */
    public static long roundUp(long v, long align) {
        return (v + align - 1) / align * align;
    }

    /**
     * Checks a slot header against the entry that points at it (every format's load and recovery).
     *
     * @return null when magic, identity and length agree, else what differs
     */
    public static String slotHeaderProblem(SlotHeader h, String key, long size) {
        if (!h.magicOk()) {
            return "no LMCBLK01 magic";
        }
        if (h.identity() != SlotIdentity.of(key)) {
            return "identity differs (another key's data)";
        }
        if (h.payloadLength() != size) {
            return "length " + h.payloadLength() + " != " + size;
        }
        return null;
    }
}
