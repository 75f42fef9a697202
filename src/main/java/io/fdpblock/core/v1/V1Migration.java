package io.fdpblock.core.v1;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.core.Detection;
import io.fdpblock.core.FormatMigration;
import io.fdpblock.core.FormatRefusedException;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.ProbeContext;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.StoreEntry;
import io.fdpblock.core.StoreLayout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * lmcache_v1's part in the tools' migration ({@link FormatMigration}): the layout its newest readable
 * checkpoint records, and the store as a migration's source (container 1 holds every key while the target
 * overwrites container 0) or its target (a checkpoint of every key into container 1, then container 0).
 */
final class V1Migration {
    private V1Migration() {}

    /** A checkpoint of {@code entries} for {@code layout}, as the store's own checkpoints are written. */
    private static byte[] checkpoint(StoreLayout layout, String devicePath, int nextSlot, List<StoreEntry> entries)
            throws IOException {
        CheckpointCodec.Layout l = new CheckpointCodec.Layout(devicePath, layout.capacityBytes(), layout.blockAlign(),
                layout.headerBytes(), layout.slotBytes(), layout.metaTotalBytes(), layout.metaTotalBytes());
        List<CheckpointCodec.SnapshotEntry> out = new ArrayList<>(entries.size());
        for (StoreEntry e : entries) {
            out.add(new CheckpointCodec.SnapshotEntry(e.key(), layout.slotOffset(e.slot()), e.size(), e.meta()));
        }
        return CheckpointCodec.encode(l, nextSlot, out);
    }

    private static FormatMigration.Extent container1(MetadataArea area) {
        return new FormatMigration.Extent(area.containerOffset(1), area.containerOffset(1) + area.containerBytes(),
                "lmcache_v1 container 1");
    }

    /** Writes checkpoint {@code seq} of {@code json} (into container {@code (seq - 1) % 2}), counting its bytes. */
    private static void write(MetadataArea area, long seq, byte[] json, int blockAlign, FormatMigration.Progress p)
            throws IOException {
        area.write(seq, json, PlacementId.NONE);
        p.wrote(blockAlign + OnDiskFormat.roundUp(json.length, blockAlign));
    }

    // ------------------------------------------------------------------ the layout a checkpoint records

    /**
     * The layout the newest readable checkpoint records, the given values filling what it does not. With
     * no container header at offset 0 ({@code found} not a store), container 1 is looked for only where
     * a given {@code meta_total_bytes} puts it: container 0 is what records where it lies.
     */
    static StoreLayout recordedLayout(ProbeContext probe, Detection found, StoreLayout.Given o) throws IOException {
        BlockDevice device = probe.device();
        int blockAlign = probe.config().blockAlign();
        boolean header = found.kind() == Detection.Kind.STORE;
        long meta = o.metaTotalBytes() != null ? o.metaTotalBytes()
                : device.sizeBytes() / (2L * blockAlign) * (2L * blockAlign); // container 0 says where container 1 is
        List<MetadataArea.Container> containers = new MetadataArea(device, blockAlign, meta).readContainers();
        List<MetadataArea.Container> candidates = o.metaTotalBytes() != null ? MetadataArea.newestFirst(containers)
                : containers.get(0).valid() ? List.of(containers.get(0)) : List.of();
        String metaOption = StoreLayout.Given.option("meta_total_bytes");
        if (candidates.isEmpty()) {
            if (!header && o.metaTotalBytes() == null) {
                throw new FormatRefusedException(FormatRefusedException.Reason.NO_STORE, "it holds no store (no"
                        + " lmcache_v1 container header at offset 0, nor any other format's header). If it is an"
                        + " lmcache_v1 store whose container 0 is gone, give " + metaOption + " (its meta_total_bytes)"
                        + " so that container 1 can be found");
            }
            if (o.metaTotalBytes() == null) {
                throw new FormatRefusedException(FormatRefusedException.Reason.NEEDS_SETTING, "lmcache_v1 container"
                        + " 0 is unreadable (" + containers.get(0).problem() + "), and it is what records where"
                        + " container 1 is: give " + metaOption + " (the store's meta_total_bytes). Nothing was"
                        + " changed");
            }
            throw new FormatRefusedException(header ? FormatRefusedException.Reason.UNREADABLE
                    : FormatRefusedException.Reason.NO_STORE, "no readable lmcache_v1 checkpoint with meta_total_bytes "
                    + meta + " (container 0: " + containers.get(0).problem() + "; container 1 at "
                    + containers.get(1).offset() + ": " + containers.get(1).problem() + "). Nothing was changed");
        }
        List<String> problems = new ArrayList<>();
        for (MetadataArea.Container c : candidates) {
            JsonNode root;
            try {
                root = CheckpointCodec.decode(c.payload()).root();
            } catch (IOException | RuntimeException e) {
                problems.add("container " + c.index() + ": unreadable JSON (" + e.getMessage() + ")");
                continue;
            }
            String where = "lmcache_v1 checkpoint seq " + c.seq();
            return new StoreLayout(field(root, "capacity_bytes", o.capacityBytes(), where),
                    (int) field(root, "block_align", o.blockAlign() == null ? null : (long) o.blockAlign(), where),
                    (int) field(root, "header_bytes", o.headerBytes() == null ? null : (long) o.headerBytes(), where),
                    field(root, "slot_bytes", o.slotBytes(), where),
                    field(root, "meta_total_bytes", o.metaTotalBytes(), where));
        }
        throw new FormatRefusedException(FormatRefusedException.Reason.UNREADABLE, "its lmcache_v1 checkpoints cannot"
                + " be read (" + String.join("; ", problems) + "). Nothing was changed");
    }

    /** A layout field: the given value if any (the store's open compares it), else what the checkpoint records. */
    private static long field(JsonNode root, String name, Long given, String where) throws FormatRefusedException {
        if (given != null) {
            return given;
        }
        JsonNode n = root.get(name);
        if (n != null && n.isIntegralNumber() && n.canConvertToLong()) {
            return n.longValue();
        }
        throw new FormatRefusedException(FormatRefusedException.Reason.NEEDS_SETTING, "its " + where + " does not"
                + " record " + name + "; give it with " + StoreLayout.Given.option(name) + ". Nothing was changed");
    }

    // ------------------------------------------------------------------ as the source

    /**
     * Container 1 holds every key while the target writes over container 0: unless it already holds the
     * checkpoint recovery applied, a checkpoint of every key goes there, numbered above any found. Once the
     * target committed, its header is zeroed, so that nothing reads as a checkpoint.
     */
    static final class Source implements FormatMigration.Source {
        private final BlockDevice device;
        private final StoreLayout layout;
        private final String devicePath;
        private final MetadataArea area;
        private final long seqApplied;
        private byte[] json;
        private boolean rewriteContainer1;
        private long highestSeq;

        Source(RawBlockCore store, StoreLayout layout, String devicePath) {
            this.device = store.device();
            this.layout = layout;
            this.devicePath = devicePath;
            this.area = new MetadataArea(device, layout.blockAlign(), layout.metaTotalBytes());
            this.seqApplied = store.recovery().seq();
        }

        @Override
        public FormatMigration.Extent keeps() {
            return container1(area);
        }

        @Override
        public String heldIn() {
            return "container 1";
        }

        @Override
        public String whenEntriesDisagree() {
            return "open the store once with fdpblock (meta_verify_on_load, the default, drops such entries and its"
                    + " next checkpoint records it), then migrate again";
        }

        @Override
        public FormatMigration.Metadata plan(List<StoreEntry> entries, int nextSlot) throws IOException {
            MetadataArea.Container applied = null;
            for (MetadataArea.Container c : area.readContainers()) {
                if (c.valid() && c.seq() == seqApplied) {
                    applied = c;
                }
                if (c.header().magicOk()) {
                    highestSeq = Math.max(highestSeq, c.seq());
                }
            }
            json = checkpoint(layout, devicePath, nextSlot, entries);
            rewriteContainer1 = applied == null || applied.index() != 1;
            if (rewriteContainer1 && json.length > area.payloadRoom()) {
                throw new FormatRefusedException(FormatRefusedException.Reason.DOES_NOT_FIT, "the lmcache_v1"
                        + " checkpoint of its " + entries.size() + " keys that must be in container 1 while the"
                        + " migration runs takes " + json.length + " bytes, but a container holds " + area.payloadRoom()
                        + ". Nothing was changed");
            }
            long oldBytes = applied == null ? 0 : applied.header().payloadLength();
            return new FormatMigration.Metadata("lmcache_v1 checkpoint seq " + seqApplied + " in container "
                    + (applied == null ? "?" : applied.index()) + ", " + oldBytes + " bytes of JSON", oldBytes);
        }

        /** Nothing: what the store holds is durable in its newest checkpoint. */
        @Override
        public void beforeClose(FormatMigration.Progress p) {}

        @Override
        public void confine(FormatMigration.Progress p) throws IOException {
            if (!rewriteContainer1) {
                return;
            }
            long seq = highestSeq + 1 + (highestSeq + 1) % 2; // even: container 1, newer than any header found
            p.begin("wrote lmcache_v1 checkpoint seq " + seq + " into container 1");
            write(area, seq, json, layout.blockAlign(), p);
            p.done("wrote every key into lmcache_v1 container 1 (checkpoint seq " + seq + ", " + json.length
                    + " bytes), which holds the store while container 0 is overwritten");
        }

        @Override
        public void erase(FormatMigration.Progress p) throws IOException {
            p.begin("zeroed lmcache_v1 container 1's header");
            FormatMigration.zeroBlock(device, area.containerOffset(1), layout.blockAlign());
            p.wrote(layout.blockAlign());
            p.done("zeroed lmcache_v1 container 1's header, so that nothing on the device reads as a checkpoint");
        }
    }

    // ------------------------------------------------------------------ as the target

    /**
     * A checkpoint of every key (object metadata as the source keeps it) into container 1 while the source
     * still holds the store; the source's erase commits (the device then opens as lmcache_v1 from container
     * 1, with the store's meta_total_bytes); then the same checkpoint into container 0.
     */
    static final class Target implements FormatMigration.Target {
        private final StoreLayout layout;
        private final String devicePath;
        private final MetadataArea area;
        private byte[] json;

        Target(BlockDevice device, StoreLayout layout, String devicePath) {
            this.layout = layout;
            this.devicePath = devicePath;
            this.area = new MetadataArea(device, layout.blockAlign(), layout.metaTotalBytes());
        }

        @Override
        public FormatMigration.Extent writesBeforeCommit() {
            return container1(area);
        }

        @Override
        public String heldIn() {
            return "container 1; it opens with meta_total_bytes " + layout.metaTotalBytes();
        }

        @Override
        public void plan(List<StoreEntry> entries, int nextSlot) throws IOException {
            json = checkpoint(layout, devicePath, nextSlot, entries);
            if (json.length > area.payloadRoom()) {
                throw new FormatRefusedException(FormatRefusedException.Reason.DOES_NOT_FIT, "the checkpoint of its "
                        + entries.size() + " keys takes " + json.length + " bytes of JSON, but a container of its"
                        + " metadata area (" + layout.metaTotalBytes() + " bytes, where the data starts, which a"
                        + " migration never moves) holds " + area.payloadRoom() + ". Nothing was changed; delete keys"
                        + " until it fits, or keep the store in its format");
            }
        }

        /** Nothing: lmcache_v1 reads every slot header as it is. */
        @Override
        public void prepareSlots(FormatMigration.Progress p) {}

        @Override
        public void writeBody(FormatMigration.Progress p) throws IOException {
            p.begin("wrote lmcache_v1 checkpoint seq 2 into container 1");
            write(area, 2, json, layout.blockAlign(), p);
            p.done("wrote every key into lmcache_v1 container 1 (checkpoint seq 2, " + json.length + " bytes)");
        }

        /** Nothing: the source's erase commits (its headers gone, container 1 is the store). */
        @Override
        public void commit(FormatMigration.Progress p) {}

        @Override
        public FormatMigration.Written finish(FormatMigration.Progress p) throws IOException {
            p.begin("wrote lmcache_v1 checkpoint seq 3 into container 0");
            write(area, 3, json, layout.blockAlign(), p);
            p.done("wrote lmcache_v1 checkpoint seq 3 into container 0");
            return new FormatMigration.Written(new FormatMigration.Metadata("lmcache_v1 checkpoints seq 2 and 3"
                    + " (containers 1 and 0), " + json.length + " bytes of JSON each", 2L * json.length), 0, 0);
        }

        @Override
        public void close() {}
    }
}
