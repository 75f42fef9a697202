package io.fdpblock.core;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;

/**
 * Byte layouts of LMCache raw_block state v1 (all little-endian), plus this project's payload CRC in
 * the slot header's unused tail.
 *
 * <pre>
 * container header (in its own block):  0 magic "LMCIDX01" | 8 u32 version | 12 u64 seq
 *                                       | 20 u64 payload length | 28 u32 CRC-32 (IEEE) of the payload
 * slot header (header_bytes, zero-filled): 0 magic "LMCBLK01" | 8 u64 slot identity | 16 u64 payload length
 *                                       | 24 u32 CRC32C of the payload | 28 magic "CRC1" (present = checked)
 * </pre>
 */
final class OnDiskFormat {
    private OnDiskFormat() {}

    static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static final byte[] CONTAINER_MAGIC = "LMCIDX01".getBytes(StandardCharsets.US_ASCII);
    static final byte[] SLOT_MAGIC = "LMCBLK01".getBytes(StandardCharsets.US_ASCII);
    static final int CONTAINER_HEADER_BYTES = 32;
    /** "CRC1" little-endian: marks a slot header that carries a payload CRC32C at byte 24. */
    static final int PAYLOAD_CRC_MARKER = 0x31435243;

    static boolean hasMagic(MemorySegment seg, byte[] magic) {
        for (int i = 0; i < magic.length; i++) {
            if (seg.get(ValueLayout.JAVA_BYTE, i) != magic[i]) {
                return false;
            }
        }
        return true;
    }

    static void putMagic(MemorySegment seg, byte[] magic) {
        MemorySegment.copy(magic, 0, seg, ValueLayout.JAVA_BYTE, 0, magic.length);
    }

    // ---- slot header ----

    /** Where a slot header keeps its key (u16 length, then UTF-8 bytes): after what LMCache reads. */
    static final int SLOT_KEY_OFFSET = 32;

    /**
     * Writes a slot header; the key goes after byte 32 when it fits (LMCache reads bytes 0..23 and
     * ignores the rest), so the device itself says which key a slot holds.
     */
    static void writeSlotHeader(MemorySegment header, long identity, long payloadLength, int payloadCrc32c,
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
    record SlotHeader(boolean magicOk, long identity, long payloadLength, boolean hasCrc, int crc32c, String key) {}

    static SlotHeader readSlotHeader(MemorySegment header) {
        boolean magic = hasMagic(header, SLOT_MAGIC);
        boolean hasCrc = header.get(U32, 28) == PAYLOAD_CRC_MARKER;
        String key = null;
        if (header.byteSize() >= SLOT_KEY_OFFSET + 2) {
            int len = Short.toUnsignedInt(header.get(U16, SLOT_KEY_OFFSET));
            if (len > 0 && SLOT_KEY_OFFSET + 2L + len <= header.byteSize()) {
                key = new String(header.asSlice(SLOT_KEY_OFFSET + 2, len).toArray(ValueLayout.JAVA_BYTE),
                        java.nio.charset.StandardCharsets.UTF_8);
            }
        }
        return new SlotHeader(magic, header.get(U64, 8), header.get(U64, 16), hasCrc, header.get(U32, 24), key);
    }

    // ---- container header ----

    static void writeContainerHeader(MemorySegment block, long seq, long payloadLength, int crc32) {
        block.fill((byte) 0);
        putMagic(block, CONTAINER_MAGIC);
        block.set(U32, 8, RawBlockCoreConfig.META_VERSION);
        block.set(U64, 12, seq);
        block.set(U64, 20, payloadLength);
        block.set(U32, 28, crc32);
    }

    record ContainerHeader(boolean magicOk, int version, long seq, long payloadLength, int crc32) {
        /** Magic and version match and the length fits the container's payload area. */
        boolean plausible(long maxPayload) {
            return magicOk && version == RawBlockCoreConfig.META_VERSION && payloadLength > 0
                    && payloadLength <= maxPayload && seq > 0;
        }
    }

    static ContainerHeader readContainerHeader(MemorySegment block) {
        return new ContainerHeader(hasMagic(block, CONTAINER_MAGIC), block.get(U32, 8), block.get(U64, 12),
                block.get(U64, 20), block.get(U32, 28));
    }

    // ---- checksums ----

    static int crc32(MemorySegment data) {
        CRC32 c = new CRC32();
        c.update(data.asByteBuffer());
        return (int) c.getValue();
    }

    static int crc32c(MemorySegment data) {
        CRC32C c = new CRC32C();
        c.update(data.asByteBuffer());
        return (int) c.getValue();
    }

    static long roundUp(long v, long align) {
        return (v + align - 1) / align * align;
    }
}
