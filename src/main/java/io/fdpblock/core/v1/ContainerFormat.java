package io.fdpblock.core.v1;

import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.RawBlockCoreConfig;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * Byte layouts of an lmcache_v1 checkpoint container (LMCache raw_block state v1, all little-endian):
 * LMCache's header, fdpblock's seal behind it in the same block, and fdpblock's trailer after the JSON.
 *
 * <pre>
 * container header (in its own block):  0 magic "LMCIDX01" | 8 u32 version | 12 u64 seq
 *                                       | 20 u64 payload length | 28 u32 CRC-32 (IEEE) of the payload
 *   fdpblock's seal (LMCache leaves it zero): 32 magic "FDBHDR01" | 40 u64 seq | 48 u64 length
 *                                       | 56 u32 CRC-32, copies of bytes 12..31 | 60 u32 CRC32C of bytes 32..59
 * checkpoint trailer, right after the payload JSON (fdpblock only, outside the header's length):
 *                                       0 u32 zero | 4 magic "FDBCKP01" | 12 u64 seq | 20 u64 JSON length
 *                                       | 28 u32 CRC-32 of the JSON | 32 u32 CRC32C of bytes 4..31
 * </pre>
 */
public final class ContainerFormat {
    private ContainerFormat() {}

    /** The magic that opens an lmcache_v1 checkpoint container's header. */
    public static final byte[] CONTAINER_MAGIC = "LMCIDX01".getBytes(StandardCharsets.US_ASCII);
    static final int CONTAINER_HEADER_BYTES = 32;
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
        OnDiskFormat.putMagic(block, CONTAINER_MAGIC);
        block.set(OnDiskFormat.U32, 8, RawBlockCoreConfig.META_VERSION);
        block.set(OnDiskFormat.U64, 12, seq);
        block.set(OnDiskFormat.U64, 20, payloadLength);
        block.set(OnDiskFormat.U32, 28, crc32);
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
        block.set(OnDiskFormat.U64, SEAL_OFFSET + 8, seq);
        block.set(OnDiskFormat.U64, SEAL_OFFSET + 16, payloadLength);
        block.set(OnDiskFormat.U32, SEAL_OFFSET + 24, crc32);
        block.set(OnDiskFormat.U32, SEAL_OFFSET + 28, OnDiskFormat.crc32c(block.asSlice(SEAL_OFFSET, 28)));
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
            headZero &= block.get(OnDiskFormat.U64, i) == 0;
        }
        Seal seal = null;
        if (block.byteSize() >= SEAL_OFFSET + SEAL_BYTES) {
            boolean zero = true;
            for (int i = SEAL_OFFSET; i < SEAL_OFFSET + SEAL_BYTES; i += 8) {
                zero &= block.get(OnDiskFormat.U64, i) == 0;
            }
            if (!zero) {
                boolean intact = OnDiskFormat.hasMagic(block.asSlice(SEAL_OFFSET), SEAL_MAGIC)
                        && block.get(OnDiskFormat.U32, SEAL_OFFSET + 28)
                                == OnDiskFormat.crc32c(block.asSlice(SEAL_OFFSET, 28));
                seal = new Seal(intact, block.get(OnDiskFormat.U64, SEAL_OFFSET + 8),
                        block.get(OnDiskFormat.U64, SEAL_OFFSET + 16), block.get(OnDiskFormat.U32, SEAL_OFFSET + 24));
            }
        }
        return new ContainerHeader(OnDiskFormat.hasMagic(block, CONTAINER_MAGIC), block.get(OnDiskFormat.U32, 8),
                block.get(OnDiskFormat.U64, 12), block.get(OnDiskFormat.U64, 20), block.get(OnDiskFormat.U32, 28),
                headZero, seal);
    }

    /**
     * Writes the trailer of checkpoint {@code seq} at {@code at}, right after its JSON: what a container
     * whose header is damaged held (which checkpoint, complete or not) can then still be told.
     */
    public static void writeTrailer(MemorySegment buf, long at, long seq, long jsonLength, int jsonCrc32) {
        MemorySegment t = buf.asSlice(at, TRAILER_BYTES);
        t.fill((byte) 0);
        OnDiskFormat.putMagic(t.asSlice(4), TRAILER_MAGIC);
        t.set(OnDiskFormat.U64, 12, seq);
        t.set(OnDiskFormat.U64, 20, jsonLength);
        t.set(OnDiskFormat.U32, 28, jsonCrc32);
        t.set(OnDiskFormat.U32, 32, OnDiskFormat.crc32c(t.asSlice(4, 28)));
    }

    /** A trailer as read: only returned when its magic and CRC32C check out. */
    public record Trailer(long seq, long jsonLength, int jsonCrc32) {}

    /** @return the trailer in the first {@link #TRAILER_BYTES} of {@code t}, or null when there is none intact */
    public static Trailer readTrailer(MemorySegment t) {
        if (t.byteSize() < TRAILER_BYTES || t.get(OnDiskFormat.U32, 0) != 0
                || !OnDiskFormat.hasMagic(t.asSlice(4), TRAILER_MAGIC)
                || t.get(OnDiskFormat.U32, 32) != OnDiskFormat.crc32c(t.asSlice(4, 28))) {
            return null;
        }
        return new Trailer(t.get(OnDiskFormat.U64, 12), t.get(OnDiskFormat.U64, 20), t.get(OnDiskFormat.U32, 28));
    }

    static int crc32(MemorySegment data) {
        CRC32 c = new CRC32();
        c.update(data.asByteBuffer());
        return (int) c.getValue();
    }
}
