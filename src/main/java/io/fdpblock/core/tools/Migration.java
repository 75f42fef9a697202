package io.fdpblock.core.tools;

import io.fdpblock.core.Detection;
import io.fdpblock.core.FormatMigration;
import io.fdpblock.core.FormatRefusedException;
import io.fdpblock.core.ProbeContext;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.StoreEntry;
import io.fdpblock.core.StoreFormat;
import io.fdpblock.core.StoreFormats;
import io.fdpblock.core.StoreLayout;
import io.fdpblock.core.StoreRefusedException;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.linux.DeviceInUseException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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
 *
 * <p>Built on the formats, not on the store's internals: the store's format says what layout it records
 * ({@link StoreFormat#recordedLayout}), the store lists its entries checked against their slot headers
 * ({@link RawBlockCore#forEachEntry}), and each format writes its own part of the steps above, in the
 * order {@link FormatMigration} sets; this class checks, orders and reports.
 */
public final class Migration {
    private Migration() {}

    /**
     * What to convert to, with which I/O engine, and the layout values the store does not record (each,
     * when given, must agree with what it records; null = read it from the store).
     */
    public record Options(RawBlockCoreConfig.MetaFormat target, IoEngine engine, StoreLayout.Given layout) {
        public Options {
            if (target == null) {
                throw new IllegalArgumentException("migrate: the target format is required (fdpblock_v2 or lmcache_v1)");
            }
            engine = engine == null ? IoEngine.IO_URING : engine;
            layout = layout == null ? StoreLayout.Given.NONE : layout;
        }

        public static Options to(RawBlockCoreConfig.MetaFormat target) {
            return new Options(target, IoEngine.IO_URING, StoreLayout.Given.NONE);
        }

        public Options withEngine(IoEngine e) {
            return new Options(target, e, layout);
        }

        public Options withLayout(StoreLayout.Given given) {
            return new Options(target, engine, given);
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

    /** The store found on the device: its format and the layout it records. */
    private record Found(StoreFormat format, StoreLayout layout) {}

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
        Found src = findStore(device, devicePath, options);
        StoreFormat from = src.format();
        StoreFormat to = StoreFormats.named(options.target().configName());
        if (from == to) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.SAME_FORMAT, devicePath
                    + " already holds an " + from.name() + " store: nothing to migrate (use --to " + String.join(" or ",
                    StoreFormats.all().stream().filter(f -> f != from).map(StoreFormat::name).toList())
                    + " to convert it)");
        }
        StoreLayout.Given given = options.layout();
        StoreLayout recorded = src.layout();
        StoreLayout layout = new StoreLayout(pick(given.capacityBytes(), recorded.capacityBytes()),
                pick(given.blockAlign(), recorded.blockAlign()), pick(given.headerBytes(), recorded.headerBytes()),
                pick(given.slotBytes(), recorded.slotBytes()), pick(given.metaTotalBytes(), recorded.metaTotalBytes()));
        RawBlockCoreConfig config = RawBlockCoreConfig.builder(devicePath, layout.slotBytes())
                .capacityBytes(layout.capacityBytes()).blockAlign(layout.blockAlign()).headerBytes(layout.headerBytes())
                .metaTotalBytes(layout.metaTotalBytes()).metaFormat(RawBlockCoreConfig.MetaFormat.parse(from.name()))
                .metaEnablePeriodic(false).metaVerifyOnLoad(false).ioEngine(device.engine()).build();
        RawBlockCore core;
        try {
            core = RawBlockCore.open(config, device);
        } catch (StoreRefusedException e) {
            throw new MigrationRefusedException(e.reason() == StoreRefusedException.Reason.LAYOUT_MISMATCH
                    ? MigrationRefusedException.Reason.LAYOUT_MISMATCH : MigrationRefusedException.Reason.UNREADABLE,
                    "cannot migrate " + devicePath + ": " + e.getMessage(), e);
        }
        FormatMigration.Target target;
        try {
            target = refusable(() -> to.migrationTarget(device, layout, devicePath), devicePath, " to " + to.name());
        } catch (IOException | RuntimeException e) {
            closeQuietly(core, e);
            throw e;
        }
        try (target) {
            Plan plan;
            try {
                plan = plan(core, from, target, layout, devicePath, to.name());
            } catch (IOException | RuntimeException e) {
                closeQuietly(core, e);
                throw e;
            }
            return run(core, plan, target, new FormatMigration.Progress(devicePath, from.name(),
                    plan.source().heldIn(), to.name(), target.heldIn()), layout);
        }
    }

    /** What was checked before anything is written: the store's entries, and the metadata they replace. */
    private record Plan(FormatMigration.Source source, List<StoreEntry> entries, FormatMigration.Metadata old) {}

    /**
     * Everything checked before anything is written: the target writes nowhere the store is kept meanwhile,
     * every entry agrees with its slot header, and both formats' metadata fit.
     */
    private static Plan plan(RawBlockCore core, StoreFormat from, FormatMigration.Target target, StoreLayout layout,
            String path, String to) throws IOException {
        FormatMigration.Source source = from.migrationSource(core, layout, path);
        FormatMigration.Extent keeps = source.keeps();
        FormatMigration.Extent writes = target.writesBeforeCommit();
        if (writes.overlaps(keeps)) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.TARGET_TOO_SMALL, "cannot migrate "
                    + path + " to " + to + ": " + writes.what() + " (bytes " + writes.from() + " to " + writes.to()
                    + ") would overlap " + keeps.what() + " (bytes " + keeps.from() + " to " + keeps.to() + "), which"
                    + " keep every key until the migration commits. Nothing was changed");
        }
        List<StoreEntry> entries = entries(core, path, layout, source);
        int nextSlot = ((Number) core.status().get("next_slot")).intValue();
        refusable(() -> {
            target.plan(entries, nextSlot);
            return null;
        }, path, " to " + to);
        return new Plan(source, entries, refusable(() -> source.plan(entries, nextSlot), path, ""));
    }

    private static <T> T pick(T given, T stored) {
        return given != null ? given : stored;
    }

    private static void closeQuietly(RawBlockCore core, Throwable cause) {
        try {
            core.close();
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    /** What may throw a format's refusal. */
    private interface Refusable<T> {
        T call() throws IOException;
    }

    /** Runs {@code what}, a format's refusal becoming the migration's: "cannot migrate PATH{to}: ...". */
    private static <T> T refusable(Refusable<T> what, String path, String to) throws IOException {
        try {
            return what.call();
        } catch (FormatRefusedException e) {
            throw new MigrationRefusedException(switch (e.reason()) {
                case NO_STORE -> MigrationRefusedException.Reason.NO_STORE;
                case UNREADABLE -> MigrationRefusedException.Reason.UNREADABLE;
                case NEEDS_SETTING -> MigrationRefusedException.Reason.NEEDS_OPTION;
                case DOES_NOT_FIT -> MigrationRefusedException.Reason.TARGET_TOO_SMALL;
            }, "cannot migrate " + path + to + ": " + e.getMessage(), e);
        }
    }

    // ------------------------------------------------------------------ what the device holds

    /**
     * The store's format, by the rule a store's open uses ({@link StoreFormats#find}), and the layout it
     * records. With no format's header on the device, each format is asked whether it still finds its store
     * (lmcache_v1's container 1, where a given {@code meta_total_bytes} puts it).
     */
    private static Found findStore(BlockDevice device, String path, Options o) throws IOException {
        StoreLayout.Given given = o.layout();
        int blockAlign = given.blockAlign() != null ? given.blockAlign() : RawBlockCoreConfig.DEFAULT_BLOCK_ALIGN;
        if (device.sizeBytes() < 4L * blockAlign) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.NO_STORE, "cannot migrate " + path
                    + ": it holds " + device.sizeBytes() + " bytes, too few for a store");
        }
        ProbeContext probe = ProbeContext.ofDevice(device, blockAlign, given.metaTotalBytes());
        StoreFormats.Found found = StoreFormats.find(probe);
        if (found != null && found.detection().kind() != Detection.Kind.TRACES) {
            return new Found(found.format(), refusable(() -> found.format().recordedLayout(probe, found.detection(),
                    given), path, ""));
        }
        MigrationRefusedException refused = null;
        for (StoreFormat f : StoreFormats.all()) {
            Detection d = found != null && found.format() == f ? found.detection() : Detection.NONE;
            try {
                StoreLayout l = refusable(() -> f.recordedLayout(probe, d, given), path, "");
                if (l != null) {
                    return new Found(f, l);
                }
            } catch (MigrationRefusedException e) {
                refused = refused == null ? e : refused;
            }
        }
        throw refused != null ? refused : new MigrationRefusedException(MigrationRefusedException.Reason.NO_STORE,
                "cannot migrate " + path + ": it holds no store of any format (" + String.join(", ",
                StoreFormats.all().stream().map(StoreFormat::name).toList()) + ")");
    }

    // ------------------------------------------------------------------ the source's keys

    /** Every entry of the store, each checked against its slot header by its format's rule; disagreement refuses. */
    private static List<StoreEntry> entries(RawBlockCore core, String path, StoreLayout layout,
            FormatMigration.Source source) throws IOException {
        List<StoreEntry> out = new ArrayList<>();
        List<String> bad = new ArrayList<>();
        int[] total = {0};
        core.forEachEntry(e -> {
            total[0]++;
            if (e.problem() == null) {
                out.add(e);
            } else {
                bad.add((e.key() != null ? e.key() : "slot " + e.slot()) + " @ " + layout.slotOffset(e.slot()) + ": "
                        + e.problem());
            }
        });
        if (!bad.isEmpty()) {
            throw new MigrationRefusedException(MigrationRefusedException.Reason.DAMAGED, "cannot migrate " + path + ": "
                    + bad.size() + " of " + total[0] + " entries disagree with their slot header (" + String.join("; ",
                    bad.subList(0, Math.min(5, bad.size()))) + (bad.size() > 5 ? "; ..." : "") + "), so they cannot be"
                    + " carried over as they are. Nothing was changed; " + source.whenEntriesDisagree());
        }
        return out;
    }

    private static long payloadBytes(List<StoreEntry> entries) {
        long n = 0;
        for (StoreEntry e : entries) {
            n += e.size();
        }
        return n;
    }

    // ------------------------------------------------------------------ the writes

    /**
     * The steps, in {@link FormatMigration}'s order: each format writes its part, flushed before the next;
     * a failure says what the device holds at that point.
     */
    private static Result run(RawBlockCore core, Plan plan, FormatMigration.Target target, FormatMigration.Progress p,
            StoreLayout layout) throws IOException {
        FormatMigration.Source source = plan.source();
        try {
            source.beforeClose(p);
        } catch (IOException | RuntimeException e) {
            closeQuietly(core, e);
            throw p.failed(e);
        }
        FormatMigration.Written written;
        try {
            p.begin("closed the " + p.source() + " store it had opened");
            core.close(); // nothing changed since it opened but what beforeClose made durable: it writes nothing
            target.prepareSlots(p);
            source.confine(p);
            target.writeBody(p);
            target.commit(p);
            source.erase(p);
            written = target.finish(p);
        } catch (IOException | RuntimeException e) {
            throw p.failed(e);
        }
        List<StoreEntry> entries = plan.entries();
        return new Result(p.path(), RawBlockCoreConfig.MetaFormat.parse(p.source()),
                RawBlockCoreConfig.MetaFormat.parse(p.target()), entries.size(), payloadBytes(entries),
                layout.metaTotalBytes(), plan.old().bytes(), plan.old().what(), written.metadata().bytes(),
                written.metadata().what(), p.written().get(), written.slotHeadersCompleted(),
                written.objectMetaDropped(), p.steps());
    }
}
