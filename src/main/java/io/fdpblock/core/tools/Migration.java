package io.fdpblock.core.tools;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.SaltTable;
import io.fdpblock.core.StoreContext;
import io.fdpblock.core.StoreIndex;
import io.fdpblock.core.StoreInternals;
import io.fdpblock.core.StoreKey;
import io.fdpblock.core.StoreRefusedException;
import io.fdpblock.core.v1.CheckpointCodec;
import io.fdpblock.core.v1.HeapKeyIndex;
import io.fdpblock.core.v1.MetadataArea;
import io.fdpblock.core.v2.CompactIndex;
import io.fdpblock.core.v2.KeyListing;
import io.fdpblock.core.v2.Snapshots;
import io.fdpblock.core.v2.V2Format;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.linux.DeviceInUseException;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Converts a store in place between lmcache_v1 and fdpblock_v2 ({@code fdpblock migrate}): every key
 * keeps its slot, its slot header and its payload; only the metadata area is rewritten, and its size
 * (where the data starts) never changes. The store is opened through {@link RawBlockCore} in the format
 * it has (its own recovery and checks), its entries are checked against their slot headers, and the
 * target's metadata is written in an order that leaves, after a crash at any point, a device that opens
 * in one of the two formats with every key (with the layout options the store already needs, e.g.
 * {@code meta_total_bytes}); running the migration again then finishes it.
 *
 * <p>lmcache_v1 to fdpblock_v2: slot headers written by LMCache (no key, no CRC32C) are completed first
 * (LMCache's bytes 0..23 unchanged; fdpblock_v2 reads keys back from slot headers and checks every
 * payload's CRC32C), flushed; container 1 gets a checkpoint of every key unless it already holds the
 * one recovered (the snapshot areas overlap container 0, never container 1); the snapshot is written
 * into area 0 (body, flush, header, flush); superblock B, then A over container 0's header, commit
 * fdpblock_v2; container 1's header is zeroed. lmcache_v1 to fdpblock_v2 drops each entry's object
 * metadata (shape, dtype, fmt, cached positions): fdpblock_v2 keeps none ({@link Result} counts them).
 *
 * <p>fdpblock_v2 to lmcache_v1: a fresh snapshot (so recovery needs no log); a checkpoint of every key
 * into container 1 (in the log's region, never in the snapshot areas); superblock A, then B, zeroed:
 * that commits lmcache_v1; then container 0 gets the same checkpoint.
 *
 * <p>Refused, with nothing written: a device another store has open, one already in the target format,
 * one holding no store or an unreadable one, entries whose slot header disagrees, layout options that
 * differ from the store's, and a target that cannot hold the keys in this metadata area. What it
 * relies on: a completed flush makes every write before it durable, and a single-block write (a
 * superblock, a container header) is never torn inside its first sector.
 */
public final class Migration {
    private static final SecureRandom RANDOM = new SecureRandom();
    /** Slot headers (or payloads, to compute a CRC) per device submission. */
    private static final int BATCH = 64;

    private Migration() {}

    /**
     * What to convert to, and the layout values the store does not record (each, when given, must agree
     * with what it records; null = read it from the store).
     */
    public record Options(RawBlockCoreConfig.MetaFormat target, IoEngine engine, Integer blockAlign,
            Integer headerBytes, Long slotBytes, Long metaTotalBytes, Long capacityBytes) {
        public Options {
            if (target == null) {
                throw new IllegalArgumentException("migrate: the target format is required (fdpblock_v2 or lmcache_v1)");
            }
            engine = engine == null ? IoEngine.IO_URING : engine;
        }

        public static Options to(RawBlockCoreConfig.MetaFormat target) {
            return new Options(target, IoEngine.IO_URING, null, null, null, null, null);
        }

        public Options withEngine(IoEngine e) {
            return new Options(target, e, blockAlign, headerBytes, slotBytes, metaTotalBytes, capacityBytes);
        }

        public Options withBlockAlign(Integer v) {
            return new Options(target, engine, v, headerBytes, slotBytes, metaTotalBytes, capacityBytes);
        }

        public Options withHeaderBytes(Integer v) {
            return new Options(target, engine, blockAlign, v, slotBytes, metaTotalBytes, capacityBytes);
        }

        public Options withSlotBytes(Long v) {
            return new Options(target, engine, blockAlign, headerBytes, v, metaTotalBytes, capacityBytes);
        }

        public Options withMetaTotalBytes(Long v) {
            return new Options(target, engine, blockAlign, headerBytes, slotBytes, v, capacityBytes);
        }

        public Options withCapacityBytes(Long v) {
            return new Options(target, engine, blockAlign, headerBytes, slotBytes, metaTotalBytes, v);
        }
    }

    /**
     * What a migration did.
     *
     * @param metaTotalBytes the metadata area, unchanged: the data starts there before and after
     * @param oldMetadataBytes the source format's metadata in use before (checkpoint JSON, or snapshot
     *        body and log)
     * @param newMetadataBytes the target format's metadata written (superblocks and snapshot, or both
     *        checkpoints)
     * @param bytesWritten every byte the migration wrote (slot headers included)
     * @param slotHeadersCompleted slot headers LMCache wrote, given fdpblock's key and CRC32C
     * @param objectMetaDropped entries whose object metadata fdpblock_v2 does not keep
     */
    public record Result(String device, RawBlockCoreConfig.MetaFormat from, RawBlockCoreConfig.MetaFormat to, int keys,
            long payloadBytes, long metaTotalBytes, long oldMetadataBytes, String oldMetadata, long newMetadataBytes,
            String newMetadata, long bytesWritten, int slotHeadersCompleted, int objectMetaDropped, List<String> steps) {}

    /** A key as the source holds it. */
    private record Entry(String key, int slot, int size, int crc, boolean hasCrc, ObjectMeta meta,
            OnDiskFormat.SlotHeader header) {}

    /** The store found on the device and the layout it records. */
    private record Source(RawBlockCoreConfig.MetaFormat format, long capacity, int blockAlign, int headerBytes,
            long slotBytes, long metaTotalBytes, V2Layout v2) {}

    /**
     * Opens {@code device} exclusively with the options' engine and migrates it.
     *
     * @throws MigrationRefusedException nothing was written (in use, same format, damaged, too small...)
     * @throws IOException a write failed part way: the message says which format the device now opens in
     */
    public static Result migrate(Path device, Options options) throws IOException {
        if (!Files.exists(device)) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.NO_STORE, "cannot migrate " + device
                    + ": it does not exist; name the file or device that holds the store");
        }
        if (options.engine() == IoEngine.MEMORY) {
            throw new IllegalArgumentException("migrate: the memory engine has no device to migrate; use io_uring, posix"
                    + " or uring_cmd");
        }
        BlockDevice d;
        try {
            d = BlockDevices.open(device, DeviceOptions.of(options.engine()).withBuffers(1 << 20, 0).withExclusive(true));
        } catch (DeviceInUseException e) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.IN_USE, "cannot migrate " + device
                    + ": " + e.getMessage() + ". Nothing was changed", e);
        }
        try (d) {
            return migrate(d, device.toString(), options);
        }
    }

    /**
     * Migrates the store on {@code device}, which the caller owns (and must not let anything else use
     * meanwhile); {@code devicePath} is what the configuration and the lmcache_v1 checkpoint name.
     */
    public static Result migrate(BlockDevice device, String devicePath, Options options) throws IOException {
        Source src = findStore(device, devicePath, options);
        if (src.format() == options.target()) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.SAME_FORMAT, devicePath
                    + " already holds an " + src.format().configName() + " store: nothing to migrate (use --to "
                    + other(src.format()).configName() + " to convert it)");
        }
        RawBlockCoreConfig config = RawBlockCoreConfig.builder(devicePath, pick(options.slotBytes(), src.slotBytes()))
                .capacityBytes(pick(options.capacityBytes(), src.capacity()))
                .blockAlign(pick(options.blockAlign(), src.blockAlign()))
                .headerBytes(pick(options.headerBytes(), src.headerBytes()))
                .metaTotalBytes(pick(options.metaTotalBytes(), src.metaTotalBytes()))
                .metaFormat(src.format()).metaEnablePeriodic(false).metaVerifyOnLoad(false)
                .ioEngine(device.engine()).build();
        RawBlockCore core;
        try {
            core = RawBlockCore.open(config, device);
        } catch (StoreRefusedException e) {
            throw new MigrationRefusedException(e.reason() == StoreRefusedException.Reason.LAYOUT_MISMATCH
                    ? MigrationRefusedException.Reason.LAYOUT_MISMATCH : MigrationRefusedException.Reason.UNREADABLE,
                    "cannot migrate " + devicePath + ": " + e.getMessage(), e);
        }
        Plan plan;
        try {
            plan = src.format() == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? planToV2(core, devicePath)
                    : planToV1(core, devicePath, src.v2());
        } catch (IOException | RuntimeException e) {
            closeQuietly(core, e);
            throw e;
        }
        return plan.run(core);
    }

    private static <T> T pick(T given, T stored) {
        return given != null ? given : stored;
    }

    private static RawBlockCoreConfig.MetaFormat other(RawBlockCoreConfig.MetaFormat f) {
        return f == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2
                : RawBlockCoreConfig.MetaFormat.LMCACHE_V1;
    }

    /** The parts of an open store, as its format sees them. */
    private static StoreContext parts(RawBlockCore core) {
        return StoreInternals.of(core).context();
    }

    private static void closeQuietly(RawBlockCore core, Throwable cause) {
        try {
            core.close();
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    // ------------------------------------------------------------------ what the device holds

    private static Source findStore(BlockDevice device, String path, Options o) throws IOException {
        int blockAlign = o.blockAlign() != null ? o.blockAlign() : RawBlockCoreConfig.DEFAULT_BLOCK_ALIGN;
        if (device.sizeBytes() < 4L * blockAlign) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.NO_STORE, "cannot migrate " + path
                    + ": it holds " + device.sizeBytes() + " bytes, too few for a store");
        }
        FormatProbe.Found found = FormatProbe.detect(device, blockAlign);
        return switch (found.kind()) {
            case FDPBLOCK_V2 -> {
                V2Layout l = found.layout();
                yield new Source(RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, l.capacityBytes(), l.blockAlign(),
                        l.headerBytes(), l.slotBytes(), l.metaTotalBytes(), l);
            }
            case FDPBLOCK_V2_DAMAGED -> throw new MigrationRefusedException(MigrationRefusedException.Reason.UNREADABLE,
                    "cannot migrate " + path + ": both fdpblock_v2 superblocks are damaged (bad CRC or impossible"
                    + " geometry), so its layout is unknown. Nothing was changed");
            case LMCACHE_V1, NONE -> fromCheckpoint(device, path, o, blockAlign, found.kind());
        };
    }

    /** lmcache_v1: the layout its newest readable checkpoint records, options filling what it does not. */
    private static Source fromCheckpoint(BlockDevice device, String path, Options o, int blockAlign,
            FormatProbe.Found.Kind kind) throws IOException {
        long meta = o.metaTotalBytes() != null ? o.metaTotalBytes()
                : device.sizeBytes() / (2L * blockAlign) * (2L * blockAlign); // container 0 says where container 1 is
        List<MetadataArea.Container> containers = new MetadataArea(device, blockAlign, meta).readContainers();
        List<MetadataArea.Container> candidates = o.metaTotalBytes() != null ? MetadataArea.newestFirst(containers)
                : containers.get(0).valid() ? List.of(containers.get(0)) : List.of();
        if (candidates.isEmpty()) {
            if (kind == FormatProbe.Found.Kind.NONE && o.metaTotalBytes() == null) {
                throw new MigrationRefusedException(MigrationRefusedException.Reason.NO_STORE, "cannot migrate " + path
                        + ": it holds no store (no lmcache_v1 container header at offset 0, no fdpblock_v2 superblock)."
                        + " If it is an lmcache_v1 store whose container 0 is gone, give --meta-total-bytes (its"
                        + " meta_total_bytes) so that container 1 can be found");
            }
            if (o.metaTotalBytes() == null) {
                throw new MigrationRefusedException(MigrationRefusedException.Reason.NEEDS_OPTION, "cannot migrate "
                        + path + ": lmcache_v1 container 0 is unreadable (" + containers.get(0).problem() + "), and it"
                        + " is what records where container 1 is: give --meta-total-bytes (the store's"
                        + " meta_total_bytes). Nothing was changed");
            }
            throw new MigrationRefusedException(kind == FormatProbe.Found.Kind.NONE
                    ? MigrationRefusedException.Reason.NO_STORE : MigrationRefusedException.Reason.UNREADABLE,
                    "cannot migrate " + path + ": no readable lmcache_v1 checkpoint with meta_total_bytes " + meta
                    + " (container 0: " + containers.get(0).problem() + "; container 1 at "
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
            return new Source(RawBlockCoreConfig.MetaFormat.LMCACHE_V1,
                    field(root, "capacity_bytes", o.capacityBytes(), "--capacity-bytes", path, where),
                    (int) (long) field(root, "block_align", o.blockAlign() == null ? null : (long) o.blockAlign(),
                            "--block-align", path, where),
                    (int) (long) field(root, "header_bytes", o.headerBytes() == null ? null : (long) o.headerBytes(),
                            "--header-bytes", path, where),
                    field(root, "slot_bytes", o.slotBytes(), "--slot-bytes", path, where),
                    field(root, "meta_total_bytes", o.metaTotalBytes(), "--meta-total-bytes", path, where), null);
        }
        throw new MigrationRefusedException(MigrationRefusedException.Reason.UNREADABLE, "cannot migrate " + path
                + ": its lmcache_v1 checkpoints cannot be read (" + String.join("; ", problems) + "). Nothing was changed");
    }

    /** A layout field: the option when given (the store's open compares it), else what the checkpoint records. */
    private static Long field(JsonNode root, String name, Long given, String option, String path, String where)
            throws MigrationRefusedException {
        if (given != null) {
            return given;
        }
        JsonNode n = root.get(name);
        if (n != null && n.isIntegralNumber() && n.canConvertToLong()) {
            return n.longValue();
        }
        throw new MigrationRefusedException(MigrationRefusedException.Reason.NEEDS_OPTION, "cannot migrate " + path
                + ": its " + where + " does not record " + name + "; give it with " + option + ". Nothing was changed");
    }

    // ------------------------------------------------------------------ the source's keys

    /** Every key of a v1 store, each checked against its slot header (the one rule recovery's verify uses). */
    private static List<Entry> v1Entries(RawBlockCore core, String path) throws IOException {
        List<Map.Entry<String, StoreIndex.Found>> all = new ArrayList<>();
        parts(core).lock().lock();
        try {
            ((HeapKeyIndex) StoreInternals.of(core).index()).forEach((k, e) -> all.add(Map.entry(k, e)));
        } finally {
            parts(core).lock().unlock();
        }
        List<Entry> out = new ArrayList<>(all.size());
        List<String> bad = new ArrayList<>();
        int hb = parts(core).headerBytes();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate((long) BATCH * hb, 4096);
            for (int from = 0; from < all.size(); from += BATCH) {
                int to = Math.min(all.size(), from + BATCH);
                IoBatch b = new IoBatch(to - from);
                for (int i = from; i < to; i++) {
                    b.read(parts(core).slotOffset(all.get(i).getValue().slot()), buf.asSlice((long) (i - from) * hb, hb));
                }
                parts(core).device().execute(b);
                for (int i = from; i < to; i++) {
                    String key = all.get(i).getKey();
                    StoreIndex.Found e = all.get(i).getValue();
                    OnDiskFormat.SlotHeader h = OnDiskFormat.readSlotHeader(buf.asSlice((long) (i - from) * hb, hb));
                    String problem = OnDiskFormat.slotHeaderProblem(h, key, e.size());
                    if (problem == null && h.key() != null && !h.key().equals(key)) {
                        problem = "names another key, " + h.key();
                    }
                    if (problem != null) {
                        bad.add(key + " @ " + parts(core).slotOffset(e.slot()) + ": " + problem);
                    } else {
                        out.add(new Entry(key, e.slot(), e.size(), h.crc32c(), h.hasCrc(), e.meta(), h));
                    }
                }
            }
        }
        refuseDamaged(path, bad, all.size(), "open the store once with fdpblock (meta_verify_on_load, the default,"
                + " drops such entries and its next checkpoint records it), then migrate again");
        return out;
    }

    /** Every key of a v2 store, read back from its slot header and checked against its entry. */
    private static List<Entry> v2Entries(RawBlockCore core, String path) throws IOException {
        List<Entry> out = new ArrayList<>();
        List<String> bad = new ArrayList<>();
        KeyListing.forEach(parts(core).device(), parts(core).dataBase(), parts(core).slotBytes(), parts(core).headerBytes(), (CompactIndex) StoreInternals.of(core).index(),
                parts(core).lock(), true, (h1, h2, slot, size, crc, saltId, h) -> {
                    String problem = KeyListing.headerProblem(h, h1, h2, size);
                    if (problem != null) {
                        bad.add("slot " + slot + " @ " + parts(core).slotOffset(slot) + ": " + problem);
                    } else {
                        out.add(new Entry(h.key(), slot, size, crc, true, null, h));
                    }
                });
        refuseDamaged(path, bad, out.size() + bad.size(), "fdpblock inspect lists them; delete those keys through the"
                + " store (or leave it in fdpblock_v2)");
        return out;
    }

    private static void refuseDamaged(String path, List<String> bad, int total, String what) throws IOException {
        if (!bad.isEmpty()) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.DAMAGED, "cannot migrate " + path + ": "
                    + bad.size() + " of " + total + " entries disagree with their slot header (" + String.join("; ",
                    bad.subList(0, Math.min(5, bad.size()))) + (bad.size() > 5 ? "; ..." : "") + "), so they cannot be"
                    + " carried over as they are. Nothing was changed; " + what);
        }
    }

    private static int nextSlot(RawBlockCore core) {
        parts(core).lock().lock();
        try {
            return parts(core).slots().nextSlot();
        } finally {
            parts(core).lock().unlock();
        }
    }

    private static List<CheckpointCodec.SnapshotEntry> checkpointEntries(RawBlockCore core, List<Entry> entries) {
        List<CheckpointCodec.SnapshotEntry> out = new ArrayList<>(entries.size());
        for (Entry e : entries) {
            out.add(new CheckpointCodec.SnapshotEntry(e.key(), parts(core).slotOffset(e.slot()), e.size(), e.meta()));
        }
        return out;
    }

    private static long payloadBytes(List<Entry> entries) {
        long n = 0;
        for (Entry e : entries) {
            n += e.size();
        }
        return n;
    }

    // ------------------------------------------------------------------ the plans

    /** Checked before anything is written; {@link #run} writes, in an order that survives a crash anywhere. */
    private interface Plan {
        Result run(RawBlockCore core) throws IOException;
    }

    /** Where a write phase is: what a failure message says about the device. */
    private static final class Progress {
        final String path;
        final List<String> steps = new ArrayList<>();
        final AtomicLong written = new AtomicLong();
        String step = "";
        String ifStoppedNow;

        Progress(String path, String ifStoppedNow) {
            this.path = path;
            this.ifStoppedNow = ifStoppedNow;
        }

        void begin(String what) {
            step = what;
        }

        void done(String what) {
            steps.add(what);
        }

        IOException failed(Throwable e) {
            return new IOException("migrate of " + path + " stopped while it " + step + ": " + e.getMessage() + ". "
                    + ifStoppedNow, e);
        }
    }

    private static Plan planToV2(RawBlockCore core, String path) throws IOException {
        BlockDevice device = parts(core).device();
        RawBlockCoreConfig cfg = parts(core).config();
        int ba = cfg.blockAlign();
        long meta = parts(core).dataBase();
        long maxSlots = core.maxSlots();
        long needed = V2Layout.requiredMetaBytes(ba, maxSlots, ba);
        if (meta < needed) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.TARGET_TOO_SMALL, "cannot migrate "
                    + path + " to fdpblock_v2: its metadata for the " + maxSlots + " slots of this device needs " + needed
                    + " bytes (two snapshot areas and a log), but the metadata area is " + meta + " bytes (meta_total_bytes)"
                    + " and the data starts right after it, which a migration never moves. Nothing was changed; keep this"
                    + " store in lmcache_v1, or copy its keys to a device made for fdpblock_v2");
        }
        V2Layout target = V2Layout.create(ba, cfg.headerBytes(), cfg.slotBytes(), parts(core).capacityBytes(), meta, ba,
                RANDOM.nextLong());
        MetadataArea area = new MetadataArea(device, ba, meta);
        long container1 = area.containerOffset(1);
        if (target.logOffset() > container1 || target.maxSlots() != maxSlots || target.dataBase() != parts(core).dataBase()) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.TARGET_TOO_SMALL, "cannot migrate "
                    + path + " to fdpblock_v2: its snapshot areas (up to " + target.logOffset() + ") would overlap"
                    + " lmcache_v1 container 1 (at " + container1 + "), which must hold every key until the superblocks"
                    + " commit. Nothing was changed");
        }
        List<Entry> entries = v1Entries(core, path);
        int nextSlot = nextSlot(core);
        long seqApplied = StoreInternals.of(core).recovered().seq();
        List<MetadataArea.Container> containers = area.readContainers();
        MetadataArea.Container applied = null;
        long highestSeq = 0;
        for (MetadataArea.Container c : containers) {
            if (c.valid() && c.seq() == seqApplied) {
                applied = c;
            }
            if (c.header().magicOk()) {
                highestSeq = Math.max(highestSeq, c.seq());
            }
        }
        CheckpointCodec.Layout v1Layout = new CheckpointCodec.Layout(path, parts(core).capacityBytes(), ba, cfg.headerBytes(),
                cfg.slotBytes(), meta, meta);
        byte[] json = CheckpointCodec.encode(v1Layout, nextSlot, checkpointEntries(core, entries));
        boolean rewriteContainer1 = applied == null || applied.index() != 1;
        if (rewriteContainer1 && json.length > area.payloadRoom()) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.TARGET_TOO_SMALL, "cannot migrate "
                    + path + ": the lmcache_v1 checkpoint of its " + entries.size() + " keys that must be in container 1"
                    + " while the migration runs takes " + json.length + " bytes, but a container holds "
                    + area.payloadRoom() + ". Nothing was changed");
        }
        long oldBytes = applied == null ? 0 : applied.header().payloadLength();
        String oldMeta = "lmcache_v1 checkpoint seq " + seqApplied + " in container " + (applied == null ? "?"
                : applied.index()) + ", " + oldBytes + " bytes of JSON";
        long seqFound = highestSeq;
        return c -> toV2(c, path, entries, nextSlot, target, area, rewriteContainer1, seqFound, json, oldBytes,
                oldMeta);
    }

    private static Result toV2(RawBlockCore core, String path, List<Entry> entries, int nextSlot, V2Layout target,
            MetadataArea area, boolean rewriteContainer1, long highestSeq, byte[] json, long oldBytes, String oldMeta)
            throws IOException {
        BlockDevice device = parts(core).device();
        int ba = target.blockAlign();
        int hb = target.headerBytes();
        RawBlockCoreConfig.MetaFormat from = RawBlockCoreConfig.MetaFormat.LMCACHE_V1;
        Progress p = new Progress(path, "The device still holds the lmcache_v1 store with every key (it opens as"
                + " before); run migrate again to finish");
        p.begin("closed the lmcache_v1 store it had opened");
        try {
            core.close(); // nothing changed since it opened: it writes nothing
        } catch (IOException | RuntimeException e) {
            throw p.failed(e);
        }
        CompactIndex index = new CompactIndex(target.maxSlots());
        try (Arena arena = Arena.ofShared()) {
            SaltTable salts = new SaltTable();
            int completed = 0;
            int metaDropped = 0;
            List<Entry> incomplete = new ArrayList<>();
            for (Entry e : entries) {
                if (!e.hasCrc() || (e.header().key() == null
                        && OnDiskFormat.SLOT_KEY_OFFSET + 2 + utf8(e.key()).length <= hb)) {
                    incomplete.add(e);
                }
            }
            p.begin("completed the slot headers LMCache wrote");
            Map<Integer, Integer> crcBySlot = incomplete.isEmpty() ? Map.of()
                    : completeSlotHeaders(core, incomplete, arena, p.written);
            if (!incomplete.isEmpty()) {
                completed = incomplete.size();
                p.done("completed " + completed + " slot headers written by LMCache with their key and CRC32C (bytes"
                        + " 0..23, which LMCache reads, unchanged)");
            }
            for (Entry e : entries) {
                int crc = e.hasCrc() ? e.crc() : crcBySlot.get(e.slot());
                int saltId = Math.max(0, salts.idOf(SaltTable.saltOf(e.key()))); // every id taken: no salt, as a put does
                index.put(new StoreKey(e.key()), e.slot(), e.size(), crc, true, null, saltId);
                salts.added(saltId);
                if (hasObjectMeta(e.meta())) {
                    metaDropped++;
                }
            }
            if (rewriteContainer1) {
                long seq = highestSeq + 1 + (highestSeq + 1) % 2; // even: container 1, newer than any header found
                p.begin("wrote lmcache_v1 checkpoint seq " + seq + " into container 1");
                area.write(seq, json, PlacementId.NONE);
                p.written.addAndGet(ba + OnDiskFormat.roundUp(json.length, ba));
                p.done("wrote every key into lmcache_v1 container 1 (checkpoint seq " + seq + ", " + json.length
                        + " bytes), which holds the store while container 0 is overwritten");
            }
            p.begin("wrote the fdpblock_v2 snapshot");
            ReentrantLock lock = new ReentrantLock();
            Snapshots.Header snap = Snapshots.write(device, target, 0, 1, 0, snapshotSource(index, salts, nextSlot), lock,
                    PlacementId.NONE, p.written, Snapshots.Pacer.NONE);
            p.done("wrote fdpblock_v2 snapshot seq 1 (" + snap.entries() + " entries, " + snap.bodyBytes() + " bytes)"
                    + " into snapshot area 0");
            p.begin("wrote the fdpblock_v2 superblocks");
            p.ifStoppedNow = "The device holds every key, as lmcache_v1 (container 1) or, if superblock A landed, as"
                    + " fdpblock_v2; run migrate again (it finishes, or says there is nothing left to do)";
            V2Format.writeSuperblocks(device, target, arena, PlacementId.NONE); // no FDP discovery here
            p.written.addAndGet(2L * ba);
            p.ifStoppedNow = "The device holds the fdpblock_v2 store with every key (committed); what is left only"
                    + " tidies up";
            p.done("wrote the fdpblock_v2 superblocks (copy B, then A over lmcache_v1 container 0's header): committed");
            p.begin("zeroed lmcache_v1 container 1's header");
            zero(device, area.containerOffset(1), ba, arena);
            p.written.addAndGet(ba);
            p.done("zeroed lmcache_v1 container 1's header, so that nothing on the device reads as a checkpoint");
            long newBytes = 3L * ba + OnDiskFormat.roundUp(snap.bodyBytes(), ba);
            String newMeta = "fdpblock_v2 superblocks and snapshot seq 1 of " + snap.entries() + " entries ("
                    + snap.bodyBytes() + " bytes of body); log of " + target.logBytes() + " bytes, empty";
            return new Result(path, from, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, entries.size(), payloadBytes(entries),
                    target.metaTotalBytes(), oldBytes, oldMeta, newBytes, newMeta, p.written.get(), completed,
                    metaDropped, List.copyOf(p.steps));
        } catch (IOException | RuntimeException e) {
            throw p.failed(e);
        } finally {
            index.close();
        }
    }

    private static boolean hasObjectMeta(ObjectMeta m) {
        return m != null && (m.shape() != null || m.dtype() != null || m.fmt() != null || m.cachedPositions() != null);
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Rewrites the headers of {@code entries} (written by LMCache: no key, no CRC32C) in fdpblock's form,
     * bytes 0..23 as they were, then flushes.
     *
     * @return by slot, each entry's payload CRC32C (computed from the payload on the device when the header had none)
     */
    private static Map<Integer, Integer> completeSlotHeaders(RawBlockCore core, List<Entry> entries, Arena arena, AtomicLong written)
            throws IOException {
        int ba = parts(core).config().blockAlign();
        int hb = parts(core).headerBytes();
        long maxPayload = OnDiskFormat.roundUp(core.maxPayloadBytes(), ba);
        int perBatch = (int) Math.max(1, Math.min(BATCH, (64L << 20) / maxPayload));
        Map<Integer, Integer> crcs = new HashMap<>();
        MemorySegment payloads = arena.allocate(perBatch * maxPayload, 4096);
        MemorySegment headers = arena.allocate((long) perBatch * hb, 4096);
        for (int from = 0; from < entries.size(); from += perBatch) {
            int to = Math.min(entries.size(), from + perBatch);
            IoBatch b = new IoBatch(to - from);
            for (int i = from; i < to; i++) {
                Entry e = entries.get(i);
                if (!e.hasCrc()) {
                    b.read(parts(core).slotOffset(e.slot()) + hb, payloads.asSlice((i - from) * maxPayload,
                            OnDiskFormat.roundUp(e.size(), ba)));
                }
            }
            if (b.size() > 0) {
                parts(core).device().execute(b);
            }
            b = new IoBatch(to - from);
            for (int i = from; i < to; i++) {
                Entry e = entries.get(i);
                int crc = e.hasCrc() ? e.crc() : OnDiskFormat.crc32c(payloads.asSlice((i - from) * maxPayload, e.size()));
                crcs.put(e.slot(), crc);
                MemorySegment h = headers.asSlice((long) (i - from) * hb, hb);
                OnDiskFormat.writeSlotHeader(h, e.header().identity(), e.size(), crc, utf8(e.key()));
                b.write(parts(core).slotOffset(e.slot()), h);
            }
            parts(core).device().execute(b);
            written.addAndGet((long) (to - from) * hb);
        }
        parts(core).device().flush(); // durable before any metadata that relies on them
        return crcs;
    }

    private static Snapshots.Source snapshotSource(CompactIndex index, SaltTable salts, int nextSlot) {
        return Snapshots.Source.of(index, salts::definitions, () -> nextSlot, s -> 0);
    }

    private static Plan planToV1(RawBlockCore core, String path, V2Layout source) throws IOException {
        BlockDevice device = parts(core).device();
        int ba = source.blockAlign();
        long meta = source.metaTotalBytes();
        MetadataArea area = new MetadataArea(device, ba, meta);
        if (area.containerOffset(1) < source.logOffset()) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.TARGET_TOO_SMALL, "cannot migrate "
                    + path + " to lmcache_v1: container 1 (at " + area.containerOffset(1) + ") would overlap the"
                    + " fdpblock_v2 snapshot areas (up to " + source.logOffset() + "), which hold every key until the"
                    + " migration commits. Nothing was changed");
        }
        List<Entry> entries = v2Entries(core, path);
        int nextSlot = nextSlot(core);
        CheckpointCodec.Layout v1Layout = new CheckpointCodec.Layout(path, source.capacityBytes(), ba,
                source.headerBytes(), source.slotBytes(), meta, meta);
        byte[] json = CheckpointCodec.encode(v1Layout, nextSlot, checkpointEntries(core, entries));
        if (json.length > area.payloadRoom()) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.TARGET_TOO_SMALL, "cannot migrate "
                    + path + " to lmcache_v1: the checkpoint of its " + entries.size() + " keys takes " + json.length
                    + " bytes of JSON, but a container of its metadata area (" + meta + " bytes, where the data starts,"
                    + " which a migration never moves) holds " + area.payloadRoom() + ". Nothing was changed; delete"
                    + " keys until it fits, or keep the store in fdpblock_v2");
        }
        List<Snapshots.Header> headers = Snapshots.headers(device, source);
        Map<String, Object> status = core.status();
        long logInUse = ((Number) status.get("log_bytes_since_snapshot")).longValue();
        Snapshots.Header newest = headers.isEmpty() ? null : headers.get(0);
        long oldBytes = (newest == null ? 0 : newest.bodyBytes()) + logInUse;
        String oldMeta = "fdpblock_v2 " + (newest == null ? "no snapshot" : "snapshot seq " + newest.seq() + " ("
                + newest.entries() + " entries, " + newest.bodyBytes() + " bytes of body)") + " and " + logInUse
                + " bytes of log after it";
        return c -> toV1(c, path, entries, json, area, oldBytes, oldMeta);
    }

    private static Result toV1(RawBlockCore core, String path, List<Entry> entries, byte[] json, MetadataArea area,
            long oldBytes, String oldMeta) throws IOException {
        BlockDevice device = parts(core).device();
        int ba = parts(core).config().blockAlign();
        long meta = parts(core).dataBase();
        Progress p = new Progress(path, "The device still holds the fdpblock_v2 store with every key (it opens as"
                + " before); run migrate again to finish");
        try (Arena arena = Arena.ofShared()) {
            long before = ((Number) core.status().get("meta_bytes_written")).longValue();
            p.begin("wrote a fresh fdpblock_v2 snapshot");
            try {
                core.checkpointNow(); // recovery then needs no log: container 1 may go into the log's region
                p.written.addAndGet(((Number) core.status().get("meta_bytes_written")).longValue() - before);
            } catch (IOException | RuntimeException e) {
                closeQuietly(core, e);
                throw e;
            }
            core.close();
            p.done("wrote a fresh fdpblock_v2 snapshot, so that recovery needs none of the log's region");
            p.begin("wrote lmcache_v1 checkpoint seq 2 into container 1");
            area.write(2, json, PlacementId.NONE);
            p.written.addAndGet(ba + OnDiskFormat.roundUp(json.length, ba));
            p.done("wrote every key into lmcache_v1 container 1 (checkpoint seq 2, " + json.length + " bytes), in the"
                    + " old log's region");
            p.begin("zeroed the fdpblock_v2 superblocks");
            zero(device, 0, ba, arena);
            p.ifStoppedNow = "The device holds every key, as fdpblock_v2 (superblock copy B) or, if its zeroing landed,"
                    + " as lmcache_v1 (container 1, with meta_total_bytes " + meta + "); run migrate again (it"
                    + " finishes, or says there is nothing left to do)";
            zero(device, ba, ba, arena);
            p.written.addAndGet(2L * ba);
            p.ifStoppedNow = "The device holds the lmcache_v1 store with every key in container 1 (committed; it opens"
                    + " with meta_total_bytes " + meta + ", and its next checkpoint writes container 0)";
            p.done("zeroed the fdpblock_v2 superblocks (A, then B): committed, the store is lmcache_v1");
            p.begin("wrote lmcache_v1 checkpoint seq 3 into container 0");
            area.write(3, json, PlacementId.NONE);
            p.written.addAndGet(ba + OnDiskFormat.roundUp(json.length, ba));
            p.done("wrote lmcache_v1 checkpoint seq 3 into container 0");
        } catch (IOException | RuntimeException e) {
            throw p.failed(e);
        }
        String newMeta = "lmcache_v1 checkpoints seq 2 and 3 (containers 1 and 0), " + json.length + " bytes of JSON"
                + " each";
        return new Result(path, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, RawBlockCoreConfig.MetaFormat.LMCACHE_V1,
                entries.size(), payloadBytes(entries), meta, oldBytes, oldMeta, 2L * json.length, newMeta,
                p.written.get(), 0, 0, List.copyOf(p.steps));
    }

    /** Zeroes one block and flushes. */
    private static void zero(BlockDevice device, long offset, int blockAlign, Arena arena) throws IOException {
        MemorySegment z = arena.allocate(blockAlign, 4096);
        IoBatch b = new IoBatch(1);
        b.write(offset, z);
        device.execute(b);
        device.flush();
    }
}
