package io.fdpblock.core.v2;

import io.fdpblock.core.LayoutMismatch;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.SaltTable;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/**
 * Where fdpblock_v2 keeps its metadata, and the superblock that says so (docs/on-device-format.md):
 *
 * <pre>
 * 0          B          2B                 2B+S               2B+2S                 2B+2S+L   meta_total
 * | super A  | super B  | snapshot area 0  | snapshot area 1  | log (a ring of L)   |  pad  | slots...
 * </pre>
 *
 * Sized from the device's slots so that a full device's index always fits: each snapshot area holds
 * a 32-byte entry per slot plus the salt table, and the log eight snapshots' worth, so that snapshots
 * taken when a quarter of it is used keep the metadata written per put low (about 150 bytes of log
 * record plus under 80 of snapshot) and leave room for what is logged while one is written.
 *
 * <pre>
 * superblock (one block, twice): 0 "FDPBSB02" | 8 u32 format version (2) | 12 u32 block_align
 *   | 16 u32 header_bytes | 20 u32 0 | 24 u64 slot_bytes | 32 u64 capacity_bytes | 40 u64 meta_total_bytes
 *   | 48 u64 snapshot area bytes | 56 u64 log offset | 64 u64 log bytes | 72 u64 max slots
 *   | 80 u64 incarnation (random at format) | 88 u32 CRC32C of bytes 0..87
 * </pre>
 */
public record V2Layout(int blockAlign, int headerBytes, long slotBytes, long capacityBytes, long metaTotalBytes,
        long snapshotBytes, long logOffset, long logBytes, long maxSlots, long incarnation) {

    static final byte[] MAGIC = "FDPBSB02".getBytes(StandardCharsets.US_ASCII);
    static final int VERSION = 2;
    // The superblock's fields (the table above, docs/on-device-format.md), for the writer and the reader.
    private static final int VERSION_AT = 8;
    private static final int BLOCK_ALIGN_AT = 12;
    private static final int HEADER_BYTES_AT = 16;
    private static final int SLOT_BYTES_AT = 24;
    private static final int CAPACITY_BYTES_AT = 32;
    private static final int META_TOTAL_BYTES_AT = 40;
    private static final int SNAPSHOT_BYTES_AT = 48;
    private static final int LOG_OFFSET_AT = 56;
    private static final int LOG_BYTES_AT = 64;
    private static final int MAX_SLOTS_AT = 72;
    private static final int INCARNATION_AT = 80;
    private static final int CRC_AT = 88;
    /** Bytes of a snapshot entry. */
    static final int SNAPSHOT_ENTRY_BYTES = CompactIndex.ENTRY_BYTES;
    /** A salt table entry at most: id, length, 128 chars of UTF-8 (ObjectKey's limit). */
    private static final int MAX_SALT_RECORD = 4 + 128 * 3;
    private static final int MAX_SALTS = SaltTable.MAX_IDS;
    private static final int LOG_SNAPSHOTS = 8;
    private static final long MIN_LOG_BLOCKS = 64;

    long snapshotOffset(int area) {
        return 2L * blockAlign + area * snapshotBytes;
    }

    /** Whether {@code slot} is one of the store's slots (a snapshot entry's, a logged put's or delete's). */
    boolean holdsSlot(int slot) {
        return slot >= 0 && slot < maxSlots;
    }

    /**
     * Whether an index entry (a snapshot's, or a put in the log) is one the store can have written: one of
     * its slots, and a payload of 1 byte up to what a slot holds.
     */
    boolean holdsEntry(int slot, int size) {
        return holdsSlot(slot) && size > 0 && size <= slotBytes - headerBytes;
    }

    /** The data area: the first slot. */
    public long dataBase() {
        return metaTotalBytes;
    }

    /** The metadata bytes a device of {@code maxSlots} slots needs, before rounding to {@code align}. */
    public static long requiredMetaBytes(int blockAlign, long maxSlots, long align) {
        long snapshot = snapshotBytes(blockAlign, maxSlots);
        long log = logBytes(blockAlign, snapshot);
        return OnDiskFormat.roundUp(2L * blockAlign + 2 * snapshot + log, Math.max(align, blockAlign));
    }

    private static long snapshotBytes(int blockAlign, long maxSlots) {
        long salts = Math.min(MAX_SALTS, maxSlots) * MAX_SALT_RECORD + 8;
        return OnDiskFormat.roundUp(blockAlign + salts + maxSlots * SNAPSHOT_ENTRY_BYTES, blockAlign);
    }

    private static long logBytes(int blockAlign, long snapshot) {
        return OnDiskFormat.roundUp(Math.max(MIN_LOG_BLOCKS * blockAlign, LOG_SNAPSHOTS * snapshot), blockAlign);
    }

    /**
     * The layout of a new device.
     *
     * @param metaTotalBytes the metadata area to use, or 0 to size it from the capacity
     * @param align what the data area's start is aligned to (e.g. the FDP reclaim unit), at least a block
     * @throws IllegalArgumentException naming the size needed when an explicit one cannot hold a full
     *         device's metadata
     */
    public static V2Layout create(int blockAlign, int headerBytes, long slotBytes, long capacityBytes, long metaTotalBytes,
            long align, long incarnation) {
        long upperSlots = capacityBytes / slotBytes;
        long meta = metaTotalBytes > 0 ? metaTotalBytes : requiredMetaBytes(blockAlign, upperSlots, align);
        long maxSlots = capacityBytes > meta ? (capacityBytes - meta) / slotBytes : 0;
        if (maxSlots < 1) {
            throw new IllegalArgumentException("raw_block config: capacity_bytes = " + capacityBytes + " holds no slot of "
                    + slotBytes + " bytes after the fdpblock_v2 metadata (" + meta + " bytes); give a capacity of at"
                    + " least " + (requiredMetaBytes(blockAlign, 1, align) + slotBytes));
        }
        long needed = requiredMetaBytes(blockAlign, maxSlots, blockAlign);
        if (meta < needed) {
            throw new IllegalArgumentException("raw_block config: meta_total_bytes = " + metaTotalBytes + " cannot hold"
                    + " the fdpblock_v2 metadata of a full device (" + maxSlots + " slots need " + needed + " bytes:"
                    + " two snapshot areas and the log); leave meta_total_bytes out to size it from the capacity,"
                    + " or raise it to " + needed);
        }
        long snapshot = snapshotBytes(blockAlign, maxSlots);
        long logOffset = 2L * blockAlign + 2 * snapshot;
        long log = (meta - logOffset) / blockAlign * blockAlign; // the log takes what the rounding left too
        return new V2Layout(blockAlign, headerBytes, slotBytes, capacityBytes, meta, snapshot, logOffset, log,
                maxSlots, incarnation);
    }

    /** Writes this layout as a superblock into {@code block} (its other bytes zero). */
    public void write(MemorySegment block) {
        block.fill((byte) 0);
        block.set(OnDiskFormat.U32, VERSION_AT, VERSION);
        block.set(OnDiskFormat.U32, BLOCK_ALIGN_AT, blockAlign);
        block.set(OnDiskFormat.U32, HEADER_BYTES_AT, headerBytes);
        block.set(OnDiskFormat.U64, SLOT_BYTES_AT, slotBytes);
        block.set(OnDiskFormat.U64, CAPACITY_BYTES_AT, capacityBytes);
        block.set(OnDiskFormat.U64, META_TOTAL_BYTES_AT, metaTotalBytes);
        block.set(OnDiskFormat.U64, SNAPSHOT_BYTES_AT, snapshotBytes);
        block.set(OnDiskFormat.U64, LOG_OFFSET_AT, logOffset);
        block.set(OnDiskFormat.U64, LOG_BYTES_AT, logBytes);
        block.set(OnDiskFormat.U64, MAX_SLOTS_AT, maxSlots);
        block.set(OnDiskFormat.U64, INCARNATION_AT, incarnation);
        HeaderFrame.seal(block, MAGIC, CRC_AT);
    }

    public static boolean hasMagic(MemorySegment block) {
        return OnDiskFormat.hasMagic(block, MAGIC);
    }

    /**
     * @return the superblock in {@code block}, or null when it is not one (magic, version, CRC or
     *         geometry that cannot be)
     */
    public static V2Layout read(MemorySegment block) {
        if (block.byteSize() < CRC_AT + 4 || !hasMagic(block) || block.get(OnDiskFormat.U32, VERSION_AT) != VERSION
                || !HeaderFrame.crcHolds(block, CRC_AT)) {
            return null;
        }
        V2Layout l = new V2Layout(block.get(OnDiskFormat.U32, BLOCK_ALIGN_AT),
                block.get(OnDiskFormat.U32, HEADER_BYTES_AT), block.get(OnDiskFormat.U64, SLOT_BYTES_AT),
                block.get(OnDiskFormat.U64, CAPACITY_BYTES_AT), block.get(OnDiskFormat.U64, META_TOTAL_BYTES_AT),
                block.get(OnDiskFormat.U64, SNAPSHOT_BYTES_AT), block.get(OnDiskFormat.U64, LOG_OFFSET_AT),
                block.get(OnDiskFormat.U64, LOG_BYTES_AT), block.get(OnDiskFormat.U64, MAX_SLOTS_AT),
                block.get(OnDiskFormat.U64, INCARNATION_AT));
        return l.plausible() ? l : null;
    }

    private boolean plausible() {
        if (blockAlign < 512 || Integer.bitCount(blockAlign) != 1 || headerBytes <= 0 || slotBytes <= headerBytes
                || snapshotBytes < blockAlign || logBytes < blockAlign || maxSlots <= 0 || snapshotBytes % blockAlign != 0
                || logBytes % blockAlign != 0 || metaTotalBytes % blockAlign != 0 || metaTotalBytes < 2L * blockAlign) {
            return false; // every offset and length of its I/O is a multiple of block_align
        }
        // each area compared with what is left of the metadata area, so that no sum can overflow
        long room = metaTotalBytes - 2L * blockAlign;
        return snapshotBytes <= room / 2 && logOffset == 2L * blockAlign + 2 * snapshotBytes
                && logBytes <= metaTotalBytes - logOffset && metaTotalBytes < capacityBytes
                && maxSlots == (capacityBytes - metaTotalBytes) / slotBytes; // the slots the store will use
    }

    /**
     * Compares the stored layout with the configured one.
     *
     * @return null when they agree, else the first field that differs
     */
    LayoutMismatch mismatch(RawBlockCoreConfig config, long configuredCapacity) {
        if (config.blockAlign() != blockAlign) {
            return new LayoutMismatch("block_align", "" + blockAlign, "" + config.blockAlign());
        }
        if (config.headerBytes() != headerBytes) {
            return new LayoutMismatch("header_bytes", "" + headerBytes, "" + config.headerBytes());
        }
        if (config.slotBytes() != slotBytes) {
            return new LayoutMismatch("slot_bytes", "" + slotBytes, "" + config.slotBytes());
        }
        if (configuredCapacity != capacityBytes) {
            return new LayoutMismatch("capacity_bytes", "" + capacityBytes, "" + configuredCapacity);
        }
        if (config.metaTotalBytesSet() && config.metaTotalBytes() != metaTotalBytes) {
            return new LayoutMismatch("meta_total_bytes", "" + metaTotalBytes, "" + config.metaTotalBytes());
        }
        return null;
    }
}
