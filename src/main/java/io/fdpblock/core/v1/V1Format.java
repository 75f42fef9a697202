package io.fdpblock.core.v1;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.core.Detection;
import io.fdpblock.core.FormatMigration;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.ProbeContext;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.StoreContext;
import io.fdpblock.core.StoreFormat;
import io.fdpblock.core.StoreLayout;
import io.fdpblock.core.StoreRefusedException;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.StripedBlockDevice;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * LMCache's raw_block state v1 ({@code lmcache_v1}): the index as JSON checkpoints in two mirrored
 * containers at the device's start ({@link V1Meta}). A new store is made by its recovery, which
 * formats the containers.
 */
public final class V1Format implements StoreFormat {
    /** The {@code meta_format} name. */
    public static final String NAME = "lmcache_v1";

    @Override
    public String name() {
        return NAME;
    }

    /** A container header at offset 0 is its store; one at the second container's place only a trace. */
    @Override
    public Detection detect(ProbeContext probe) throws IOException {
        RawBlockCoreConfig config = probe.config();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment block = arena.allocate(config.blockAlign(), 4096);
            probe.read(0, block);
            if (OnDiskFormat.hasMagic(block, ContainerFormat.CONTAINER_MAGIC)) {
                return Detection.store(0);
            }
            // a store whose first container is gone still has its second one; a striped store's metadata
            // lies on its first member: no container can lie past it
            long containerBytes = config.containerBytes();
            long limit = probe.device() instanceof StripedBlockDevice s ? s.memberBytes()
                    : probe.capacity();
            if (containerBytes + config.blockAlign() > limit) {
                return Detection.NONE;
            }
            probe.read(containerBytes, block);
            return OnDiskFormat.hasMagic(block, ContainerFormat.CONTAINER_MAGIC)
                    ? new Detection(Detection.Kind.TRACES, containerBytes, null) : Detection.NONE;
        }
    }

    @Override
    public Opening open(ProbeContext probe) {
        return new V1Opening(probe.config().metaTotalBytes());
    }

    /** Nothing is written here: recovery tells new, uncommitted and foreign apart, and formats the containers. */
    @Override
    public Opening create(ProbeContext probe) {
        return open(probe);
    }

    /** Both container headers (the second one where the capacity has room for it). */
    @Override
    public void erase(ProbeContext probe) throws IOException {
        int blockAlign = probe.config().blockAlign();
        long second = probe.config().containerBytes();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment zero = arena.allocate(blockAlign, 4096);
            probe.write(0, zero);
            if (second + blockAlign <= probe.capacity()) {
                probe.write(second, zero);
            }
        }
        probe.device().flush();
    }

    /** Two containers, each a header block and room for the JSON checkpoint of a full device. */
    @Override
    public long metaBytesFor(int blockAlign, long slots, long align) {
        return 2 * (OnDiskFormat.roundUp(slots * Checkpointer.ESTIMATED_BYTES_PER_ENTRY, blockAlign) + blockAlign);
    }

    @Override
    public String describe(Detection found) {
        return "an lmcache_v1 container header" + (found.offset() > 0 ? " at offset " + found.offset() : "");
    }

    /**
     * The capacity an lmcache_v1 store's checkpoint records against the members' size (fdpblock_v2's
     * superblock is compared the same way when it opens).
     */
    @Override
    public void checkUnlabelledMembers(ProbeContext probe) throws IOException {
        RawBlockCoreConfig config = probe.config();
        if (!(probe.device() instanceof StripedBlockDevice device) || config.capacityBytes() != 0
                || config.metaTotalBytes() >= device.memberBytes()) {
            return;
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment block = arena.allocate(config.blockAlign(), 4096);
            probe.read(0, block);
            if (!OnDiskFormat.hasMagic(block, ContainerFormat.CONTAINER_MAGIC)) {
                return;
            }
        }
        List<MetadataArea.Container> valid = MetadataArea.newestFirst(
                MetadataArea.readAsRecorded(device, config.blockAlign(), config.metaTotalBytes()));
        if (!valid.isEmpty() && CheckpointCodec.decode(valid.get(0).payload()).root().get("capacity_bytes")
                instanceof JsonNode n && n.isNumber() && n.asLong() != device.sizeBytes()) {
            throw new StoreRefusedException(StoreRefusedException.Reason.WRONG_MEMBERS, "raw_block on "
                    + device.path() + ": the striped lmcache_v1 store was created over members of " + n.asLong()
                    + " bytes in all, these " + device.members().size() + " make " + device.sizeBytes()
                    + " (in whole slot_bytes of the smallest): a member was added, taken away or replaced by one"
                    + " of another size. Nothing was changed: give exactly the devices the store was created"
                    + " over, in its order (members written before labels cannot be checked)");
        }
    }

    /** The newest readable checkpoint's ({@link V1Migration#recordedLayout}). */
    @Override
    public StoreLayout recordedLayout(ProbeContext probe, Detection found, StoreLayout.Given given) throws IOException {
        return V1Migration.recordedLayout(probe, found, given);
    }

    @Override
    public FormatMigration.Source migrationSource(RawBlockCore store, StoreLayout layout, String devicePath) {
        return new V1Migration.Source(store, layout, devicePath);
    }

    @Override
    public FormatMigration.Target migrationTarget(BlockDevice device, StoreLayout layout, String devicePath) {
        return new V1Migration.Target(device, layout, devicePath);
    }

    private record V1Opening(long metaTotalBytes) implements Opening {
        @Override
        public Recovered recover(StoreContext context) throws IOException {
            HeapKeyIndex index = new HeapKeyIndex();
            CheckpointCodec.Layout layout = new CheckpointCodec.Layout(context.config().devicePath(),
                    context.capacityBytes(), context.config().blockAlign(), context.headerBytes(), context.slotBytes(),
                    context.dataBase(), context.dataBase());
            V1Meta meta = new V1Meta(context, layout, index);
            try {
                return new Recovered(index, meta, meta.recover());
            } catch (IOException | RuntimeException e) {
                index.close();
                throw e;
            }
        }
    }
}
