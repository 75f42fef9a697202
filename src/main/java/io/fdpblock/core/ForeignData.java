package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;

/**
 * Bytes a store did not write where it would keep its metadata (a file system, a partition table,
 * another program's data): every format refuses to create a store over them unless told to format.
 *
 * @param offset the device offset of the first non-zero byte
 * @param firstBytes up to 16 bytes from there, in hex
 */
public record ForeignData(long offset, String firstBytes) {
    /** Read granularity of {@link #firstIn}, and the least size of its scratch buffer. */
    public static final int SCAN_CHUNK = 1 << 20;

    /**
     * @param buf a scratch buffer of at least {@link #SCAN_CHUNK} bytes, aligned for the device
     * @return the first non-zero byte of [{@code from}, {@code to}), or null when all are zero
     */
    public static ForeignData firstIn(BlockDevice device, long from, long to, MemorySegment buf) throws IOException {
        for (long off = from; off < to; off += SCAN_CHUNK) {
            MemorySegment chunk = buf.asSlice(0, Math.min(SCAN_CHUNK, to - off));
            IoBatch b = new IoBatch(1);
            b.read(off, chunk);
            device.execute(b);
            long nz = firstNonZero(chunk);
            if (nz >= 0) {
                return new ForeignData(off + nz, hex(chunk, nz));
            }
        }
        return null;
    }

    /**
     * The first non-zero byte in the first block of sampled slots of a data area: a store whose metadata
     * area reads all zeros may still be one whose metadata was erased, its chunks in place. Up to
     * {@code SCAN_CHUNK / blockAlign} slots are read in one submission: the first half of them (puts
     * fill the lowest free slots first), the rest spread evenly over the others.
     *
     * @param buf a scratch buffer of at least {@link #SCAN_CHUNK} bytes, aligned for the device
     * @return the first non-zero byte found, or null when every sampled block is zeros
     */
    public static ForeignData inSlots(BlockDevice device, long dataBase, long slotBytes, long slots, int blockAlign,
            MemorySegment buf) throws IOException {
        int n = (int) Math.min(slots, SCAN_CHUNK / blockAlign);
        if (n <= 0) {
            return null;
        }
        int first = (n + 1) / 2;
        IoBatch b = new IoBatch(n);
        for (int k = 0; k < n; k++) {
            long slot = slots <= n || k < first ? k : first + (k - first) * (slots - first) / (n - first);
            b.read(dataBase + slot * slotBytes, buf.asSlice((long) k * blockAlign, blockAlign));
        }
        device.execute(b);
        for (int k = 0; k < n; k++) {
            MemorySegment block = buf.asSlice((long) k * blockAlign, blockAlign);
            long nz = firstNonZero(block);
            if (nz >= 0) {
                return new ForeignData(b.offset(k) + nz, hex(block, nz));
            }
        }
        return null;
    }

    /**
     * Refuses a new store over a metadata area of all zeros whose data area holds data ({@link #inSlots}):
     * a new empty store there would hide (and then overwrite) whatever it holds. Reads, never writes.
     */
    public static void refuseChunksInSlots(BlockDevice device, long dataBase, long slotBytes, long slots,
            int blockAlign) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            ForeignData chunks = inSlots(device, dataBase, slotBytes, slots, blockAlign,
                    arena.allocate(SCAN_CHUNK, 4096));
            if (chunks != null) {
                throw chunks.dataAreaRefusal(device.path());
            }
        }
    }

    /** The refusal {@link #refuseChunksInSlots} throws. */
    StoreRefusedException dataAreaRefusal(String devicePath) {
        return new StoreRefusedException(StoreRefusedException.Reason.FOREIGN_DATA, "raw_block on " + devicePath + ":"
                + " the metadata area is all zeros but the data area holds data (non-zero bytes at offset " + offset
                + ": " + firstBytes + "), e.g. a store whose metadata was erased, or another program's data. Nothing"
                + " was changed; restore the metadata area from a copy, or, if the device may be overwritten, set"
                + " \"format\": true");
    }

    /**
     * The refusal to create a store over these bytes.
     *
     * @param area the area a store would use, e.g. "the metadata area"
     */
    public StoreRefusedException refusal(String devicePath, String area) {
        return new StoreRefusedException(StoreRefusedException.Reason.FOREIGN_DATA, "raw_block on " + devicePath + ": "
                + area + " holds data this store did not write (non-zero bytes at offset " + offset + ": " + firstBytes
                + "), e.g. a file system or another program's data. Nothing was changed; if the device may be"
                + " overwritten, set \"format\": true");
    }

    private static long firstNonZero(MemorySegment seg) {
        long n = seg.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            if (seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != 0) {
                break;
            }
        }
        for (; i < n; i++) {
            if (seg.get(ValueLayout.JAVA_BYTE, i) != 0) {
                return i;
            }
        }
        return -1;
    }

    private static String hex(MemorySegment seg, long from) {
        int n = (int) Math.min(16, seg.byteSize() - from);
        return HexFormat.ofDelimiter(" ").formatHex(seg.asSlice(from, n).toArray(ValueLayout.JAVA_BYTE));
    }
}
