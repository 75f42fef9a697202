package io.fdpblock.core.v2;

import io.fdpblock.core.Detection;
import io.fdpblock.core.ForeignData;
import io.fdpblock.core.FormatMigration;
import io.fdpblock.core.LayoutMismatch;
import io.fdpblock.core.ProbeContext;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.StoreContext;
import io.fdpblock.core.StoreFormat;
import io.fdpblock.core.StoreLayout;
import io.fdpblock.core.StoreRefusedException;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.StripedBlockDevice;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;

/**
 * fdpblock_v2 ({@code fdpblock_v2}): two superblocks, a metadata log and two snapshot areas, then a data
 * area aligned to a reclaim unit so that slot groups fill whole ones ({@link V2Meta}).
 */
public final class V2Format implements StoreFormat {
    /** The {@code meta_format} name. */
    public static final String NAME = "fdpblock_v2";
    private static final SecureRandom RANDOM = new SecureRandom();

    @Override
    public String name() {
        return NAME;
    }

    /** A valid superblock (copy A at 0, else copy B at {@code block_align}), else superblock magic in neither valid. */
    @Override
    public Detection detect(ProbeContext probe) throws IOException {
        int blockAlign = probe.config().blockAlign();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment blocks = arena.allocate(2L * blockAlign, 4096);
            probe.read(0, blocks);
            MemorySegment b0 = blocks.asSlice(0, blockAlign);
            MemorySegment b1 = blocks.asSlice(blockAlign, blockAlign);
            if (V2Layout.read(b0) != null) {
                return Detection.store(0);
            }
            if (V2Layout.read(b1) != null) {
                return Detection.store(blockAlign);
            }
            if (V2Layout.hasMagic(b0) || V2Layout.hasMagic(b1)) {
                return new Detection(Detection.Kind.DAMAGED, 0, "raw_block on " + probe.device().path()
                        + ": both fdpblock_v2 superblocks are damaged (bad CRC or impossible geometry). Nothing was"
                        + " changed; \"format\": true starts over (its keys are then lost)");
            }
            return Detection.NONE;
        }
    }

    /** Checks the stored layout against the configuration: another one is refused, naming the field. */
    @Override
    public Opening open(ProbeContext probe) throws IOException {
        RawBlockCoreConfig config = probe.config();
        V2Layout l = readSuperblock(probe.device(), config.blockAlign());
        LayoutMismatch m = l.mismatch(config, probe.capacity());
        if (m != null && m.field().equals("capacity_bytes") && probe.device() instanceof StripedBlockDevice s
                && !s.labelled() && config.capacityBytes() == 0) {
            // Unlabelled members cannot be checked: a member added or taken away changes the size,
            // and opening the rest with the old capacity would read and write the wrong members.
            throw new StoreRefusedException(StoreRefusedException.Reason.WRONG_MEMBERS, "raw_block on "
                    + probe.device().path() + ": the striped fdpblock_v2 store was created over members of "
                    + m.stored() + " bytes in all, these " + s.members().size() + " make " + m.configured()
                    + " (in whole slot_bytes of the smallest): a member was added, taken away or replaced by"
                    + " one of another size. Nothing was changed: give exactly the devices the store was"
                    + " created over, in its order (members written before labels cannot be checked)");
        }
        if (m != null) {
            throw m.refusal(probe.device().path(), "the fdpblock_v2 store was created");
        }
        return new V2Opening(l, null);
    }

    /**
     * A layout sized from the capacity; unless {@code "format": true}, refused when its metadata area holds
     * bytes this store did not write, or (at recovery, once the data area is placed) when sampled slots
     * there hold data. The superblocks are written when it is recovered.
     */
    @Override
    public Opening create(ProbeContext probe) throws IOException {
        RawBlockCoreConfig config = probe.config();
        V2Layout created = V2Layout.create(config.blockAlign(), config.headerBytes(), config.slotBytes(),
                probe.capacity(), config.metaTotalBytesSet() ? config.metaTotalBytes() : 0, probe.dataAlign(),
                RANDOM.nextLong());
        probe.checkMetadataFits(created.metaTotalBytes(), probe.dataAlign());
        if (config.format()) {
            String note = "formatted as asked (format: true): whatever " + probe.device().path() + " held is"
                    + " discarded; new fdpblock_v2 store for " + created.maxSlots() + " slots";
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "raw_block: " + note);
            return new V2Opening(created, note);
        }
        try (Arena arena = Arena.ofShared()) {
            ForeignData foreign = ForeignData.firstIn(probe.device(), 0, created.metaTotalBytes(),
                    arena.allocate(ForeignData.SCAN_CHUNK, 4096));
            if (foreign != null) {
                throw foreign.refusal(probe.device().path(), "the area an fdpblock_v2 store would use for its metadata");
            }
        }
        return new V2Opening(created, "new fdpblock_v2 store: metadata area of " + created.metaTotalBytes()
                + " bytes for " + created.maxSlots() + " slots");
    }

    /** Both superblocks: a new incarnation, whose log no earlier one's records can pass for. */
    @Override
    public void erase(ProbeContext probe) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            probe.write(0, arena.allocate(2L * probe.config().blockAlign(), 4096));
        }
        probe.device().flush();
    }

    /** Two superblocks, two snapshot areas for {@code slots} entries and a log of a few snapshots' size. */
    @Override
    public long metaBytesFor(int blockAlign, long slots, long align) {
        return V2Layout.requiredMetaBytes(blockAlign, slots, align);
    }

    @Override
    public String describe(Detection found) {
        return found.kind() == Detection.Kind.DAMAGED ? "a damaged fdpblock_v2 superblock" : "an fdpblock_v2 superblock";
    }

    /**
     * Writes both superblocks, copy B first: a torn first write leaves the other intact; the second
     * commits. They carry the metadata's placement id, like the log and the snapshots.
     */
    public static void writeSuperblocks(BlockDevice device, V2Layout layout, Arena arena, PlacementId metadata)
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

    /** The superblock {@link #detect} finds: copy A, else copy B (at {@code blockAlign}); null when neither is. */
    public static V2Layout readSuperblock(BlockDevice device, int blockAlign) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment blocks = arena.allocate(2L * blockAlign, 4096);
            IoBatch b = new IoBatch(1);
            b.read(0, blocks);
            device.execute(b);
            V2Layout l = V2Layout.read(blocks.asSlice(0, blockAlign));
            return l != null ? l : V2Layout.read(blocks.asSlice(blockAlign, blockAlign));
        }
    }

    /** The superblock's ({@link V2Migration#recordedLayout}); nothing to go on without one. */
    @Override
    public StoreLayout recordedLayout(ProbeContext probe, Detection found, StoreLayout.Given given) throws IOException {
        return V2Migration.recordedLayout(probe, found);
    }

    @Override
    public FormatMigration.Source migrationSource(RawBlockCore store, StoreLayout layout, String devicePath)
            throws IOException {
        return new V2Migration.Source(store, layout);
    }

    @Override
    public FormatMigration.Target migrationTarget(BlockDevice device, StoreLayout layout, String devicePath)
            throws IOException {
        return new V2Migration.Target(device, layout);
    }

    /** @param createdNote for a new store, what happened (its superblocks are written first), else null */
    private record V2Opening(V2Layout layout, String createdNote) implements Opening {
        @Override
        public long metaTotalBytes() {
            return layout.metaTotalBytes();
        }

        @Override
        public Recovered recover(StoreContext context) throws IOException {
            if (createdNote != null) {
                if (!context.config().format()) { // an all-zero metadata area: erased, its chunks in place?
                    ForeignData.refuseChunksInSlots(context.device(), context.dataBase(), context.slotBytes(),
                            context.slots().maxSlots(), layout.blockAlign());
                }
                try (Arena arena = Arena.ofShared()) {
                    writeSuperblocks(context.device(), layout, arena, context.metadata());
                }
            }
            CompactIndex index = new CompactIndex(context.slots().maxSlots());
            V2Meta meta = new V2Meta(context, layout, index, createdNote);
            try {
                return new Recovered(index, meta, meta.recover());
            } catch (IOException | RuntimeException e) {
                index.close();
                throw e;
            }
        }
    }
}
