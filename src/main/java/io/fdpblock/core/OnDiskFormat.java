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
 *   fdpblock's seal (LMCache leaves it zero): 32 magic "FDBHDR01" | 40 u64 seq | 48 u64 length
 *                                       | 56 u32 CRC-32, copies of bytes 12..31 | 60 u32 CRC32C of bytes 32..59
 * checkpoint trailer, right after the payload JSON (fdpblock only, outside the header's length):
 *                                       0 u32 zero | 4 magic "FDBCKP01" | 12 u64 seq | 20 u64 JSON length
 *                                       | 28 u32 CRC-32 of the JSON | 32 u32 CRC32C of bytes 4..31
 * slot header (header_bytes, zero-filled): 0 magic "LMCBLK01" | 8 u64 slot identity | 16 u64 payload length
 *                                       | 24 u32 CRC32C of the payload | 28 magic "CRC1" (present = checked)
 * </pre>
 */
public final class OnDiskFormat {
    private OnDiskFormat() {}

    /** A little-endian 32-bit field, unaligned. */
    public static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** A little-endian 64-bit field, unaligned. */
    public static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The magic that opens an lmcache_v1 checkpoint container's header. */
    public static final byte[] CONTAINER_MAGIC = "LMCIDX01".getBytes(StandardCharsets.US_ASCII);
    static final byte[] SLOT_MAGIC = "LMCBLK01".getBytes(StandardCharsets.US_ASCII);
    static final int CONTAINER_HEADER_BYTES = 32;
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

    static void putMagic(MemorySegment seg, byte[] magic) {
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

    // ---- container header ----

    static final byte[] SEAL_MAGIC = "FDBHDR01".getBytes(StandardCharsets.US_ASCII);
    /** Where the seal starts in a container's header block, and its size (magic, copies, CRC32C). */
    public static final int SEAL_OFFSET = 32;
    /** Bytes of the seal. */
    public static final int SEAL_BYTES = 32;
    static final byte[] TRAILER_MAGIC = "FDBCKP01".getBytes(StandardCharsets.US_ASCII);
    /** Bytes of a checkpoint's trailer. */
    public static final int TRAILER_BYTES = 36;

    /**
     * Writes a container header: LMCache's 32 bytes, then fdpblock's seal (a copy of seq, length and
     * CRC under a CRC32C of its own), which LMCache neither writes nor reads: a header whose bytes
     * changed (a flipped seq could make an old checkpoint look newest) no longer matches its seal.
     */
    public static void writeContainerHeader(MemorySegment block, long seq, long payloadLength, int crc32) {
        block.fill((byte) 0);
        putMagic(block, CONTAINER_MAGIC);
        block.set(U32, 8, RawBlockCoreConfig.META_VERSION);
        block.set(U64, 12, seq);
        block.set(U64, 20, payloadLength);
        block.set(U32, 28, crc32);
        writeSeal(block, seq, payloadLength, crc32);
    }

    /**
     * A header block that commits nothing (bytes 0..31 zero, which LMCache reads as no header) but says
     * the container is this store's: once it is there, a header block of zeros is never what a crash
     * leaves, only damage.
     */
    public static void writeReservedHeader(MemorySegment block) {
        block.fill((byte) 0);
        writeSeal(block, 0, 0, 0);
    }

    private static void writeSeal(MemorySegment block, long seq, long payloadLength, int crc32) {
        MemorySegment.copy(SEAL_MAGIC, 0, block, ValueLayout.JAVA_BYTE, SEAL_OFFSET, SEAL_MAGIC.length);
        block.set(U64, SEAL_OFFSET + 8, seq);
        block.set(U64, SEAL_OFFSET + 16, payloadLength);
        block.set(U32, SEAL_OFFSET + 24, crc32);
        block.set(U32, SEAL_OFFSET + 28, crc32c(block.asSlice(SEAL_OFFSET, 28)));
    }

    /**
     * fdpblock's seal of a container header as read.
     *
     * @param intact its magic and CRC32C check out (then seq, length and CRC are what was written)
     */
    public record Seal(boolean intact, long seq, long payloadLength, int crc32) {
        /** A seal written for a container reserved but not yet filled. */
        public boolean reserved() {
            return intact && seq == 0 && payloadLength == 0 && crc32 == 0;
        }
    }

    /**
     * @param headZero bytes 0..31 (LMCache's header) are all zero
     * @param seal fdpblock's seal, or null when its bytes are all zero (LMCache's header, or none)
     */
    public record ContainerHeader(boolean magicOk, int version, long seq, long payloadLength, int crc32, boolean headZero,
            Seal seal) {
        ContainerHeader(boolean magicOk, int version, long seq, long payloadLength, int crc32) {
            this(magicOk, version, seq, payloadLength, crc32, false, null);
        }

        /** Bytes 0..63 are all zero: no header was ever written there, or it was zeroed. */
        public boolean blank() {
            return headZero && seal == null;
        }

        /** Magic and version match and the length fits the container's payload area. */
        public boolean plausible(long maxPayload) {
            return magicOk && version == RawBlockCoreConfig.META_VERSION && payloadLength > 0
                    && payloadLength <= maxPayload && seq > 0;
        }

        /** The seal is intact and says what bytes 12..31 say. */
        public boolean sealMatches() {
            return seal != null && seal.intact() && seal.seq() == seq && seal.payloadLength() == payloadLength
                    && seal.crc32() == crc32;
        }
    }

    /** Decodes a container's header block. */
    public static ContainerHeader readContainerHeader(MemorySegment block) {
        boolean headZero = true;
        for (int i = 0; i < CONTAINER_HEADER_BYTES; i += 8) {
            headZero &= block.get(U64, i) == 0;
        }
        Seal seal = null;
        if (block.byteSize() >= SEAL_OFFSET + SEAL_BYTES) {
            boolean zero = true;
            for (int i = SEAL_OFFSET; i < SEAL_OFFSET + SEAL_BYTES; i += 8) {
                zero &= block.get(U64, i) == 0;
            }
            if (!zero) {
                boolean intact = hasMagic(block.asSlice(SEAL_OFFSET), SEAL_MAGIC)
                        && block.get(U32, SEAL_OFFSET + 28) == crc32c(block.asSlice(SEAL_OFFSET, 28));
                seal = new Seal(intact, block.get(U64, SEAL_OFFSET + 8), block.get(U64, SEAL_OFFSET + 16),
                        block.get(U32, SEAL_OFFSET + 24));
            }
        }
        return new ContainerHeader(hasMagic(block, CONTAINER_MAGIC), block.get(U32, 8), block.get(U64, 12),
                block.get(U64, 20), block.get(U32, 28), headZero, seal);
    }

    /**
     * Writes the trailer of checkpoint {@code seq} at {@code at}, right after its JSON: what a container
     * whose header is damaged held (which checkpoint, complete or not) can then still be told.
     */
    public static void writeTrailer(MemorySegment buf, long at, long seq, long jsonLength, int jsonCrc32) {
        MemorySegment t = buf.asSlice(at, TRAILER_BYTES);
        t.fill((byte) 0);
        putMagic(t.asSlice(4), TRAILER_MAGIC);
        t.set(U64, 12, seq);
        t.set(U64, 20, jsonLength);
        t.set(U32, 28, jsonCrc32);
        t.set(U32, 32, crc32c(t.asSlice(4, 28)));
    }

    /** A trailer as read: only returned when its magic and CRC32C check out. */
    public record Trailer(long seq, long jsonLength, int jsonCrc32) {}

    /** @return the trailer in the first {@link #TRAILER_BYTES} of {@code t}, or null when there is none intact */
    public static Trailer readTrailer(MemorySegment t) {
        if (t.byteSize() < TRAILER_BYTES || t.get(U32, 0) != 0 || !hasMagic(t.asSlice(4), TRAILER_MAGIC)
                || t.get(U32, 32) != crc32c(t.asSlice(4, 28))) {
            return null;
        }
        return new Trailer(t.get(U64, 12), t.get(U64, 20), t.get(U32, 28));
    }

    // ---- checksums ----

    static int crc32(MemorySegment data) {
        CRC32 c = new CRC32();
        c.update(data.asByteBuffer());
        return (int) c.getValue();
    }

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
