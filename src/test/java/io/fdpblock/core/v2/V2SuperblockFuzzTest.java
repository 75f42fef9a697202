package io.fdpblock.core.v2;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.fuzz.Fuzzing;

import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.Arrays;

/**
 * The fdpblock_v2 superblock as {@code open} reads it from the first two blocks of a device
 * ({@link V2Layout#read}).
 *
 * <p>Input: a flags byte, then the block (zero-padded to 512 bytes, the smallest block_align; flag 2: the
 * block exactly as long as the rest of the input, so shorter ones too). Flag 1 sets the CRC32C at 88
 * over bytes 0..87, so that the fuzzer reaches the geometry checks behind it (a CRC guards against torn
 * writes, not against a hostile or buggy writer).
 *
 * <p>Nothing may escape. A block is accepted only when it has the magic, version 2 and its CRC, and then
 * exactly when its geometry is plausible, computed here with exact arithmetic on the fields as unsigned
 * numbers: block_align a power of two >= 512; header_bytes > 0; slot_bytes > header_bytes; every field
 * below 2^63; the snapshot areas and the log of at least a block each, and these sizes and
 * meta_total_bytes multiples of block_align (every I/O needs it); the log right after the two
 * superblocks and the two snapshot areas, and ending inside the metadata area; the metadata area smaller
 * than the capacity; max slots >= 1 and exactly (capacity - meta_total_bytes) / slot_bytes, the slots the
 * store computes and uses (a smaller count would make replay refuse its records of the others). An accepted layout
 * has the fields at their offsets, and written then read again gives the same layout.
 */
public class V2SuperblockFuzzTest {
    static final int FIX_CRC = 1;
    static final int RAW_LENGTH = 2;
    static final int BLOCK = 512;
    private static final BigInteger LONG_LIMIT = BigInteger.ONE.shiftLeft(63);

    @FuzzTest
    void superblock(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        int flags = input.length == 0 ? 0 : input[0];
        byte[] block = (flags & RAW_LENGTH) != 0 && input.length > 1 ? Arrays.copyOfRange(input, 1, input.length)
                : Fuzzing.padded(input, 1, BLOCK);
        if ((flags & FIX_CRC) != 0 && block.length >= 92) {
            V2FuzzDevice.putU32(block, 88, V2FuzzDevice.crc32c(block, 0, 88));
        }
        V2Layout l = V2Layout.read(MemorySegment.ofArray(block));
        boolean ours = block.length >= 92 && Arrays.equals(block, 0, 8, V2Layout.MAGIC, 0, 8)
                && Fuzzing.u32(block, 8) == V2Layout.VERSION
                && (int) Fuzzing.u32(block, 88) == V2FuzzDevice.crc32c(block, 0, 88);
        boolean plausible = ours && plausible(block);
        if ((l != null) != plausible) {
            throw Fuzzing.wrong("superblock accepted", l, plausible ? "a layout (magic, version, CRC and a plausible"
                    + " geometry)" : "null (" + (ours ? "implausible geometry" : "not a superblock") + ")");
        }
        if (l == null) {
            return;
        }
        V2Layout fromBytes = new V2Layout((int) Fuzzing.u32(block, 12), (int) Fuzzing.u32(block, 16),
                Fuzzing.u64(block, 24), Fuzzing.u64(block, 32), Fuzzing.u64(block, 40), Fuzzing.u64(block, 48),
                Fuzzing.u64(block, 56), Fuzzing.u64(block, 64), Fuzzing.u64(block, 72), Fuzzing.u64(block, 80));
        if (!l.equals(fromBytes)) {
            throw Fuzzing.wrong("superblock fields", l, fromBytes);
        }
        byte[] again = new byte[BLOCK];
        l.write(MemorySegment.ofArray(again));
        V2Layout back = V2Layout.read(MemorySegment.ofArray(again));
        if (!l.equals(back)) {
            throw Fuzzing.wrong("write then read", back, l);
        }
    }

    /** The geometry rules above, on the fields as unsigned numbers with exact arithmetic. */
    private static boolean plausible(byte[] b) {
        BigInteger blockAlign = unsigned32(b, 12);
        BigInteger headerBytes = unsigned32(b, 16);
        BigInteger slotBytes = unsigned64(b, 24);
        BigInteger capacity = unsigned64(b, 32);
        BigInteger meta = unsigned64(b, 40);
        BigInteger snapshot = unsigned64(b, 48);
        BigInteger logOffset = unsigned64(b, 56);
        BigInteger log = unsigned64(b, 64);
        BigInteger maxSlots = unsigned64(b, 72);
        for (BigInteger v : new BigInteger[] {slotBytes, capacity, meta, snapshot, logOffset, log, maxSlots}) {
            if (v.compareTo(LONG_LIMIT) >= 0) {
                return false;
            }
        }
        if (blockAlign.bitCount() != 1 || blockAlign.longValue() < 512 || blockAlign.longValue() > (1L << 30)
                || headerBytes.signum() <= 0 || headerBytes.bitLength() > 31 || slotBytes.compareTo(headerBytes) <= 0) {
            return false;
        }
        if (snapshot.compareTo(blockAlign) < 0 || log.compareTo(blockAlign) < 0
                || snapshot.mod(blockAlign).signum() != 0 || log.mod(blockAlign).signum() != 0
                || meta.mod(blockAlign).signum() != 0) {
            return false;
        }
        BigInteger two = BigInteger.TWO;
        if (!logOffset.equals(two.multiply(blockAlign).add(two.multiply(snapshot)))
                || logOffset.add(log).compareTo(meta) > 0 || meta.compareTo(capacity) >= 0) {
            return false;
        }
        return maxSlots.signum() > 0 && maxSlots.equals(capacity.subtract(meta).divide(slotBytes));
    }

    private static BigInteger unsigned32(byte[] b, int off) {
        return BigInteger.valueOf(Fuzzing.u32(b, off));
    }

    private static BigInteger unsigned64(byte[] b, int off) {
        long v = Fuzzing.u64(b, off);
        BigInteger x = BigInteger.valueOf(v);
        return v < 0 ? x.add(BigInteger.ONE.shiftLeft(64)) : x;
    }
}
