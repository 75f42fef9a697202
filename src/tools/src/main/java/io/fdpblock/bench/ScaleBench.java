package io.fdpblock.bench;

import io.fdpblock.core.LoadRequest;
import io.fdpblock.core.PutOutcome;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig.MetaFormat;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.linux.DeviceInUseException;
import io.fdpblock.linux.IoMemory;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.tools.util.Meminfo;
import io.fdpblock.tools.util.Sizes;
import io.fdpblock.tools.util.Threads;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.SynchronizedHistogram;

import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The scale benchmark ({@code fdpblock bench-scale}): fills a store with N entries through
 * {@link RawBlockCore} on the io_uring engine (LMCache-style keys of 112 characters, {@link ScaleKeys}),
 * for each metadata format, and measures what a large store costs:
 *
 * <ul>
 * <li>index memory per entry: the heap the open store holds after a full GC (MemoryMXBean, before the
 * store was opened and after the fill) plus the index's off-heap table ({@code index_off_heap_bytes});</li>
 * <li>metadata bytes written per committed put, counted at the device ({@link MetaWriteCounter}: every
 * write below the data area, from open to close);</li>
 * <li>put latency (HdrHistogram, submit to completion of one put call) split into puts that overlapped a
 * metadata snapshot (fdpblock_v2) or checkpoint (lmcache_v1) and puts that overlapped none
 * (the status' {@code meta_snapshot_epoch}, watched every 0.5 ms), and the longest stretch in which no put completed, in and
 * out of snapshots;</li>
 * <li>reopen: close, open again, count the keys, then check a sample of them (exists, and loads whose
 * bytes must be their own).</li>
 * </ul>
 *
 * The device is a file with its blocks reserved, behind a loop device by default (512-byte blocks, so
 * 1 KiB slots: {@link LoopDevice}), or a block device; each run's file is removed afterwards. The slot is the
 * smallest the target's block size allows: {@code block_align} = {@code header_bytes} = the logical
 * block size, {@code slot_bytes} twice that, a payload of one block; the device holds exactly N slots,
 * so the index is measured on a full device.
 */
public final class ScaleBench {
    public static final long DEFAULT_ENTRIES = 10_000_000L;
    /** lmcache_v1 rewrites its whole index as one JSON document: beyond this many entries by default it is not run. */
    public static final long DEFAULT_V1_MAX_ENTRIES = 2_000_000L;
    /** The most entries a run takes (the store's slot limit is about 2^31). */
    public static final long MAX_ENTRIES = 1_000_000_000L;
    /** The fewest slots {@code --keep-data-slots} may keep. */
    public static final long MIN_KEPT_DATA_SLOTS = 1_000L;

    // The targets of the scale bench: what an HC-SSD store of 10M+ entries needs.
    static final double TARGET_INDEX_BYTES_PER_ENTRY = 48;
    static final double TARGET_REOPEN_ENTRIES_PER_SECOND = 10_000_000 / 15.0;
    static final double TARGET_META_BYTES_PER_PUT = 256;
    static final double TARGET_P999_RATIO = 2.0;
    static final double TARGET_STALL_RATIO = 2.0;
    static final double TARGET_WORST_PUT_RATIO = 2.0;

    /** Where the store lives. */
    public enum Backing {
        /** A file in {@code dir}, behind a loop device (512-byte blocks). */
        LOOP,
        /** A file in {@code dir}, used as it is (its file system's block size, 4 KiB on ext4). */
        FILE,
        /** The block device {@code device}: its first bytes are overwritten. */
        DEVICE
    }

    /**
     * @param entries entries of the fdpblock_v2 run
     * @param v1Entries entries of the lmcache_v1 run
     * @param dir where the device files go (LOOP, FILE)
     * @param device the block device (DEVICE)
     * @param json where the results go, or null
     * @param keysPerPut keys per put call
     * @param putsInFlight put calls in flight
     * @param metaSyncIntervalMs fdpblock_v2's {@code meta_sync_interval_ms}
     * @param checkpointIntervalSec lmcache_v1's {@code meta_checkpoint_interval_sec}
     * @param keepDataSlots 0, or keep only the bytes of the last this many slots in the device file (LOOP,
     *     FILE): older slots are punched out behind the fill, for runs larger than the disk
     * @param command the command line, for the results
     */
    public record Options(long entries, long v1Entries, List<MetaFormat> formats, Backing backing, Path dir, Path device,
            Path json, int keysPerPut, int putsInFlight, int metaSyncIntervalMs, int checkpointIntervalSec,
            long keepDataSlots, boolean progress, String command) {
        public Options {
            if (entries < 1 || entries > MAX_ENTRIES) {
                throw new IllegalArgumentException("--entries " + entries + " is out of range: entries must be in 1.."
                        + MAX_ENTRIES);
            }
            if (v1Entries < 1 || v1Entries > MAX_ENTRIES) {
                throw new IllegalArgumentException("--v1-entries " + v1Entries + " is out of range: entries must be in"
                        + " 1.." + MAX_ENTRIES);
            }
            if (formats == null || formats.isEmpty()) {
                throw new IllegalArgumentException("--meta-format selects no format: use fdpblock_v2, lmcache_v1 or both");
            }
            formats = List.copyOf(formats);
            if (backing == null) {
                throw new IllegalArgumentException("backing is required");
            }
            if (backing == Backing.DEVICE ? device == null : dir == null) {
                throw new IllegalArgumentException(backing == Backing.DEVICE ? "--device is required" : "--dir is required");
            }
            if (keysPerPut < 1 || keysPerPut > 1024) {
                throw new IllegalArgumentException("--keys-per-put " + keysPerPut + " is out of range: keys per put call"
                        + " must be in 1..1024");
            }
            if (putsInFlight < 1 || putsInFlight > 256) {
                throw new IllegalArgumentException("--puts-in-flight " + putsInFlight + " is out of range: put calls in"
                        + " flight must be in 1..256");
            }
            if (metaSyncIntervalMs < 0) {
                throw new IllegalArgumentException("--meta-sync-interval-ms " + metaSyncIntervalMs + " is out of range:"
                        + " it must be at least 0 (0 = a put is acknowledged once its log record is durable)");
            }
            if (keepDataSlots != 0 && (keepDataSlots < MIN_KEPT_DATA_SLOTS || backing == Backing.DEVICE)) {
                throw new IllegalArgumentException("--keep-data-slots " + keepDataSlots + (backing == Backing.DEVICE
                        ? " needs a device file (the bytes are punched out of it), not --device"
                        : " is too few: keep at least " + MIN_KEPT_DATA_SLOTS + " slots (the sampled loads are taken"
                                + " among them), or 0 to keep all"));
            }
            if (checkpointIntervalSec < 1) {
                throw new IllegalArgumentException("--checkpoint-interval-sec " + checkpointIntervalSec + " is out of"
                        + " range: lmcache_v1's checkpoint interval must be at least 1 s");
            }
        }

        /** The entries of a format's run. */
        public long entriesOf(MetaFormat f) {
            return f == MetaFormat.LMCACHE_V1 ? v1Entries : entries;
        }
    }

    /** The slot layout of a run: the smallest real slot the target's block size allows. */
    public record Geometry(int blockAlign, int headerBytes, int slotBytes, int payloadBytes) {
        static Geometry forBlockSize(int logicalBlockSize) {
            int b = Math.max(512, logicalBlockSize);
            return new Geometry(b, b, 2 * b, b);
        }

        /** The metadata area of a device of {@code entries} slots in {@code format}. */
        public long metaBytes(MetaFormat format, long entries) {
            return format == MetaFormat.LMCACHE_V1 ? RawBlockCoreConfig.v1MetaBytesFor(blockAlign, entries)
                    : RawBlockCoreConfig.v2MetaBytesFor(blockAlign, entries);
        }

        /** A device of exactly {@code entries} slots. */
        public long capacityBytes(MetaFormat format, long entries) {
            return metaBytes(format, entries) + entries * slotBytes;
        }
    }

    public record Latency(long count, double p50Us, double p99Us, double p999Us, double maxUs) {
        static Latency of(Histogram h) {
            return new Latency(h.getTotalCount(), us(h.getValueAtPercentile(50)), us(h.getValueAtPercentile(99)),
                    us(h.getValueAtPercentile(99.9)), us(h.getMaxValue()));
        }

        private static double us(long nanos) {
            return Math.round(nanos / 100.0) / 10.0;
        }
    }

    public record Config(String device, String backing, int blockAlign, int headerBytes, int slotBytes,
            int payloadBytes, long capacityBytes, long metaTotalBytes, String ioEngine, int metaSyncIntervalMs,
            int metaCheckpointIntervalSec, int keyChars, String exampleKey, int keysPerPut, int putsInFlight) {}

    /** @param dataBytesPunched slot bytes punched out of the device file behind the fill (--keep-data-slots) */
    public record Fill(double seconds, double keysPerSecond, long keysStored, long keysFailed, String firstFailure,
            long dataBytesPunched) {}

    public record Memory(long heapBeforeBytes, long heapAfterBytes, long heapDeltaBytes, long indexOffHeapBytes,
            long storeReportedIndexBytes, double heapBytesPerEntry, double offHeapBytesPerEntry,
            double indexBytesPerEntry) {}

    /** One snapshot seen during the fill: when it started, how long it took, put calls before and during it. */
    public record Span(double startSeconds, double durationMs, long putsBefore, long putsDuring) {}

    public record Snapshots(int count, double minMs, double medianMs, double maxMs, double totalSeconds,
            long putsCompletedDuring, List<Span> spans) {}

    public record Metadata(long metaBytesWritten, long metaWrites, long metaBytesWrittenDuringFill, long dataBytesWritten,
            long flushes, double metaBytesPerPut, Map<String, Object> storeReported, Snapshots snapshots) {}

    public record Latencies(Latency all, Latency duringSnapshot, Latency withoutSnapshot, double longestStallDuringMs,
            double longestStallWithoutMs) {}

    /**
     * @param openCpuMs CPU time of the thread that opened the store (recovery runs on it): with other work
     *        on the machine, the wall time {@code openMs} may be several times this
     */
    public record Reopen(double closeMs, double deviceReleaseWaitMs, double openMs, double openCpuMs, double countMs,
            double seconds, long keysRecovered,
            double entriesPerSecond, String recovery, int sampledExists, int sampledExistsHits, int sampledLoads,
            int sampledLoadsVerified) {}

    /** One target of the scale bench and how this run did; {@code verdict}: met, missed, or not measured. */
    public record Target(String name, String limit, double value, String unit, String verdict, String detail) {}

    /** @param loadAverage /proc/loadavg when the run started and when it ended (the machine is shared) */
    public record FormatResult(String metaFormat, long entries, String note, String loadAverage, Config config, Fill fill,
            Memory memory, Metadata metadata, Latencies latency, Reopen reopen, List<Target> targets,
            List<String> errors) {
        /** Whether every check of the run passed (targets are figures, not checks). */
        public boolean ok() {
            return errors.isEmpty();
        }
    }

    public record Machine(int cores, String cpu, long memoryBytes, String kernel, String jvm, long maxHeapBytes,
            String fileSystem, String loadAverageAtStart, String loadAverageAtEnd) {}

    public record Report(String date, String started, String command, Machine machine, List<FormatResult> results) {}

    private final Options o;
    private final PrintStream out;

    public ScaleBench(Options options, PrintStream out) {
        this.o = options;
        this.out = out;
    }

    /** The JSON the results are written as (snake_case field names). */
    public static ObjectMapper json() {
        return new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
                .enable(SerializationFeature.INDENT_OUTPUT);
    }

    /**
     * The bytes of the largest run's device file (every slot and the whole metadata area, reserved when the
     * file is made; one run at a time, each file removed before the next): what must be free. A plain file is assumed to have 4 KiB
     * blocks (ext4, xfs); the run itself asks the file.
     */
    public static long bytesNeeded(Options o) {
        int block = o.backing() == Backing.LOOP ? 512 : 4096;
        Geometry g = Geometry.forBlockSize(block);
        long need = 0;
        for (MetaFormat f : o.formats()) {
            long n = o.entriesOf(f);
            need = Math.max(need, o.keepDataSlots() == 0 ? g.capacityBytes(f, n) : g.metaBytes(f, n)
                    + Math.min(n, o.keepDataSlots() * 2) * g.slotBytes()); // kept, and one step to punch
        }
        return need;
    }

    /** Whether {@link Backing#LOOP} can be used here (root, and losetup). */
    public static boolean loopAvailable() {
        return LoopDevice.available();
    }

    /** Runs every selected format, prints each one's figures and targets, writes the JSON. */
    public Report run() throws IOException {
        String started = Instant.now().toString();
        String loadStart = loadAverage();
        List<FormatResult> results = new ArrayList<>();
        for (MetaFormat f : o.formats()) {
            FormatResult r = runFormat(f, o.entriesOf(f));
            results.add(r);
            printReopenAndTargets(r);
        }
        String fs = "";
        try {
            Path where = o.backing() == Backing.DEVICE ? o.device() : o.dir();
            fs = Files.getFileStore(where).type() + " (" + Files.getFileStore(where).name() + ")";
        } catch (IOException e) {
            fs = "unknown: " + e.getMessage();
        }
        Machine m = new Machine(Runtime.getRuntime().availableProcessors(), cpuModel(), Meminfo.bytes("MemTotal"), System.getProperty("os.name")
                + " " + System.getProperty("os.version"), "Java " + Runtime.version(), Runtime.getRuntime().maxMemory(),
                fs, loadStart, loadAverage());
        Report report = new Report(LocalDate.now().toString(), started, o.command(), m, results);
        if (o.json() != null) {
            Path parent = o.json().toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            json().writeValue(o.json().toFile(), report);
            out.println("results: " + o.json().toAbsolutePath());
        }
        return report;
    }

    // ------------------------------------------------------------------ one format

    private FormatResult runFormat(MetaFormat format, long n) throws IOException {
        List<String> errors = new ArrayList<>();
        String note = format == MetaFormat.LMCACHE_V1 && n < o.entries()
                ? "lmcache_v1 ran at " + n + " entries, not " + o.entries() + ": it keeps every key on the heap and"
                + " rewrites the whole index as one JSON document at every checkpoint (some 210 bytes a key with these"
                + " keys: about 2 GB at 10M, near the 2 GiB a Java array can hold), and its reopen parses that"
                + " document and reads every slot header (--v1-entries to change)"
                : null;
        Path file = null;
        LoopDevice loop = null;
        try {
            Path target;
            int lbs;
            if (o.backing() == Backing.DEVICE) {
                target = o.device();
                lbs = logicalBlockSize(target);
            } else {
                file = o.dir().resolve("fdpblock-scale-" + format.configName() + ".img");
                Files.deleteIfExists(file);
                lbs = o.backing() == Backing.LOOP ? 512 : fileBlockSize(o.dir());
                target = file;
            }
            Geometry g = Geometry.forBlockSize(lbs);
            long meta = g.metaBytes(format, n);
            long capacity = g.capacityBytes(format, n);
            if (file != null) {
                // Blocks reserved up front (fallocate), as the store does for the files it creates: on a shared
                // disk a sparse file ran out of space half way through a fill (ENOSPC, puts rolled back).
                if (o.keepDataSlots() > 0) { // the metadata area reserved, the slots sparse (punched behind the fill)
                    try (NativeFile f = NativeFile.open(file, true, true, false)) {
                        f.allocate(meta);
                    }
                    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                        raf.setLength((capacity + 4095) / 4096 * 4096);
                    }
                } else {
                    BlockDevices.createFile(file, (capacity + 4095) / 4096 * 4096);
                }
                if (o.backing() == Backing.LOOP) {
                    loop = LoopDevice.attach(file);
                    target = loop.path();
                }
            }
            RawBlockCoreConfig config = RawBlockCoreConfig.builder(target.toString(), g.slotBytes())
                    .blockAlign(g.blockAlign()).headerBytes(g.headerBytes()).capacityBytes(capacity).metaTotalBytes(meta)
                    .metaFormat(format).ioEngine(IoEngine.IO_URING).metaSyncIntervalMs(o.metaSyncIntervalMs())
                    .metaCheckpointIntervalSec(o.checkpointIntervalSec()).build();
            String key0 = ScaleKeys.key(0);
            String backing = switch (o.backing()) {
                case LOOP -> "a loop device over " + file;
                case FILE -> "a file";
                case DEVICE -> "a block device";
            } + (o.backing() == Backing.DEVICE ? "" : o.keepDataSlots() == 0 ? " (blocks reserved)"
                    : " (metadata blocks reserved; the bytes of all but the last " + o.keepDataSlots() + " slots punched"
                    + " out of the file behind the fill: they read as zeros, the loads after the reopen are sampled"
                    + " among the kept slots)");
            Config cfg = new Config(target.toString(), backing, g.blockAlign(), g.headerBytes(), g.slotBytes(),
                    g.payloadBytes(), capacity, meta, IoEngine.IO_URING.configName(), o.metaSyncIntervalMs(),
                    o.checkpointIntervalSec(), key0.length(), key0, o.keysPerPut(), o.putsInFlight());
            out.printf(Locale.ROOT, "%n%s: %,d entries on %s (%s), block_align %d, header_bytes %d, slot_bytes %d,"
                            + " payload %d B, capacity %s, metadata area %s, io_uring%n", format.configName(), n, target,
                    cfg.backing(), g.blockAlign(), g.headerBytes(), g.slotBytes(), g.payloadBytes(), Sizes.human(capacity),
                    Sizes.human(meta));
            if (note != null) {
                out.println("  note: " + note);
            }
            return measure(format, n, note, config, cfg, g, errors, o.keepDataSlots() > 0 ? file : null);
        } finally {
            if (loop != null) {
                try {
                    loop.close();
                } catch (IOException e) {
                    out.println("  " + e.getMessage());
                }
            }
            if (file != null) {
                Files.deleteIfExists(file);
            }
        }
    }

    private static DeviceOptions deviceOptions(RawBlockCoreConfig c) {
        // as RawBlockCore.open(config) opens its device: exclusively, O_DIRECT, no pool of its own buffers
        return DeviceOptions.of(c.ioEngine()).withQueueDepth(c.iouringQueueDepth()).withDirect(c.useOdirect())
                .withBuffers(1 << 20, 0).withExclusive(true);
    }

    /** The block size the store will see on a file in {@code dir} (st_blksize: a probe file, removed). */
    private static int fileBlockSize(Path dir) throws IOException {
        Path probe = Files.createTempFile(dir, "fdpblock-scale-probe-", ".img");
        try {
            return logicalBlockSize(probe);
        } finally {
            Files.deleteIfExists(probe);
        }
    }

    private static int logicalBlockSize(Path p) throws IOException {
        try (BlockDevice d = BlockDevices.openReadOnly(p)) {
            return d.logicalBlockSize();
        }
    }

    private FormatResult measure(MetaFormat format, long n, String note, RawBlockCoreConfig config, Config cfg,
            Geometry g, List<String> errors, Path punchFile) throws IOException {
        String loadStart = loadAverage();
        long meta = config.metaTotalBytes();
        Memory memory;
        Metadata metadata;
        Latencies latency;
        Fill fill;
        double closeMs;
        try (Arena arena = Arena.ofShared()) {
            Filler filler = new Filler(arena, g.payloadBytes());
            long heapBefore = heapAfterGc();
            MetaWriteCounter device = new MetaWriteCounter(BlockDevices.open(Path.of(config.devicePath()),
                    deviceOptions(config)), meta);
            try {
                RawBlockCore core = RawBlockCore.open(config.toBuilder().format(true).build(), device);
                boolean closed = false;
                try {
                    fill = filler.fill(core, n, format.configName(),
                            punchFile == null ? null : new DataPuncher(punchFile, meta, g.slotBytes()));
                    long metaDuringFill = device.metaBytes();
                    Map<String, Object> status = quietStatus(core);
                    long heapAfter = heapAfterGcWithoutSnapshot(core);
                    long offHeap = ((Number) status.get("index_off_heap_bytes")).longValue();
                    long delta = heapAfter - heapBefore;
                    memory = new Memory(heapBefore, heapAfter, delta, offHeap,
                            ((Number) status.get("index_bytes")).longValue(), (double) delta / n, (double) offHeap / n,
                            (double) (delta + offHeap) / n);
                    filler.stopMonitor();
                    long t0 = System.nanoTime();
                    closed = true;
                    core.close();
                    closeMs = (System.nanoTime() - t0) / 1e6;
                    try { // the counters once close made everything durable
                        status = core.status();
                    } catch (RuntimeException e) {
                        // the status before the close: the last commit of the log is then not in it
                    }
                    Map<String, Object> reported = new LinkedHashMap<>();
                    for (String k : List.of("log_bytes_written", "log_commits", "snapshot_bytes_written",
                            "snapshots_written", "meta_bytes_written", "checkpoints_written", "last_checkpoint_bytes",
                            "last_checkpoint_ms", "checkpoint_failures", "last_checkpoint_error")) {
                        if (status.containsKey(k)) {
                            reported.put(k, status.get(k));
                        }
                    }
                    Snapshots snaps = filler.snapshots();
                    metadata = new Metadata(device.metaBytes(), device.metaWrites(), metaDuringFill, device.dataBytes(),
                            device.flushes(), fill.keysStored() == 0 ? 0 : (double) device.metaBytes() / fill.keysStored(),
                            reported, snaps);
                    latency = filler.latencies();
                    Object failure = status.get("last_checkpoint_error");
                    if (failure != null) {
                        errors.add("the store reported a metadata failure: " + failure);
                    }
                } finally {
                    filler.stopMonitor();
                    if (!closed) {
                        core.close();
                    }
                }
            } finally {
                device.close();
            }
        }
        printRun(fill, memory, metadata, latency, closeMs);
        out.println("  load average: " + loadStart + " at the start, " + loadAverage() + " now ("
                + Runtime.getRuntime().availableProcessors() + " cores)");
        if (fill.keysFailed() > 0) {
            errors.add(fill.keysFailed() + " of " + n + " keys were not stored; the first: " + fill.firstFailure());
        }
        Reopen reopen = reopen(config, n, fill.keysStored(), closeMs, errors);
        String load = loadStart + " -> " + loadAverage();
        FormatResult partial = new FormatResult(format.configName(), n, note, load, cfg, fill, memory, metadata, latency,
                reopen, List.of(), errors);
        return new FormatResult(format.configName(), n, note, load, cfg, fill, memory, metadata, latency, reopen,
                targets(partial), List.copyOf(errors));
    }

    /** The status once no snapshot runs (a v1 checkpoint holds a copy of the index while it is written). */
    private static Map<String, Object> quietStatus(RawBlockCore core) {
        awaitNoSnapshot(core);
        return core.status();
    }

    /** The store's count of snapshot boundaries (odd while a snapshot or checkpoint is written), from its status. */
    private static long snapshotEpoch(RawBlockCore core) {
        return ((Number) core.status().get("meta_snapshot_epoch")).longValue();
    }

    private static void awaitNoSnapshot(RawBlockCore core) {
        while ((snapshotEpoch(core) & 1) == 1) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
    }

    /** Heap in use after a full GC, taken while no snapshot ran from start to end. */
    private static long heapAfterGcWithoutSnapshot(RawBlockCore core) {
        while (true) {
            awaitNoSnapshot(core);
            long epoch = snapshotEpoch(core);
            long heap = heapAfterGc();
            if (snapshotEpoch(core) == epoch) {
                return heap;
            }
        }
    }

    static long heapAfterGc() {
        MemoryMXBean mx = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) { // a full GC each; the least seen (finalization and reference queues settle)
            System.gc();
            used = Math.min(used, mx.getHeapMemoryUsage().getUsed());
        }
        return used;
    }

    /**
     * Opens the device again after a close. The kernel lets go of a block device an io_uring ring had
     * registered only when its ring exit work has run, a little after the ring is closed: until then an
     * exclusive open fails with EBUSY, so it is retried (for at most 30 s; not part of the reopen time).
     */
    private static BlockDevice openAgain(RawBlockCoreConfig config, long[] waitedNanos) throws IOException {
        long t0 = System.nanoTime();
        while (true) {
            try {
                BlockDevice d = BlockDevices.open(Path.of(config.devicePath()), deviceOptions(config));
                waitedNanos[0] = System.nanoTime() - t0;
                return d;
            } catch (DeviceInUseException e) {
                if (System.nanoTime() - t0 > TimeUnit.SECONDS.toNanos(30)) {
                    throw e;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
            }
        }
    }

    private Reopen reopen(RawBlockCoreConfig config, long n, long acknowledged, double closeMs, List<String> errors)
            throws IOException {
        long[] waited = {0};
        try (BlockDevice device = openAgain(config, waited)) {
            long cpu0 = CpuClock.threadCpuNanos();
            long t0 = System.nanoTime();
            RawBlockCore core = RawBlockCore.open(config, device);
            try {
                long t1 = System.nanoTime();
                long cpu1 = CpuClock.threadCpuNanos();
                int keys = core.keyCount();
                long t2 = System.nanoTime();
                double seconds = (t2 - t0) / 1e9;
                String recovery = String.valueOf(core.status().get("recovery"));
                if (keys != acknowledged) {
                    errors.add("reopen recovered " + keys + " keys, not the " + acknowledged + " whose put was"
                            + " acknowledged");
                }
                SplittableRandom rnd = new SplittableRandom(n);
                int sample = (int) Math.min(1000, n);
                List<String> names = new ArrayList<>(sample);
                for (int i = 0; i < sample; i++) {
                    names.add(ScaleKeys.key(rnd.nextLong(n)));
                }
                boolean[] there = core.exists(names, false);
                int hits = 0;
                for (boolean b : there) {
                    hits += b ? 1 : 0;
                }
                if (hits != sample) {
                    errors.add((sample - hits) + " of " + sample + " sampled keys are missing after the reopen");
                }
                int loads = (int) Math.min(100, n);
                int verified = 0;
                try (Arena arena = Arena.ofShared()) { // the load completes on the device's thread
                    int payload = (int) core.maxPayloadBytes();
                    MemorySegment dest = arena.allocate(payload, 4096);
                    for (int i = 0; i < loads; i++) {
                        long kept = o.keepDataSlots() == 0 ? n : Math.min(n, o.keepDataSlots() / 2);
                        long e = n - kept + rnd.nextLong(kept); // keys go to slots in put order, a few in flight apart
                        dest.fill((byte) 0);
                        boolean[] got = core.load(List.of(new LoadRequest(ScaleKeys.key(e), dest)));
                        if (got[0] && ScaleKeys.holds(dest, e)) {
                            verified++;
                        }
                    }
                }
                if (verified != loads) {
                    errors.add((loads - verified) + " of " + loads + " sampled loads after the reopen did not return"
                            + " the key's own bytes");
                }
                return new Reopen(closeMs, waited[0] / 1e6, (t1 - t0) / 1e6, (cpu1 - cpu0) / 1e6, (t2 - t1) / 1e6, seconds, keys,
                        keys / seconds, recovery, sample, hits, loads, verified);
            } finally {
                core.close();
            }
        }
    }

    // ------------------------------------------------------------------ the fill

    /**
     * Punches the bytes of all but the last {@code keepDataSlots} slots out of the device file behind the fill
     * (a thread of its own, so that no put waits for it), for runs larger than the disk: the store's index,
     * metadata and reopen are as on a full device; the punched slots read as zeros. Keys take slots in the
     * order of their puts here (a fresh store, nothing freed), so the slots below the keys stored minus the
     * kept ones are done with.
     */
    private final class DataPuncher implements AutoCloseable {
        private final NativeFile file;
        private final long dataOffset;
        private final int slotBytes;
        private final AtomicReference<IOException> failure = new AtomicReference<>();
        private volatile boolean running;
        private Thread thread;
        private AtomicLong stored;
        private volatile long punchedSlots;

        DataPuncher(Path path, long dataOffset, int slotBytes) throws IOException {
            this.file = NativeFile.open(path, true, false, false);
            this.dataOffset = dataOffset;
            this.slotBytes = slotBytes;
        }

        void start(AtomicLong storedKeys) {
            stored = storedKeys;
            running = true;
            thread = Thread.ofPlatform().daemon().name("fdpblock-scale-punch").start(() -> {
                while (running && failure.get() == null) {
                    LockSupport.parkNanos(200_000_000L);
                    try {
                        punch(Math.max(1, o.keepDataSlots() / 4));
                    } catch (IOException e) {
                        failure.set(e);
                    }
                }
            });
        }

        /** Punches up to the keys stored minus the kept slots, once at least {@code step} slots are due. */
        private void punch(long step) throws IOException {
            long upTo = stored.get() - o.keepDataSlots();
            if (upTo - punchedSlots >= step) {
                file.punchHole(dataOffset + punchedSlots * slotBytes, (upTo - punchedSlots) * slotBytes);
                punchedSlots = upTo;
            }
        }

        long punchedBytes() {
            return punchedSlots * slotBytes;
        }

        @Override
        public void close() throws IOException {
            running = false;
            if (thread != null) {
                LockSupport.unpark(thread);
                boolean interrupted = false;
                while (true) {
                    try {
                        thread.join();
                        break;
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
            try {
                if (failure.get() != null) {
                    throw failure.get();
                }
                if (stored != null) {
                    punch(1); // the fill is done: all but the kept slots
                }
            } finally {
                file.close();
            }
        }
    }

    /** Puts N entries, {@code keysPerPut} keys a call, {@code putsInFlight} calls in flight, and times each call. */
    private final class Filler {
        private final MemorySegment buffers;
        private final int payloadBytes;
        private final Histogram during = new SynchronizedHistogram(TimeUnit.HOURS.toNanos(1), 3);
        private final Histogram without = new SynchronizedHistogram(TimeUnit.HOURS.toNanos(1), 3);
        private final AtomicLong completed = new AtomicLong();
        private final AtomicLong stored = new AtomicLong();
        private final AtomicLong failed = new AtomicLong();
        private final AtomicReference<String> firstFailure = new AtomicReference<>();
        private final Object stallLock = new Object();
        private long lastCompletion;
        private long lastEpoch;
        private long stallDuring;
        private long stallWithout;
        private final List<Span> snapshotSpans = Collections.synchronizedList(new ArrayList<>());
        private long fillStart;
        private volatile boolean monitoring;
        /** The snapshot epoch the monitor saw last: puts read it instead of the status, which takes the store's lock. */
        private volatile long seenEpoch;
        private Thread monitor;

        Filler(Arena arena, int payloadBytes) {
            this.payloadBytes = payloadBytes;
            this.buffers = IoMemory.allocate(arena, (long) o.putsInFlight() * o.keysPerPut() * payloadBytes);
        }

        Fill fill(RawBlockCore core, long n, String name, DataPuncher puncher) throws IOException {
            ArrayBlockingQueue<Integer> free = new ArrayBlockingQueue<>(o.putsInFlight());
            for (int i = 0; i < o.putsInFlight(); i++) {
                free.add(i);
            }
            long start = System.nanoTime();
            fillStart = start;
            synchronized (stallLock) {
                lastCompletion = start;
                lastEpoch = snapshotEpoch(core);
                seenEpoch = lastEpoch;
            }
            startMonitor(core);
            if (puncher != null) {
                puncher.start(stored);
            }
            try (puncher; ProgressBar bar = o.progress() ? new ProgressBarBuilder().setTaskName("fill " + name)
                    .setInitialMax(n).setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(500).setUnit(" keys", 1)
                    .showSpeed().build() : null) {
                for (long next = 0; next < n; next += o.keysPerPut()) {
                    int slot = take(free);
                    int k = (int) Math.min(o.keysPerPut(), n - next);
                    List<PutRequest> requests = new ArrayList<>(k);
                    for (int j = 0; j < k; j++) {
                        MemorySegment p = buffers.asSlice(((long) slot * o.keysPerPut() + j) * payloadBytes, payloadBytes);
                        ScaleKeys.fill(p, next + j);
                        requests.add(PutRequest.of(ScaleKeys.key(next + j), p));
                    }
                    long epoch0 = seenEpoch;
                    long t0 = System.nanoTime();
                    core.putOutcomesAsync(requests, outcomes -> {
                        long t1 = System.nanoTime();
                        long epoch1 = seenEpoch;
                        boolean overlapped = (epoch0 & 1) == 1 || epoch1 != epoch0;
                        (overlapped ? during : without).recordValue(Math.max(1, t1 - t0));
                        for (int j = 0; j < outcomes.length; j++) {
                            if (outcomes[j] == PutOutcome.STORED) {
                                stored.incrementAndGet();
                            } else {
                                failed.incrementAndGet();
                                firstFailure.compareAndSet(null, requests.get(j).key() + ": " + outcomes[j]);
                            }
                        }
                        completed.incrementAndGet();
                        completedAt(t1, epoch1);
                        free.add(slot);
                    });
                    if (bar != null) {
                        bar.stepBy(k);
                    }
                }
                for (int i = 0; i < o.putsInFlight(); i++) {
                    take(free);
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            return new Fill(seconds, stored.get() / seconds, stored.get(), failed.get(), firstFailure.get(),
                    puncher == null ? 0 : puncher.punchedBytes());
        }

        /** The gap since the previous completion: a stall in a snapshot when one ran at either end or between. */
        private void completedAt(long now, long epoch) {
            synchronized (stallLock) {
                long gap = now - lastCompletion;
                boolean inSnapshot = (epoch & 1) == 1 || (lastEpoch & 1) == 1 || epoch != lastEpoch;
                if (inSnapshot) {
                    stallDuring = Math.max(stallDuring, gap);
                } else {
                    stallWithout = Math.max(stallWithout, gap);
                }
                lastCompletion = now;
                lastEpoch = epoch;
            }
        }

        private static int take(ArrayBlockingQueue<Integer> q) {
            while (true) {
                try {
                    return q.take();
                } catch (InterruptedException e) {
                    // puts in flight use the buffers: wait for them whatever happens
                }
            }
        }

        /** Watches the snapshot epoch (every 0.5 ms): when each snapshot ran, and how many puts completed in it. */
        private void startMonitor(RawBlockCore core) {
            monitoring = true;
            monitor = Thread.ofPlatform().daemon().name("fdpblock-scale-monitor").start(() -> {
                long epoch = snapshotEpoch(core);
                long since = System.nanoTime();
                long putsAtStart = completed.get();
                while (monitoring) {
                    LockSupport.parkNanos(500_000);
                    long e = snapshotEpoch(core);
                    seenEpoch = e;
                    if (e == epoch) {
                        continue;
                    }
                    long now = System.nanoTime();
                    if ((epoch & 1) == 1) { // one was running: it ended (and more may have run in between)
                        snapshotSpans.add(new Span((since - fillStart) / 1e9, (now - since) / 1e6, putsAtStart,
                                completed.get() - putsAtStart));
                    } else if (e - epoch >= 2) { // one or more started and ended between two looks
                        snapshotSpans.add(new Span((now - fillStart) / 1e9, 0, completed.get(), 0));
                    }
                    if ((e & 1) == 1) {
                        since = now;
                        putsAtStart = completed.get();
                    }
                    epoch = e;
                }
            });
        }

        void stopMonitor() {
            monitoring = false;
            if (monitor != null) {
                Threads.joinUninterruptibly(monitor, Duration.ofSeconds(5));
            }
        }

        Snapshots snapshots() {
            List<Span> spans;
            synchronized (snapshotSpans) {
                spans = new ArrayList<>(snapshotSpans);
            }
            if (spans.isEmpty()) {
                return new Snapshots(0, 0, 0, 0, 0, 0, List.of());
            }
            double[] ms = spans.stream().mapToDouble(Span::durationMs).sorted().toArray();
            long puts = spans.stream().mapToLong(Span::putsDuring).sum();
            return new Snapshots(spans.size(), round1(ms[0]), round1(ms[ms.length / 2]), round1(ms[ms.length - 1]),
                    round2(Arrays.stream(ms).sum() / 1000), puts, spans);
        }

        Latencies latencies() {
            Histogram all = without.copy();
            all.add(during);
            synchronized (stallLock) {
                return new Latencies(Latency.of(all), Latency.of(during), Latency.of(without), stallDuring / 1e6,
                        stallWithout / 1e6);
            }
        }
    }

    // ------------------------------------------------------------------ targets

    static List<Target> targets(FormatResult r) {
        List<Target> t = new ArrayList<>();
        double perEntry = r.memory().indexBytesPerEntry();
        t.add(new Target("index memory per entry, heap + off-heap", "<= 48 B", round1(perEntry), "B",
                perEntry <= TARGET_INDEX_BYTES_PER_ENTRY ? "met" : "missed", String.format(Locale.ROOT,
                "%.1f B heap + %.1f B off-heap per entry", r.memory().heapBytesPerEntry(),
                r.memory().offHeapBytesPerEntry())));
        double rate = r.reopen().entriesPerSecond();
        t.add(new Target("reopen (10M entries in <= 15 s)", ">= 666,667 entries/s", Math.round(rate), "entries/s",
                rate >= TARGET_REOPEN_ENTRIES_PER_SECOND ? "met" : "missed", String.format(Locale.ROOT,
                "%,d keys in %.2f s (open: %.0f ms, %.0f ms of it on a CPU); at this rate 10M take %.1f s",
                r.reopen().keysRecovered(), r.reopen().seconds(), r.reopen().openMs(), r.reopen().openCpuMs(),
                10_000_000 / Math.max(rate, 1e-9))));
        double perPut = r.metadata().metaBytesPerPut();
        t.add(new Target("metadata bytes written per committed put", "<= 256 B", round1(perPut), "B",
                perPut <= TARGET_META_BYTES_PER_PUT ? "met" : "missed", String.format(Locale.ROOT,
                "%s written below the data area from open to close for %,d puts", Sizes.human(r.metadata().metaBytesWritten()),
                r.fill().keysStored())));
        t.addAll(snapshotTargets(r.latency(), r.metadata().snapshots()));
        return t;
    }

    /**
     * Whether puts wait for the snapshots written meanwhile: the puts that overlapped one against those that
     * overlapped none, in the same run; their p99.9, their worst, and the longest stretch with no put
     * completing. "not measured" when one of the two groups is empty.
     */
    static List<Target> snapshotTargets(Latencies latency, Snapshots snapshots) {
        Latency d = latency.duringSnapshot();
        Latency w = latency.withoutSnapshot();
        if (d.count() == 0 || w.count() == 0) {
            String why = d.count() == 0 ? "no put overlapped a snapshot (" + snapshots.count()
                    + " snapshots during the fill)" : "every put overlapped a snapshot";
            return List.of(new Target(P999_TARGET, "<= 2.0x", 0, "x", "not measured", why),
                    new Target(WORST_PUT_TARGET, "<= 2.0x", 0, "x", "not measured", why),
                    new Target(STALL_TARGET, "longest stall during <= 2x without", 0, "x", "not measured", why));
        }
        List<Target> t = new ArrayList<>();
        double ratio = d.p999Us() / Math.max(w.p999Us(), 1e-3);
        t.add(new Target(P999_TARGET, "<= 2.0x", round2(ratio), "x", ratio <= TARGET_P999_RATIO ? "met" : "missed",
                String.format(Locale.ROOT, "p99.9 %.0f us during (%,d puts) vs %.0f us without (%,d puts)",
                        d.p999Us(), d.count(), w.p999Us(), w.count())));
        double worst = d.maxUs() / Math.max(w.maxUs(), 1e-3);
        t.add(new Target(WORST_PUT_TARGET, "<= 2.0x", round2(worst), "x",
                worst <= TARGET_WORST_PUT_RATIO ? "met" : "missed", String.format(Locale.ROOT,
                "the slowest put: %.1f ms during a snapshot vs %.1f ms outside", d.maxUs() / 1000, w.maxUs() / 1000)));
        double sd = latency.longestStallDuringMs();
        double sw = latency.longestStallWithoutMs();
        double stall = sd / Math.max(sw, 1e-3);
        t.add(new Target(STALL_TARGET, "longest stall during <= 2x without", round2(stall), "x",
                stall <= TARGET_STALL_RATIO ? "met" : "missed", String.format(Locale.ROOT,
                "longest stretch with no put completing: %.1f ms during snapshots, %.1f ms outside; snapshots"
                        + " took %.0f ms median, %.0f ms max; longest put during one %.1f ms",
                sd, sw, snapshots.medianMs(), snapshots.maxMs(), d.maxUs() / 1000)));
        return t;
    }

    static final String P999_TARGET = "put p99.9 during a snapshot <= 2x without";
    static final String WORST_PUT_TARGET = "worst put during a snapshot <= 2x without";
    static final String STALL_TARGET = "no put waits for a snapshot";

    private static double round1(double v) {
        return Math.round(v * 10) / 10.0;
    }

    private static double round2(double v) {
        return Math.round(v * 100) / 100.0;
    }

    // ------------------------------------------------------------------ output

    private void printRun(Fill f, Memory m, Metadata md, Latencies l, double closeMs) {
        out.printf(Locale.ROOT, "  fill: %,d keys in %.1f s (%,.0f keys/s), %,d failed%n", f.keysStored(), f.seconds(),
                f.keysPerSecond(), f.keysFailed());
        out.printf(Locale.ROOT, "  index memory: heap %s (%.1f B/entry) + off-heap %s (%.1f B/entry) = %.1f B/entry%n",
                Sizes.human(m.heapDeltaBytes()), m.heapBytesPerEntry(), Sizes.human(m.indexOffHeapBytes()), m.offHeapBytesPerEntry(),
                m.indexBytesPerEntry());
        out.printf(Locale.ROOT, "  metadata written, open to close: %s in %,d writes (%.1f B/put); data %s; %d snapshots"
                        + " during the fill (median %.0f ms, max %.0f ms); close %.0f ms%n", Sizes.human(md.metaBytesWritten()),
                md.metaWrites(), md.metaBytesPerPut(), Sizes.human(md.dataBytesWritten()), md.snapshots().count(),
                md.snapshots().medianMs(), md.snapshots().maxMs(), closeMs);
        printLatency("put latency, all", l.all());
        printLatency("  during a snapshot", l.duringSnapshot());
        printLatency("  without", l.withoutSnapshot());
        out.printf(Locale.ROOT, "  longest stretch with no put completing: %.1f ms during snapshots, %.1f ms outside%n",
                l.longestStallDuringMs(), l.longestStallWithoutMs());
    }

    private void printReopenAndTargets(FormatResult r) {
        Reopen ro = r.reopen();
        out.printf(Locale.ROOT, "  reopen: %.2f s (open %.0f ms, %.0f ms of it on a CPU, + count %.0f ms), %,d keys, %,.0f"
                        + " entries/s; sample: %d/%d exist, %d/%d loads verified%n    %s%n", ro.seconds(), ro.openMs(),
                ro.openCpuMs(), ro.countMs(),
                ro.keysRecovered(), ro.entriesPerSecond(), ro.sampledExistsHits(), ro.sampledExists(),
                ro.sampledLoadsVerified(), ro.sampledLoads(), ro.recovery());
        out.println("  targets (scale):");
        for (Target t : r.targets()) {
            out.printf(Locale.ROOT, "    %-44s %-12s %s %s: %s%n", t.name(), t.verdict().toUpperCase(Locale.ROOT),
                    t.verdict().equals("not measured") ? "" : fmt(t.value()) + " " + t.unit(), "(" + t.limit() + ")",
                    t.detail());
        }
        for (String e : r.errors()) {
            out.println("  CHECK FAILED: " + e);
        }
    }

    private void printLatency(String label, Latency l) {
        out.printf(Locale.ROOT, "  %-22s %,10d puts  p50 %8.1f us  p99 %8.1f us  p99.9 %9.1f us  max %10.1f us%n", label,
                l.count(), l.p50Us(), l.p99Us(), l.p999Us(), l.maxUs());
    }

    private static String fmt(double v) {
        return v == Math.rint(v) && Math.abs(v) >= 1000 ? String.format(Locale.ROOT, "%,.0f", v)
                : String.format(Locale.ROOT, "%.2f", v);
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).strip();
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).strip();
                }
            }
        } catch (IOException e) {
            // unknown
        }
        return "unknown";
    }

}
