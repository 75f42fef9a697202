package io.fdpblock.core;

import io.fdpblock.nvme.PlacementId;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.MemberLabel;
import io.fdpblock.device.StripedBlockDevice;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;

/**
 * Which metadata format a device holds, read before anything is written: an existing device opens in
 * its own format whatever the configuration's {@code meta_format} says; a new one (its metadata area
 * all zeros) gets the configured one; anything else is refused unless {@code "format": true}.
 */
final class FormatProbe {
    private FormatProbe() {}

    /**
     * @param v2 fdpblock_v2 (else lmcache_v1)
     * @param layout fdpblock_v2's layout, else null
     * @param createdNote when the device was formatted just now, what happened
     */
    record Choice(boolean v2, V2Layout layout, String createdNote) {}

    private static final SecureRandom RANDOM = new SecureRandom();

    /** @param align what a new fdpblock_v2 data area is aligned to (a reclaim unit, 1 MiB at least) */
    static Choice probe(RawBlockCoreConfig config, BlockDevice device, long align, PlacementId metadata)
            throws IOException {
        int blockAlign = config.blockAlign();
        long capacity = StoreGeometry.capacity(config, device);
        if (config.format()) {
            return format(config, device, capacity, align, metadata);
        }
        try (Arena arena = Arena.ofShared()) {
            refuseStripeMember(device);
            Found found = detect(device, blockAlign);
            if (found.kind() == Found.Kind.LMCACHE_V1) {
                return new Choice(false, null, null);
            }
            if (found.kind() == Found.Kind.FDPBLOCK_V2) {
                V2Layout l = found.layout();
                CheckpointCodec.Mismatch m = l.mismatch(config, capacity);
                if (m != null && m.field().equals("capacity_bytes") && device instanceof StripedBlockDevice s
                        && !s.labelled() && config.capacityBytes() == 0) {
                    // Unlabelled members cannot be checked: a member added or taken away changes the size,
                    // and opening the rest with the old capacity would read and write the wrong members.
                    throw new StoreRefusedException(StoreRefusedException.Reason.WRONG_MEMBERS, "raw_block on "
                            + device.path() + ": the striped fdpblock_v2 store was created over members of "
                            + m.stored() + " bytes in all, these " + s.members().size() + " make " + m.configured()
                            + " (in whole slot_bytes of the smallest): a member was added, taken away or replaced by"
                            + " one of another size. Nothing was changed: give exactly the devices the store was"
                            + " created over, in its order (members written before labels cannot be checked)");
                }
                if (m != null) {
                    throw new StoreRefusedException(StoreRefusedException.Reason.LAYOUT_MISMATCH, "raw_block on "
                            + device.path() + ": the fdpblock_v2 store was created with another layout: " + m
                            + ". Nothing was changed: open it with " + m.field() + " = " + m.stored()
                            + ", or set \"format\": true to discard it");
                }
                return new Choice(true, l, null);
            }
            if (found.kind() == Found.Kind.FDPBLOCK_V2_DAMAGED) {
                throw new StoreRefusedException(StoreRefusedException.Reason.UNREADABLE, "raw_block on " + device.path()
                        + ": both fdpblock_v2 superblocks are damaged (bad CRC or impossible geometry). Nothing was"
                        + " changed; \"format\": true starts over (its keys are then lost)");
            }
            if (config.metaFormat() == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 || holdsV1Container(config, device,
                    capacity, arena)) {
                return new Choice(false, null, null); // v1's own recovery tells new, uncommitted and foreign apart
            }
            V2Layout created = V2Layout.create(blockAlign, config.headerBytes(), config.slotBytes(), capacity,
                    config.metaTotalBytesSet() ? config.metaTotalBytes() : 0, align, RANDOM.nextLong());
            if (device instanceof StripedBlockDevice s) {
                StripeMembers.checkMetadataFits(config, s, created.metaTotalBytes(), align);
            }
            MetadataArea.Contents.Foreign foreign = MetadataArea.foreignIn(device, 0, created.metaTotalBytes(),
                    arena.allocate(MetadataArea.SCAN_CHUNK, 4096));
            if (foreign != null) {
                throw new StoreRefusedException(StoreRefusedException.Reason.FOREIGN_DATA, "raw_block on "
                        + device.path() + ": the area an fdpblock_v2 store would use for its metadata holds data this"
                        + " store did not write (non-zero bytes at offset " + foreign.offset() + ": "
                        + foreign.firstBytes() + "), e.g. a file system or another program's data. Nothing was"
                        + " changed; if the device may be overwritten, set \"format\": true");
            }
            writeSuperblocks(device, created, arena, metadata);
            return new Choice(true, created, "new fdpblock_v2 store: metadata area of " + created.metaTotalBytes()
                    + " bytes for " + created.maxSlots() + " slots");
        }
    }

    /**
     * What the first two blocks of a device say: an lmcache_v1 container header at offset 0 (which wins),
     * else a valid fdpblock_v2 superblock (copy A at 0, else copy B at {@code blockAlign}), else
     * superblock magic with neither copy valid, else nothing of either format.
     */
    record Found(Kind kind, V2Layout layout) {
        enum Kind { LMCACHE_V1, FDPBLOCK_V2, FDPBLOCK_V2_DAMAGED, NONE }
    }

    static Found detect(BlockDevice device, int blockAlign) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment blocks = arena.allocate(2L * blockAlign, 4096);
            read(device, 0, blocks);
            MemorySegment b0 = blocks.asSlice(0, blockAlign);
            MemorySegment b1 = blocks.asSlice(blockAlign, blockAlign);
            if (OnDiskFormat.hasMagic(b0, OnDiskFormat.CONTAINER_MAGIC)) {
                return new Found(Found.Kind.LMCACHE_V1, null);
            }
            V2Layout l = V2Layout.read(b0);
            l = l != null ? l : V2Layout.read(b1);
            if (l != null) {
                return new Found(Found.Kind.FDPBLOCK_V2, l);
            }
            if (V2Layout.hasMagic(b0) || V2Layout.hasMagic(b1)) {
                return new Found(Found.Kind.FDPBLOCK_V2_DAMAGED, null);
            }
            return new Found(Found.Kind.NONE, null);
        }
    }

    /**
     * A single device that carries a striped store's member label is one member of several: whatever
     * the format would do with it alone (take it for foreign data, offer to format it) is wrong.
     */
    private static void refuseStripeMember(BlockDevice device) throws IOException {
        if (device instanceof StripedBlockDevice) {
            return; // its offset 0 is past its members' labels
        }
        if (MemberLabel.read(device) instanceof MemberLabel.Read.Label(MemberLabel l)) {
            throw new StoreRefusedException(StoreRefusedException.Reason.WRONG_MEMBERS, "raw_block on " + device.path()
                    + ": it is " + l.describe() + ", not a store of its own. Nothing was changed: open the store"
                    + " with device_paths listing its " + l.count() + " members in its order (this one at position "
                    + l.index() + ")");
        }
    }

    /** A v1 store whose first container is gone still has its second one. */
    private static boolean holdsV1Container(RawBlockCoreConfig config, BlockDevice device, long capacity, Arena arena)
            throws IOException {
        long containerBytes = config.containerBytes();
        // a striped store's metadata lies on its first member: no container can lie past it
        long limit = device instanceof StripedBlockDevice s ? s.memberBytes() : capacity;
        if (containerBytes + config.blockAlign() > limit) {
            return false;
        }
        MemorySegment block = arena.allocate(config.blockAlign(), 4096);
        read(device, containerBytes, block);
        return OnDiskFormat.hasMagic(block, OnDiskFormat.CONTAINER_MAGIC);
    }

    /** {@code "format": true}: whatever the device holds is discarded, and it gets the configured format. */
    private static Choice format(RawBlockCoreConfig config, BlockDevice device, long capacity, long align,
            PlacementId metadata) throws IOException {
        int blockAlign = config.blockAlign();
        if (device instanceof StripedBlockDevice s) { // before the first write
            if (config.metaFormat() == RawBlockCoreConfig.MetaFormat.LMCACHE_V1) {
                StripeMembers.checkMetadataFits(config, s, config.metaTotalBytes(), 0);
            } else {
                StripeMembers.checkMetadataFits(config, s, V2Layout.create(blockAlign, config.headerBytes(),
                        config.slotBytes(), capacity, config.metaTotalBytesSet() ? config.metaTotalBytes() : 0, align,
                        0).metaTotalBytes(), align);
            }
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment zero = arena.allocate(2L * blockAlign, 4096);
            IoBatch b = new IoBatch(1);
            b.write(0, zero, metadata); // both superblocks (fdpblock_v2) or the first container header (v1)
            device.execute(b);
            if (config.metaFormat() == RawBlockCoreConfig.MetaFormat.LMCACHE_V1) {
                device.flush();
                return new Choice(false, null, null); // v1's recovery formats its containers
            }
            V2Layout created = V2Layout.create(blockAlign, config.headerBytes(), config.slotBytes(), capacity,
                    config.metaTotalBytesSet() ? config.metaTotalBytes() : 0, align, RANDOM.nextLong());
            if (config.containerBytes() + blockAlign <= capacity) { // a v1 second container must not survive
                b.reset();
                b.write(config.containerBytes(), zero.asSlice(0, blockAlign), metadata);
                device.execute(b);
            }
            writeSuperblocks(device, created, arena, metadata); // a new incarnation: the old log no longer counts
            String note = "formatted as asked (format: true): whatever " + device.path() + " held is discarded; new"
                    + " fdpblock_v2 store for " + created.maxSlots() + " slots";
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "raw_block: " + note);
            return new Choice(true, created, note);
        }
    }

    /**
     * Writes both superblocks, copy B first: a torn first write leaves the other intact; the second
     * commits. They carry the metadata's placement id, like the log and the snapshots.
     */
    static void writeSuperblocks(BlockDevice device, V2Layout layout, Arena arena, PlacementId metadata)
            throws IOException {
        MemorySegment sb = arena.allocate(layout.blockAlign(), 4096);
        layout.write(sb);
        IoBatch b = new IoBatch(1);
        b.write(layout.blockAlign(), sb, metadata); // the copy first: a torn first write leaves the other intact
        device.execute(b);
        device.flush();
        b.reset();
        b.write(0, sb, metadata);
        device.execute(b);
        device.flush();
    }

    private static void read(BlockDevice device, long offset, MemorySegment into) throws IOException {
        IoBatch b = new IoBatch(1);
        b.read(offset, into);
        device.execute(b);
    }
}
