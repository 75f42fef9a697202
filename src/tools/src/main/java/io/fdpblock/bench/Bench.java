package io.fdpblock.bench;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.SubmitPolicy;
import io.fdpblock.linux.IoMemory;
import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.nvme.WriteStreams;
import io.fdpblock.tools.util.Sizes;
import io.fdpblock.uring.Uring;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code fdpblock bench}: our engines and the RawBlock adapter side by side with fio, on the same file (or
 * NVMe namespace), same sizes, same queue depth, same duration, O_DIRECT and registered buffers and
 * files on both sides. Every case runs {@code rounds} times, ours then the fio run it is judged against in
 * odd rounds, that fio then ours in even ones (plain fio after both where that is fio on huge pages, and fio
 * on huge pages alone after both where that is fio doing ours' work too: beside the same flushes as a
 * store's, or checking the same CRC32C as a load under {@code verify_payload} "always"); the
 * table shows medians and ours/fio ratios; {@code bench-results.json} keeps every figure
 * and {@code bench-results.png} draws them.
 */
public final class Bench {
    /**
     * @param file the bench file (created at {@code sizeBytes} when missing; an existing one must be at
     *        least that large and only its first {@code sizeBytes} are used)
     * @param device {@code /dev/ngXnY} for the uring_cmd and placement cases, or null to skip them
     * @param blockDevice the same namespace's block device {@code /dev/nvmeXnY} for the placement cases (write
     *        streams), or null: derived from {@code device}'s name ({@code ng0n1} -> {@code nvme0n1})
     * @param fioPath fio's path, or null to look on the PATH
     * @param cases case ids (or prefixes) to run; empty = all
     * @param pipeline how our raw cases keep their depth (default {@link PipelinedIo.Mode#AUTO})
     * @param submitPolicy our devices' submission policy (default the library's, {@link SubmitPolicy#ADAPTIVE})
     * @param adapterBufferBytes the adapter cases' chunk buffers, taken in turn by their tasks; 0 = as many as
     *        the chunks in flight ({@link #ADAPTER_BUFFER_BYTES}), as fio has one buffer per I/O in flight
     */
    public record Options(Path file, long sizeBytes, Path device, Path blockDevice, int seconds, int rampSeconds,
            int rounds, Path outDir, String fioPath, List<String> cases, boolean prewrite, int adapterKeysPerTask,
            int lookupIterations, PipelinedIo.Mode pipeline, SubmitPolicy submitPolicy, long adapterBufferBytes) {
        /** Without a block device of its own: derived from {@code device}, when it is named ngXnY. */
        public Options(Path file, long sizeBytes, Path device, int seconds, int rampSeconds, int rounds, Path outDir,
                String fioPath, List<String> cases, boolean prewrite, int adapterKeysPerTask, int lookupIterations,
                PipelinedIo.Mode pipeline, SubmitPolicy submitPolicy) {
            this(file, sizeBytes, device, null, seconds, rampSeconds, rounds, outDir, fioPath, cases, prewrite,
                    adapterKeysPerTask, lookupIterations, pipeline, submitPolicy, 0);
        }

        public Options {
            if (blockDevice == null && device != null) {
                blockDevice = WriteStreams.counterpart(device);
            }
            if (sizeBytes < (256L << 20) || sizeBytes % (1 << 20) != 0) {
                throw new IllegalArgumentException("--size " + sizeBytes + " is not a usable size: it must be a multiple"
                        + " of 1 MiB and at least 256 MiB (bytes, e.g. 2147483648)");
            }
            if (seconds < 1) {
                throw new IllegalArgumentException("--seconds " + seconds + " is out of range: the measured seconds"
                        + " per side must be at least 1");
            }
            if (rampSeconds < 0) {
                throw new IllegalArgumentException("--ramp " + rampSeconds + " is out of range: the unmeasured seconds"
                        + " before each window must be at least 0");
            }
            if (rounds < 1) {
                throw new IllegalArgumentException("--rounds " + rounds + " is out of range: the rounds per case must be"
                        + " at least 1");
            }
            if (adapterKeysPerTask < 1 || adapterKeysPerTask > 16) {
                throw new IllegalArgumentException("--adapter-keys-per-task " + adapterKeysPerTask + " is out of range:"
                        + " chunks per task must be in 1..16");
            }
            adapterBufferBytes = adapterBufferBytes == 0 ? ADAPTER_BUFFER_BYTES : adapterBufferBytes;
            if (adapterBufferBytes < ADAPTER_BUFFER_BYTES) {
                throw new IllegalArgumentException("--adapter-buffers " + adapterBufferBytes + " is too small: the "
                        + ADAPTER_CHUNKS_IN_FLIGHT + " chunks of 1 MiB in flight need at least " + ADAPTER_BUFFER_BYTES
                        + " bytes (16 MiB, the default); give that or more, e.g. 268435456 for a service's 256 MiB pool");
            }
            if (lookupIterations < 10) {
                throw new IllegalArgumentException("--lookup-iterations " + lookupIterations + " is out of range: the"
                        + " timed lookups per round must be at least 10");
            }
            cases = cases == null ? List.of() : List.copyOf(cases);
            List<String> asked = cases;
            if (BenchCase.all().stream().noneMatch(c -> selects(asked, c))) {
                throw new IllegalArgumentException("--cases " + String.join(",", cases) + " selects no case: give ids or"
                        + " id prefixes of " + BenchCase.all().stream().map(BenchCase::id).toList());
            }
            pipeline = pipeline == null ? PipelinedIo.Mode.AUTO : pipeline;
            submitPolicy = submitPolicy == null ? DeviceOptions.of(IoEngine.IO_URING).submitPolicy() : submitPolicy;
        }
    }

    /** Chunks the adapter cases keep in flight, as fio's 1 MiB jobs keep {@code --iodepth=16} I/Os. */
    static final int ADAPTER_CHUNKS_IN_FLIGHT = 16;
    /** The adapter cases' chunk buffers by default: one per chunk in flight, as fio's job has one per I/O. */
    public static final long ADAPTER_BUFFER_BYTES = (long) ADAPTER_CHUNKS_IN_FLIGHT * BenchCase.MIB;

    static final String CPU_ACCOUNTING = "CPU time = user + system of each process over its measured window: ours ="
            + " delta of clock_gettime(CLOCK_PROCESS_CPUTIME_ID), at nanosecond resolution (every JVM thread: submitter,"
            + " io_uring reactor, GC), less the JIT compiler threads' CPU in the window (a new JVM's one-time cost;"
            + " jit_compiler_cpu_seconds and process_cpu_seconds in the JSON of the adapter cases); fio = (usr_cpu +"
            + " sys_cpu)% x job_runtime from its JSON (getrusage of the job process, reset by fio at the end of ramp_time)";

    private final Options o;
    private final PrintStream out;
    private final List<CaseResult> results = new ArrayList<>();
    private final List<PlacementResult> placementResults = new ArrayList<>();
    private boolean devicePrewritten;
    /** The first CRC32C alone of the run (each adapter round has its own): the JSON's {@code crc32c_alone}. */
    private Measurement crcAlone;
    /** The region the CRC32C alone is measured on, beside every adapter round; open during the adapter cases. */
    private Crc32cAlone crc32c;
    /**
     * The file fio wrote with {@code --verify=crc32c} for its check of every block it reads, beside the bench
     * file ({@link #crc32cCheck}): written at the first round that needs it, removed after the adapter cases.
     */
    private Path fioVerifyFile;
    private final HugetlbPool hugetlb;
    private Fio fio;
    private String loadAtStart;
    private final ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public Bench(Options options, PrintStream out) {
        this(options, out, HugetlbPool.system());
    }

    /** @param hugetlb the hugetlb pages fio's buffers take for the like-for-like reference */
    Bench(Options options, PrintStream out, HugetlbPool hugetlb) {
        this.o = options;
        this.out = out;
        this.hugetlb = hugetlb;
    }

    public List<CaseResult> results() {
        return results;
    }

    private boolean selected(BenchCase c) {
        return selects(o.cases(), c);
    }

    /** Whether {@code --cases} (ids or id prefixes; empty = all) selects {@code c}. */
    static boolean selects(List<String> cases, BenchCase c) {
        if (cases.isEmpty()) {
            return true;
        }
        for (String s : cases) {
            if (c.id().equals(s) || c.id().startsWith(s)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Runs every selected case and writes the results (also when some rounds failed). The hugetlb pages
     * reserved for fio are given back at the end, whatever happened ({@link HugetlbPool}).
     *
     * @return 0, or 3 when a round of our side failed (each failure is printed)
     */
    public int run() throws IOException {
        try {
            return runCases();
        } finally {
            String reserved = hugetlb.reservation();
            hugetlb.close();
            if (reserved != null) {
                out.println(reserved.replace("set back at the end", "now set back"));
            }
        }
    }

    private int runCases() throws IOException {
        Uring.ensureAvailable();
        Files.createDirectories(o.outDir());
        Path fioDir = o.outDir().resolve("fio");
        Files.createDirectories(fioDir);
        fio = Fio.find(o.fioPath());
        Instant started = Instant.now();
        loadAtStart = loadAverage();
        out.printf(Locale.ROOT, "fdpblock bench: %s (%s), %d round(s) of %d s (+%d s ramp) per side per case,"
                        + " ours then the fio judged (that fio first in even rounds), O_DIRECT, registered buffers and files on both"
                        + " sides; ours: %s; our buffers: %s, fio's: its own (malloc), and for 1 MiB cases again on"
                        + " huge pages (--mem=shmhuge), the reference judged (for stores, beside the same flushes as"
                        + " ours' log commits; for loads under verify_payload \"always\", checking the same CRC32C)%n",
                o.file(), Sizes.human(o.sizeBytes()), o.rounds(), o.seconds(), o.rampSeconds(),
                describePipeline(o.pipeline()) + ", submit policy " + o.submitPolicy().name().toLowerCase(Locale.ROOT),
                IoMemory.hugePages());
        if (fio == null) {
            out.println("fio not found" + (o.fioPath() != null ? " at " + o.fioPath() : " on the PATH")
                    + ": run `make bench` (which installs it: apt-get install -y fio); running our side only.");
        } else {
            out.println("reference: " + fio.version() + " (" + fio.executable() + ")");
        }
        List<BenchCase> cases = BenchCase.all().stream().filter(this::selected).toList();
        prepareFile(cases);
        List<BenchCase> raw = cases.stream().filter(c -> c.kind() == BenchCase.Kind.RAW).toList();
        for (BenchCase c : raw) {
            CaseResult r = new CaseResult(c);
            results.add(r);
            if (c.engine() == IoEngine.URING_CMD) {
                String why = o.device() == null ? "no --device /dev/ngXnY given (uring_cmd needs an NVMe generic char device)"
                        : !Uring.isBigEntriesAvailable() ? "io_uring here has no SQE128/CQE32 (Linux >= 5.19)" : null;
                if (why != null) {
                    r.skip(why);
                    out.printf("%-28s skipped: %s%n", c.label(), why);
                    continue;
                }
            }
            int cores = Runtime.getRuntime().availableProcessors();
            if (c.rings() > cores) {
                String why = c.rings() + " rings need as many cores; this machine has " + cores;
                r.skip(why);
                out.printf("%-28s skipped: %s%n", c.label(), why);
                continue;
            }
            runRaw(c, r, fioDir);
        }
        List<BenchCase> placement = cases.stream().filter(c -> c.kind() == BenchCase.Kind.PLACEMENT).toList();
        if (!placement.isEmpty()) {
            runPlacement(placement);
        }
        List<BenchCase> adapterCases = cases.stream()
                .filter(c -> c.kind() != BenchCase.Kind.RAW && c.kind() != BenchCase.Kind.PLACEMENT).toList();
        if (!adapterCases.isEmpty()) {
            runAdapter(adapterCases, fioDir);
        }
        out.println();
        if (!results.isEmpty()) {
            printTable(out);
        }
        printPlacementTable(out);
        int ourFailures = printErrors(out);
        Path jsonFile = o.outDir().resolve("bench-results.json");
        json.writeValue(jsonFile.toFile(), toMap(started));
        out.println();
        out.println("figures: " + jsonFile.toAbsolutePath());
        if (results.isEmpty()) {
            return ourFailures == 0 ? 0 : 3; // placement cases only: their figures are in the table and the JSON
        }
        try {
            Path png = BenchChart.write(results, o.outDir().resolve("bench-results.png"), o.rounds());
            out.println("chart:   " + png.toAbsolutePath());
        } catch (Throwable t) { // e.g. no font on a bare machine: the figures are still there
            out.println("chart:   not drawn (" + t + "); `make bench` installs fontconfig and a font");
        }
        return ourFailures == 0 ? 0 : 3;
    }

    static String describePipeline(PipelinedIo.Mode m) {
        return switch (m) {
            case AUTO -> "blocking calls on the caller's own ring at QD1, completion callbacks submitting the next"
                    + " operation above";
            case EXECUTE -> "blocking calls on the caller's own ring (QD1; deeper: completion callbacks)";
            case HANDOFF -> "completions hand slots back to the submitting thread";
            case CALLBACK -> "completion callbacks submit the next operation";
        };
    }

    /** Lists every failed round (ours and fio's). @return how many of ours failed */
    private int printErrors(PrintStream p) {
        int ours = 0;
        for (PlacementResult r : placementResults) {
            for (PlacementResult.Round round : r.rounds()) {
                for (Map.Entry<PlacementResult.Side, String> e : round.errors().entrySet()) {
                    ours++;
                    p.printf("FAILED ours, %s (%s) round %d: %s%n", r.benchCase().label(), e.getKey().key(),
                            round.round(), e.getValue());
                }
            }
        }
        for (CaseResult r : results) {
            for (CaseResult.Round round : r.rounds()) {
                if (round.oursError() != null) {
                    ours++;
                    p.printf("FAILED ours, %s round %d: %s%n", r.benchCase().label(), round.round(), round.oursError());
                }
                if (round.fioError() != null && fio != null) {
                    p.printf("failed fio, %s round %d: %s%n", r.benchCase().label(), round.round(), round.fioError());
                }
            }
        }
        return ours;
    }

    // ------------------------------------------------------------------ preparation

    /** Creates and prewrites the bench file when a selected case uses it; prewrites the namespace for uring_cmd reads. */
    private void prepareFile(List<BenchCase> cases) throws IOException {
        boolean usesFile = cases.stream().anyMatch(c -> c.kind() != BenchCase.Kind.PLACEMENT
                && !(c.kind() == BenchCase.Kind.RAW && c.engine() == IoEngine.URING_CMD));
        if (usesFile) { // the uring_cmd and placement cases use the namespace only
            if (!Files.exists(o.file())) {
                BlockDevices.createFile(o.file(), o.sizeBytes());
            } else if (Files.size(o.file()) < o.sizeBytes()) {
                throw new IllegalArgumentException(o.file() + " has " + Files.size(o.file()) + " bytes, fewer than"
                        + " --size " + o.sizeBytes());
            }
            if (o.prewrite()) {
                prewrite(o.file(), IoEngine.IO_URING, o.sizeBytes());
            }
        }
        if (o.device() != null && o.prewrite() && Uring.isBigEntriesAvailable()
                && BenchCase.rawCases(IoEngine.URING_CMD).stream().anyMatch(this::selected)) {
            prewrite(o.device(), IoEngine.URING_CMD, o.sizeBytes());
            devicePrewritten = true;
        }
    }

    /** Writes the whole region once (fio reads of a sparse file would be unfair: holes read as zeros, no I/O). */
    private void prewrite(Path target, IoEngine engine, long bytes) throws IOException {
        try (BlockDevice dev = BlockDevices.open(target, DeviceOptions.of(engine).withQueueDepth(64)
                .withBuffers(1 << 20, 16))) {
            long size = Math.min(bytes, dev.sizeBytes()) / (1 << 20) * (1 << 20);
            PipelinedIo p = new PipelinedIo(dev, new PipelinedIo.Spec(true, false, 1 << 20, 16, 0, size), 1);
            try {
                Measurement m = p.runOps(size >> 20);
                out.printf(Locale.ROOT, "prewrote %s of %s in %.1f s (%.0f MB/s), so that reads hit written blocks%n",
                        Sizes.human(size), target, m.seconds(), m.mbPerSec());
            } finally {
                p.release();
            }
        }
    }

    // ------------------------------------------------------------------ raw cases

    private Path targetOf(BenchCase c) {
        return c.engine() == IoEngine.URING_CMD ? o.device() : o.file();
    }

    private void runRaw(BenchCase c, CaseResult r, Path fioDir) throws IOException {
        Path target = targetOf(c);
        boolean fioCan = fio != null && (c.engine() != IoEngine.URING_CMD || fio.hasUringCmd());
        if (fio != null && !fioCan) {
            r.note(fio.version() + " has no io_uring_cmd engine (fio >= 3.32): ours only");
        }
        int maxCommand = Integer.MAX_VALUE;
        if (c.engine() == IoEngine.URING_CMD) { // fio sends one command per I/O: at most the namespace's max transfer
            try (NvmeNamespace ns = NvmeNamespace.open(target.toString(), false)) {
                maxCommand = ns.maxTransferBytes();
            }
            if (c.blockSize() > maxCommand) {
                r.note("fio's io_uring_cmd sends one command per I/O and " + target + " takes at most " + maxCommand
                        + " bytes per command: fio runs " + maxCommand + "-byte commands at " + c.queueDepth()
                        * (c.blockSize() / maxCommand) + " in flight, the commands ours splits each "
                        + c.blockSize() + "-byte I/O into");
            }
        }
        DeviceOptions opts = DeviceOptions.of(c.engine()).withQueueDepth(Math.max(64, c.depthPerRing()))
                .withBuffers(c.blockSize(), c.queueDepth()).withIoRings(c.rings()).withSubmitPolicy(o.submitPolicy());
        try (BlockDevice dev = BlockDevices.open(target, opts)) {
            long region = Math.min(o.sizeBytes(), dev.sizeBytes()) / c.blockSize() * c.blockSize();
            List<String> fioArgs = fioCan ? Fio.jobArgs(c, target, region, o.seconds(), o.rampSeconds(), maxCommand)
                    : null;
            for (int round = 1; round <= o.rounds(); round++) {
                int thisRound = round;
                Sides sides = sides(c, r, round, fioArgs, fioDir, () -> {
                    List<PipelinedIo> lanes = new ArrayList<>();
                    try {
                        for (int lane = 0; lane < c.rings(); lane++) { // one submitting thread per ring
                            lanes.add(new PipelinedIo(dev, new PipelinedIo.Spec(c.isWrite(), c.isRandom(),
                                    c.blockSize(), c.depthPerRing(), 0, region),
                                    1000L * thisRound + 31L * lane + c.id().hashCode(), o.pipeline()));
                        }
                        return lanes.size() == 1
                                ? lanes.get(0).run(o.rampSeconds() * 1_000_000_000L, o.seconds() * 1_000_000_000L)
                                : PipelinedIo.runParallel(lanes, o.rampSeconds() * 1_000_000_000L,
                                        o.seconds() * 1_000_000_000L);
                    } finally {
                        lanes.forEach(PipelinedIo::release);
                    }
                });
                Measurement huge = recordHugePages(c, round, sides);
                r.add(new CaseResult.Round(round, sides.ours(), sides.oursError(), sides.plain().measurement(),
                        sides.plain().error(), huge, null, null));
            }
        }
    }

    private void progress(BenchCase c, int round, Measurement ours, String oursError, Measurement ref, String fioError) {
        String unit = c.judgedByIops() ? "IOPS" : "MB/s";
        out.printf(Locale.ROOT, "%-28s round %d/%d  ours %s   fio %s%n", c.label(), round, o.rounds(),
                ours != null ? fmt(c, ours) + " " + unit + cpu(ours) : "FAILED: " + oursError,
                ref != null ? fmt(c, ref) + " " + unit + cpu(ref) : (fioError == null ? "-" : "n/a (" + fioError + ")"));
    }

    private static String fmt(BenchCase c, Measurement m) {
        return c.judgedByIops() ? String.format(Locale.ROOT, "%,.0f", m.iops())
                : String.format(Locale.ROOT, "%,.1f", m.mbPerSec());
    }

    private static String cpu(Measurement m) {
        return Double.isNaN(m.cpuCores()) ? "" : String.format(Locale.ROOT, " (%.2f cores)", m.cpuCores());
    }

    // ------------------------------------------------------------------ placement cases

    /** Why the placement cases cannot run here, or null. */
    private String placementUnavailable() {
        if (o.device() == null || o.blockDevice() == null) {
            return "needs one NVMe namespace's block device /dev/nvmeXnY (write streams) and generic device /dev/ngXnY"
                    + " (passthru): --device, twice, or once with one derived from the other's name";
        }
        if (!Uring.isBigEntriesAvailable()) {
            return "io_uring here has no SQE128/CQE32 (Linux >= 5.19) for the passthru side";
        }
        WriteStreams.Probe p = WriteStreams.probe(o.blockDevice());
        return p.available() ? null : p.unavailable();
    }

    /**
     * The placement cases: per round the same write job three ways (plain, write stream, passthru) with
     * the namespace's second placement id (stream 2: not the default handle). The block device (plain and
     * stream: the same device, only the SQE's stream byte differs) and the generic device are opened once
     * for all cases and rounds.
     */
    private void runPlacement(List<BenchCase> cases) throws IOException {
        String why = placementUnavailable();
        if (why != null) {
            for (BenchCase c : cases) {
                PlacementResult r = new PlacementResult(c);
                r.skip(why);
                placementResults.add(r);
                out.printf("%-28s skipped: %s%n", c.label(), why);
            }
            return;
        }
        if (o.prewrite() && !devicePrewritten) {
            // an emulated namespace's backing file allocates on first write: the first side would pay for it
            prewrite(o.device(), IoEngine.URING_CMD, o.sizeBytes());
            devicePrewritten = true;
        }
        int depth = cases.stream().mapToInt(BenchCase::queueDepth).max().orElse(1);
        int block = cases.stream().mapToInt(BenchCase::blockSize).max().orElse(1 << 20);
        try (BlockDevice streams = BlockDevices.open(o.blockDevice(), DeviceOptions.of(IoEngine.IO_URING)
                        .withQueueDepth(Math.max(64, depth)).withBuffers(Math.max(block, 1 << 20), depth)
                        .withSubmitPolicy(o.submitPolicy()));
                BlockDevice passthru = BlockDevices.open(o.device(), DeviceOptions.of(IoEngine.URING_CMD)
                        .withQueueDepth(Math.max(64, depth)).withBuffers(Math.max(block, 1 << 20), depth)
                        .withSubmitPolicy(o.submitPolicy()))) {
            if (!streams.supportsPlacement()) {
                throw new IOException(streams.placementUnsupportedReason());
            }
            WriteStreams ws = WriteStreams.open(o.blockDevice());
            int stream = ws.placementIds().size() > 1 ? 2 : 1;
            PlacementId id = PlacementId.of(ws.placementIdOf(stream));
            out.printf(Locale.ROOT, "placement: %s and %s, placement id %d = write stream %d (%s)%n", o.blockDevice(),
                    o.device(), id.value(), stream, ws.describeMap());
            for (BenchCase c : cases) {
                PlacementResult r = new PlacementResult(c);
                placementResults.add(r);
                r.setup("block_device", o.blockDevice().toString());
                r.setup("generic_device", o.device().toString());
                r.setup("kernel", ws.probe().kernel());
                r.setup("placement_id", id.value());
                r.setup("write_stream", stream);
                r.setup("stream_map", ws.describeMap());
                for (int round = 1; round <= o.rounds(); round++) {
                    placementRound(c, r, round, streams, passthru, id);
                }
            }
        }
    }

    private void placementRound(BenchCase c, PlacementResult r, int round, BlockDevice streams, BlockDevice passthru,
            PlacementId id) {
        Map<PlacementResult.Side, Measurement> measured = PlacementResult.perSide();
        Map<PlacementResult.Side, String> errors = PlacementResult.perSide();
        for (PlacementResult.Side side : PlacementResult.Side.values()) {
            BlockDevice dev = side == PlacementResult.Side.PASSTHRU ? passthru : streams;
            PlacementId placement = side == PlacementResult.Side.PLAIN ? PlacementId.NONE : id;
            long region = Math.min(o.sizeBytes(), dev.sizeBytes()) / c.blockSize() * c.blockSize();
            try {
                PipelinedIo p = new PipelinedIo(dev, new PipelinedIo.Spec(true, c.isRandom(), c.blockSize(),
                        c.queueDepth(), 0, region, placement), 1000L * round + c.id().hashCode(), o.pipeline());
                try {
                    measured.put(side, p.run(o.rampSeconds() * 1_000_000_000L, o.seconds() * 1_000_000_000L));
                } finally {
                    p.release();
                }
            } catch (IOException | RuntimeException e) {
                errors.put(side, e.getMessage());
            }
        }
        r.add(new PlacementResult.Round(round, measured, errors));
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-28s round %d/%d ", c.label(), round,
                o.rounds()));
        for (PlacementResult.Side side : PlacementResult.Side.values()) {
            Measurement m = measured.get(side);
            line.append(" ").append(side.key()).append(" ")
                    .append(m == null ? "FAILED" : fmt(c, m) + (c.judgedByIops() ? " IOPS" : " MB/s") + cpu(m));
        }
        out.println(line);
    }

    private void printPlacementTable(PrintStream p) {
        if (placementResults.isEmpty()) {
            return;
        }
        p.println();
        p.printf(Locale.ROOT, "Placement through the block layer: medians of %d round(s), all ours, the same job three"
                + " ways: plain = %s; stream = %s; passthru = %s. CPU us = process CPU (user + system) per operation.%n",
                o.rounds(), PlacementResult.Side.PLAIN.description(), PlacementResult.Side.STREAM.description(),
                PlacementResult.Side.PASSTHRU.description());
        String head = PlacementResult.header();
        p.println(head);
        p.println("-".repeat(head.lines().mapToInt(String::length).max().orElse(40)));
        for (PlacementResult r : placementResults) {
            p.println(r.row());
        }
    }

    // ------------------------------------------------------------------ adapter cases

    /**
     * The adapter cases: those of the default store ({@code verify_payload} "always") on one adapter, then
     * the load with "recovery" on a second one over the same file, populated again. Every round of a store
     * or load case is set beside the CRC32C alone, measured again at the round's end ({@link Crc32cAlone}):
     * the CPU one thread gets on a shared machine changes from minute to minute.
     */
    private void runAdapter(List<BenchCase> cases, Path fioDir) throws IOException {
        if (cases.stream().anyMatch(c -> c.kind() != BenchCase.Kind.ADAPTER_LOOKUP)) {
            crc32c = Crc32cAlone.open(BenchCase.MIB, Crc32cAlone.REGION_BYTES);
        }
        try {
            runAdapterStores(cases, fioDir);
        } finally {
            if (crc32c != null) {
                crc32c.close();
                crc32c = null;
            }
            if (fioVerifyFile != null) {
                Files.deleteIfExists(fioVerifyFile);
                fioVerifyFile = null;
            }
        }
    }

    private void runAdapterStores(List<BenchCase> cases, Path fioDir) throws IOException {
        List<BenchCase> always = cases.stream().filter(c -> c.kind() != BenchCase.Kind.ADAPTER_LOAD_VERIFY_RECOVERY)
                .toList();
        List<BenchCase> recovery = cases.stream()
                .filter(c -> c.kind() == BenchCase.Kind.ADAPTER_LOAD_VERIFY_RECOVERY).toList();
        if (!always.isEmpty()) {
            runAdapter(always, fioDir, RawBlockCoreConfig.VerifyPayload.ALWAYS);
        }
        if (!recovery.isEmpty()) {
            runAdapter(recovery, fioDir, RawBlockCoreConfig.VerifyPayload.RECOVERY);
        }
    }

    /** How long the CRC32C alone is measured beside each adapter round (and half as long from cache). */
    static final long CRC_ALONE_NANOS = 500_000_000L;

    /**
     * The CRC32C alone, measured now, at the end of a round of {@code ours}' case (after fio's sides, so
     * that it delays neither). Null when our side failed or no adapter store or load
     * case is running.
     */
    private Measurement crc32cBeside(Measurement ours) {
        if (crc32c == null || ours == null) {
            return null;
        }
        Measurement crc = crc32c.measure(CRC_ALONE_NANOS);
        if (crcAlone == null) {
            crcAlone = crc;
        }
        return crc;
    }

    /** The round's CPU per chunk, in a line, and the CRC32C's share of ours in ours' extras. */
    private void reportCpuPerChunk(CaseResult r, CaseResult.Round round) {
        Measurement ours = round.ours();
        Measurement crc = round.crc32cAlone();
        if (ours == null || crc == null) {
            return;
        }
        long crcBytes = CaseResult.crc32cBytesPerChunk(r.benchCase());
        ours.extra().put("crc32c_alone_mb_per_cpu_sec", Measurement.round(crc.mbPerCpuSec(), 0));
        if (crcBytes > 0 && ours.cpuSeconds() > 0) {
            ours.extra().put("crc32c_share_of_cpu", Measurement.round(ours.ops()
                    * CaseResult.crc32cMicrosPerChunk(crc, crcBytes) / 1e6 / ours.cpuSeconds(), 3));
        }
        Measurement f = round.fioLikeForLike();
        out.printf(Locale.ROOT, "%-28s round %d/%d  CPU per chunk: ours %.1f us, fio%s %s us per I/O, CRC32C alone"
                        + " %,.0f MB per CPU-second (%.1f us for the %d bytes checked): %s us beyond fio and the"
                        + " CRC32C%n", r.benchCase().label(), round.round(), o.rounds(), ours.cpuMicrosPerOp(),
                round.fioHugePages() != null ? " on huge pages" : "", f == null ? "-" : num(f.cpuMicrosPerOp(), 1),
                crc.mbPerCpuSec(), CaseResult.crc32cMicrosPerChunk(crc, crcBytes), crcBytes,
                num(r.cpuMicrosPerChunkBeyondFioAndCrc(round), 1));
    }

    private void runAdapter(List<BenchCase> cases, Path fioDir, RawBlockCoreConfig.VerifyPayload verify)
            throws IOException {
        boolean crcOnLoad = verify == RawBlockCoreConfig.VerifyPayload.ALWAYS;
        try (AdapterWorkload w = AdapterWorkload.open(o.file(), o.sizeBytes(), BenchCase.MIB, ADAPTER_CHUNKS_IN_FLIGHT,
                o.adapterKeysPerTask(), verify, o.adapterBufferBytes())) {
            out.printf(Locale.ROOT, "adapter: RawBlock L2 adapter (io_uring) on %s, %d keys of 1 MiB, tasks of %d"
                            + " keys, %d tasks in flight, chunk buffers %sregistered, taken in turn from a pool of %d MiB,"
                            + " verify_payload %s%n", o.file(), w.keyCount(), w.keysPerTask(), w.tasksInFlight(),
                    w.buffersRegistered() ? "" : "NOT ", w.bufferPoolBytes() >> 20, verify.configName());
            boolean populated = false;
            for (BenchCase c : cases) {
                CaseResult r = new CaseResult(c);
                results.add(r);
                if (c.kind() != BenchCase.Kind.ADAPTER_LOOKUP) {
                    r.note("RawBlock adapter, tasks of " + w.keysPerTask() + " x 1 MiB chunks, " + w.tasksInFlight()
                            + " tasks in flight, each on the buffers free longest in a pool of "
                            + (w.bufferPoolBytes() >> 20) + " MiB" + (w.bufferPoolBytes() == ADAPTER_BUFFER_BYTES
                                    ? " (a buffer per chunk in flight, as fio has one per I/O)" : "")
                            + "; bytes counted are payload (a store also writes a 4 KiB slot header per"
                            + " chunk and computes a CRC32C of every payload; verify_payload " + verify.configName()
                            + ": " + (crcOnLoad ? "a load computes the CRC32C of every payload)"
                                    : "every slot was written since the open: a load reads the payload alone and"
                                            + " computes no CRC32C)"));
                }
                switch (c.kind()) {
                    case ADAPTER_STORE_EVICT_ROUNDS -> {
                        r.note("every key cycled through (" + w.keyCount() + "); whenever the stored keys reach "
                                + Math.round(AdapterWorkload.EVICT_HIGH * 100) + " % of the slots, the oldest are deleted"
                                + " in one call down to " + Math.round(AdapterWorkload.EVICT_LOW * 100) + " %, as an"
                                + " eviction controller with those watermarks does");
                        adapterRounds(c, r, fioDir, () -> w.storeEvictingInRounds(o.rampSeconds() * 1_000_000_000L,
                                o.seconds() * 1_000_000_000L));
                        populated = false;
                    }
                    case ADAPTER_STORE, ADAPTER_STORE_HEADROOM -> {
                        int headroom = c.kind() == BenchCase.Kind.ADAPTER_STORE_HEADROOM ? AdapterWorkload.HEADROOM_SLOTS : 0;
                        if (headroom > 0) {
                            r.note("keys cycled through leave " + headroom + " slots free (" + w.keyCount(headroom)
                                    + " of " + w.keyCount() + " keys): each group is deleted just before it is stored"
                                    + " again, as in the store case, but the device is not full");
                        }
                        adapterRounds(c, r, fioDir, () -> w.store(o.rampSeconds() * 1_000_000_000L,
                                o.seconds() * 1_000_000_000L, headroom));
                        populated = false;
                    }
                    case ADAPTER_LOAD, ADAPTER_LOAD_VERIFY_RECOVERY -> {
                        populate(w);
                        populated = true;
                        adapterRounds(c, r, fioDir, () -> w.load(o.rampSeconds() * 1_000_000_000L,
                                o.seconds() * 1_000_000_000L));
                    }
                    case ADAPTER_LOOKUP -> {
                        int keys = 1000;
                        List<AdapterWorkload.LookupResult> roundResults = new ArrayList<>();
                        long ramp = o.rampSeconds() * 1_000_000_000L;
                        if (w.keyCount() >= keys && !populated) {
                            populate(w);
                            populated = true;
                        }
                        for (int round = 1; round <= o.rounds(); round++) {
                            AdapterWorkload.LookupResult l = w.keyCount() >= keys
                                    ? w.lookup(keys, ramp, o.lookupIterations())
                                    : AdapterWorkload.lookupOnMemory(keys, ramp, o.lookupIterations());
                            roundResults.add(l);
                            out.printf(Locale.ROOT, "%-28s round %d/%d  median %.1f us (CPU %.1f us, %.1f page faults,"
                                            + " process %.2f cores), p99 %.1f us (%s); hashing the keys once: CPU %.1f"
                                            + " us (lookup %.2fx that)%n", c.label(), round, o.rounds(),
                                    l.medianMicros(), l.cpuMedianMicros(), l.minorFaultsPerLookup(), l.processCpuCores(),
                                    l.percentileMicros(99), l.where(), l.hashOnceCpuMedianMicros(), l.cpuOverHashOnce());
                        }
                        r.lookup(roundResults);
                    }
                    default -> throw new IllegalStateException(c.kind().name());
                }
            }
        }
    }

    private void populate(AdapterWorkload w) throws IOException {
        Measurement m = w.populate();
        out.printf(Locale.ROOT, "adapter: stored all %d keys (untimed preparation of the load case): %.0f MB/s%n",
                w.keyCount(), m.mbPerSec());
    }

    @FunctionalInterface
    private interface Side {
        Measurement run() throws IOException;
    }

    /** The raw job fio runs beside an adapter case: the same reads or writes, block size and depth. */
    private static BenchCase fioJob(BenchCase c) {
        return new BenchCase(c.id(), BenchCase.Kind.RAW, IoEngine.IO_URING, c.rw(), c.blockSize(), c.queueDepth());
    }

    private void adapterRounds(BenchCase c, CaseResult r, Path fioDir, Side ours) throws IOException {
        List<String> fioArgs = fio == null ? null
                : Fio.jobArgs(fioJob(c), o.file(), o.sizeBytes(), o.seconds(), o.rampSeconds());
        Measurement previous = null;
        for (int round = 1; round <= o.rounds(); round++) {
            Sides sides = sides(c, r, round, fioArgs, fioDir, ours, previous);
            Measurement m = sides.ours();
            Measurement huge = recordHugePages(c, round, sides);
            Measurement sameWork = recordSameWork(c, round, sides);
            if (m != null && fioArgs != null && r.sameWork() == CaseResult.SameWork.FLUSHES) {
                fioWithOursFlushesInline(c, round, m, fioArgs, fioDir);
            }
            Measurement crc = crc32cBeside(m);
            CaseResult.Round done = new CaseResult.Round(round, m, sides.oursError(), sides.plain().measurement(),
                    sides.plain().error(), huge, crc, sameWork);
            r.add(done);
            reportCpuPerChunk(r, done);
            previous = m != null ? m : previous;
        }
    }

    /**
     * The sides of one round: ours, the fio run it is judged against, and plain fio. For a 1 MiB case the
     * reference is fio with its buffers on huge pages ({@code --mem=shmhuge}), as ours are ({@link IoMemory}):
     * fio's malloc'd pages can halve a device's throughput for 1 MiB I/O (a request takes one DMA segment
     * per physically contiguous run of pages, and a virtio queue without indirect descriptors holds 256);
     * plain fio then runs after both, for the JSON and the second column. For the other cases plain fio is
     * the reference. Ours and the reference swap places every round ({@link #fioFirst}): what a side meets
     * from the run before it (a host cache warmed, a virtual disk's write-back still draining) falls on each
     * in turn. The hugetlb pages fio needs are reserved when the bench runs as root ({@link HugetlbPool});
     * else the case's note says why fio on huge pages did not run.
     */
    private Sides sides(BenchCase c, CaseResult r, int round, List<String> fioArgs, Path fioDir, Side ours) {
        return sides(c, r, round, fioArgs, fioDir, ours, null);
    }

    /**
     * {@link #sides(BenchCase, CaseResult, int, List, Path, Side)}, and for a case whose work fio's job alone
     * lacks ({@link CaseResult#sameWork}) the reference is fio on huge pages doing it too ({@link #sameWorkRun}),
     * taking turns with ours; fio on huge pages alone and plain fio run after both. ({@code previous}: ours'
     * figures of the round before, whose flushes fio repeats when it runs first.)
     */
    private Sides sides(BenchCase c, CaseResult r, int round, List<String> fioArgs, Path fioDir, Side ours,
            Measurement previous) {
        Path plainJson = fioDir.resolve(c.id() + "-round" + round + ".json");
        boolean onHugePages = fioArgs != null && c.blockSize() >= BenchCase.MIB;
        CaseResult.SameWork work = onHugePages ? r.sameWork() : null;
        FioRun first = null;
        SameWorkRun sameWork = null;
        if (fioFirst(round)) {
            if (work != null) {
                sameWork = sameWorkRun(work, c, round, round - 1, previous, fioArgs, fioDir);
            } else {
                first = onHugePages ? fioOnHugePages(c, r, round, fioArgs, fioDir) : fioRound(fioArgs, plainJson);
            }
        }
        Measurement m = null;
        String err = null;
        try {
            m = ours.run();
        } catch (IOException | RuntimeException e) {
            err = e.getMessage();
        }
        if (work != null && sameWork == null) { // after ours, or again when it could not run first
            sameWork = sameWorkRun(work, c, round, round, m, fioArgs, fioDir);
        }
        FioRun huge = null;
        FioRun plain;
        if (onHugePages) {
            // in an even round whose reservation fell short before ours, tried again: pages come back late
            huge = first != null ? first : fioOnHugePages(c, r, round, fioArgs, fioDir);
            plain = fioRound(fioArgs, plainJson);
        } else {
            plain = first != null ? first : fioRound(fioArgs, plainJson);
        }
        progress(c, round, m, err, plain.measurement(), plain.error());
        return new Sides(m, err, plain, huge, sameWork);
    }

    /**
     * One round's runs: ours (or why it failed), plain fio, fio on huge pages, and fio on huge pages doing
     * ours' work too (each null when not run).
     */
    private record Sides(Measurement ours, String oursError, FioRun plain, FioRun huge, SameWorkRun sameWork) {
    }

    /**
     * fio doing ours' {@code work} too: beside the flushes of ours' round {@code asRound}, one every
     * {@code flushPeriodMs}, or checking the CRC32C of every block (0, the round itself).
     */
    private record SameWorkRun(CaseResult.SameWork work, FioRun run, int asRound, long flushPeriodMs) {
    }

    /**
     * fio on huge pages doing ours' {@code work} in {@code round}: beside the flushes ours made in round
     * {@code asRound} ({@code oursOf}), or checking the same CRC32C; null when it cannot run now.
     */
    private SameWorkRun sameWorkRun(CaseResult.SameWork work, BenchCase c, int round, int asRound, Measurement oursOf,
            List<String> fioArgs, Path fioDir) {
        return switch (work) {
            case FLUSHES -> concurrentFlushes(c, round, asRound, oursOf, fioArgs, fioDir);
            case CRC32C_CHECK -> {
                FioRun run = crc32cCheck(c, round, fioArgs, fioDir);
                yield run == null ? null : new SameWorkRun(work, run, round, 0);
            }
        };
    }

    /**
     * Records fio doing ours' work: under its {@link CaseResult.SameWork#key} in the round's JSON, and in
     * ours' extras its figures ({@link #record}); beside flushes also its flusher's count and mean time of
     * flushes, and the round whose flushes it repeated.
     *
     * @return fio's figures, or null when it did not run (or ours did not)
     */
    private Measurement recordSameWork(BenchCase c, int round, Sides sides) {
        SameWorkRun f = sides.sameWork();
        Measurement ours = sides.ours();
        if (f == null || ours == null) {
            return null;
        }
        if (f.work() == CaseResult.SameWork.CRC32C_CHECK) {
            return record(c, round, ours, f.run(), "crc32c_verify", "fio on huge pages checking the CRC32C of every block");
        }
        Measurement beside = record(c, round, ours, f.run(), "concurrent_flushes", "fio on huge pages beside a flush"
                + " every " + f.flushPeriodMs() + " ms, as ours' log commits"
                + (f.asRound() == round ? "" : " in round " + f.asRound()));
        if (beside != null) {
            ours.extra().put("fio_concurrent_flushes_count", beside.extra().get("other_jobs_fdatasyncs"));
            ours.extra().put("fio_concurrent_flushes_flush_ms_avg", beside.extra().get("other_jobs_fdatasync_ms_avg"));
            ours.extra().put("fio_concurrent_flushes_as_round", f.asRound());
        }
        return beside;
    }

    /**
     * fio's read job on huge pages with {@code --verify=crc32c}, over a file of the bench file's size that
     * fio wrote with that check ({@link #fioVerifyFile}, written once): every block read is checked against the
     * CRC32C fio stored in its header, as a load under {@code verify_payload} "always" checks every payload
     * against the one in its index. That is the work such a load does beyond fio's job alone, and the
     * reference it is judged against, read for the same ramp and runtime as ours
     * ({@link Fio#verifyingReadArgs}: fio would stop a verifying read after one pass over the file). Null
     * when fio cannot run on huge pages (the round is then judged against fio's job alone), or a failed run
     * when the file could not be written or named.
     */
    private FioRun crc32cCheck(BenchCase c, int round, List<String> fioArgs, Path fioDir) {
        if (hugePagesForFio(fioArgs) != null) {
            return null;
        }
        Path file = o.file().toAbsolutePath().resolveSibling(o.file().getFileName() + ".fio-crc32c");
        List<String> args;
        try {
            args = Fio.verifyingReadArgs(Fio.jobArgs(fioJob(c), file, o.sizeBytes(), o.seconds(), o.rampSeconds()));
        } catch (IllegalArgumentException e) {
            return new FioRun(null, e.getMessage());
        }
        if (fioVerifyFile == null) {
            if (!Files.isRegularFile(o.file())) {
                return new FioRun(null, o.file() + " is not a regular file: fio's check needs a file of its own"
                        + " beside it");
            }
            try {
                Files.createFile(file); // never one the bench did not make
            } catch (IOException e) {
                return new FioRun(null, "cannot create " + file + " for fio's check (" + e + "); remove it if it"
                        + " is left from an earlier run");
            }
            fioVerifyFile = file; // removed after the adapter cases
            FioRun written = fioRound(Fio.verifiedFileArgs(file, o.sizeBytes(), c.blockSize()),
                    fioDir.resolve(c.id() + "-crc32c-verify-file.json"));
            if (written.measurement() == null) {
                try {
                    Files.deleteIfExists(file); // the next round tries again
                    fioVerifyFile = null;
                } catch (IOException e) {
                    written = new FioRun(null, written.error() + "; and it could not be removed: " + e);
                }
                return new FioRun(null, "fio could not write " + file + " with --verify=crc32c: " + written.error());
            }
            out.printf(Locale.ROOT, "%-28s fio wrote %s with a CRC32C in every %d-byte block (%,.0f MB/s)%n", c.label(),
                    file, c.blockSize(), written.measurement().mbPerSec());
        }
        return fioRun(c, round, args, fioDir, List.of("--mem=shmhuge", "--verify=crc32c"), "crc32c_verify");
    }

    /** fio's job with its buffers on huge pages; null (and the case's note says why) when it cannot run. */
    private FioRun fioOnHugePages(BenchCase c, CaseResult r, int round, List<String> fioArgs, Path fioDir) {
        String why = hugePagesForFio(fioArgs);
        if (why != null) {
            if (r.note() == null || !r.note().contains(CaseResult.HUGE_PAGES_NOT_RUN)) {
                r.note(CaseResult.HUGE_PAGES_NOT_RUN + " (round " + round + "): " + why + "; the bandwidth is judged"
                        + " against plain fio, not like for like");
            }
            return null;
        }
        return fioRun(c, round, fioArgs, fioDir, List.of("--mem=shmhuge"), "hugepages");
    }

    /**
     * Records fio on huge pages beside ours: {@code fio_hugepages} in the round's JSON,
     * {@code fio_hugepages_mb_per_sec} and {@code ours_over_fio_hugepages} in ours' extras.
     *
     * @return fio's figures, or null when it did not run (or ours did not)
     */
    private Measurement recordHugePages(BenchCase c, int round, Sides sides) {
        if (sides.huge() == null || sides.ours() == null) {
            return null;
        }
        return record(c, round, sides.ours(), sides.huge(), "hugepages", "fio with its buffers on huge pages");
    }

    /** Reserves the hugetlb pages fio's job takes on huge pages: null when they are free, else why not. */
    private String hugePagesForFio(List<String> fioArgs) {
        boolean reservedBefore = hugetlb.reservation() != null;
        String why = hugetlb.ensureFree(Fio.hugetlbPagesNeeded(fioArgs, hugetlb.pages().pageBytes()));
        String reserved = hugetlb.reservation();
        if (!reservedBefore && reserved != null) {
            out.println(reserved);
        }
        return why;
    }

    /**
     * A store makes its deletes and puts durable with a flush per log commit. After each store round, fio runs
     * once more with a flush ({@code --fdatasync}) every as many MiB as ours wrote per commit:
     * {@code fio_same_flushes_mb_per_sec}, {@code fio_same_flushes_every_mib},
     * {@code ours_over_fio_same_flushes}. That fio stops its writes at each flush, where ours' log writer
     * flushes beside the puts, as the reference judged does ({@link #concurrentFlushes}): this one is for the
     * JSON, what flushing inline would leave.
     */
    private void fioWithOursFlushesInline(BenchCase c, int round, Measurement ours, List<String> fioArgs,
            Path fioDir) {
        Object commits = ours.extra().get("log_commits");
        if (!(commits instanceof Number n) || n.longValue() <= 0) {
            return;
        }
        long everyMib = Math.max(1, Math.round(ours.bytes() / (double) BenchCase.MIB / n.longValue()));
        ours.extra().put("fio_same_flushes_every_mib", everyMib);
        boolean huge = hugePagesForFio(fioArgs) == null; // like for like when it can be
        ours.extra().put("fio_same_flushes_on_huge_pages", huge);
        fioVariant(c, round, ours, fioArgs, fioDir,
                huge ? List.of("--fdatasync=" + everyMib, "--mem=shmhuge") : List.of("--fdatasync=" + everyMib),
                "same_flushes", "fio with a flush every " + everyMib + " MiB, as ours' commits"
                        + (huge ? ", its buffers on huge pages" : ""));
    }

    /**
     * fio's job on huge pages beside a second job that writes 4 KiB and flushes ({@link Fio#flusherJob}) as
     * often as ours' log committed in its window ({@code oursOf}, of round {@code asRound}), pausing between
     * flushes for ours' mean time between the end of one commit and the start of the next: the same flushes,
     * made while the writes go on, as the log writer makes them. Where a flush stops every write for its
     * duration (a virtual disk whose flush writes back the host's cache), that is what the store's
     * durability leaves of fio's throughput, and the reference a store is judged against. Null when ours has
     * no commits to repeat or fio cannot run on huge pages (the round is then judged against fio on huge
     * pages without flushes).
     */
    private SameWorkRun concurrentFlushes(BenchCase c, int round, int asRound, Measurement oursOf,
            List<String> fioArgs, Path fioDir) {
        String file = Fio.option(fioArgs, "filename");
        long commits = oursOf == null ? 0 : (long) number(oursOf.extra().get("log_commits"));
        if (file == null || commits <= 0 || hugePagesForFio(fioArgs) != null) {
            return null;
        }
        double periodMs = oursOf.seconds() * 1000.0 / commits;
        double busyMs = number(oursOf.extra().get("log_commit_write_ms_avg"))
                + number(oursOf.extra().get("log_commit_flush_ms_avg"));
        long pauseMicros = Math.round(Math.max(0, periodMs - busyMs) * 1000);
        List<String> options = new ArrayList<>();
        options.add("--mem=shmhuge");
        options.addAll(Fio.flusherJob(file, pauseMicros, o.seconds(), o.rampSeconds()));
        return new SameWorkRun(CaseResult.SameWork.FLUSHES, fioRun(c, round, fioArgs, fioDir, options,
                "concurrent_flushes"), asRound, Math.round(periodMs));
    }

    private static double number(Object o) {
        return o instanceof Number n ? n.doubleValue() : 0;
    }

    /**
     * fio's job once more with {@code options} added, after ours' round: {@code fio_<name>_mb_per_sec} and
     * {@code ours_over_fio_<name>} in ours' extras (or {@code fio_<name>_error}), and a line saying so.
     *
     * @return fio's figures, or null when it failed
     */
    private Measurement fioVariant(BenchCase c, int round, Measurement ours, List<String> fioArgs, Path fioDir,
            List<String> options, String name, String what) {
        return record(c, round, ours, fioRun(c, round, fioArgs, fioDir, options, name), name, what);
    }

    /** fio's job with {@code options} added, its JSON named after the round and {@code name}. */
    private FioRun fioRun(BenchCase c, int round, List<String> fioArgs, Path fioDir, List<String> options,
            String name) {
        List<String> args = new ArrayList<>(fioArgs);
        args.addAll(options);
        return fioRound(args, fioDir.resolve(c.id() + "-round" + round + "-" + name.replace('_', '-') + ".json"));
    }

    /** Puts fio's run {@code f} beside ours ({@code fio_<name>_mb_per_sec}, {@code ours_over_fio_<name>}) and says it. */
    private Measurement record(BenchCase c, int round, Measurement ours, FioRun f, String name, String what) {
        if (f.measurement() == null) {
            ours.extra().put("fio_" + name + "_error", String.valueOf(f.error()));
            return null;
        }
        double mbs = f.measurement().mbPerSec();
        ours.extra().put("fio_" + name + "_mb_per_sec", Measurement.round(mbs, 2));
        ours.extra().put("ours_over_fio_" + name, Measurement.round(ours.mbPerSec() / mbs, 3));
        out.printf(Locale.ROOT, "%-28s round %d/%d  %s: %,.1f MB/s (ours/that %.2fx)%n", c.label(), round, o.rounds(),
                what, mbs, ours.mbPerSec() / mbs);
        return f.measurement();
    }

    /**
     * Whether the reference runs before ours in {@code round}: every second round, so that whatever the side
     * that runs second in a round meets (a host cache the first one warmed, a virtual disk's write-back still
     * draining, its burst allowance spent) does not always fall on the same side.
     */
    private static boolean fioFirst(int round) {
        return round % 2 == 0;
    }

    /** fio's side of a round: its measurement, or why there is none. */
    private record FioRun(Measurement measurement, String error) {
    }

    /** @param args fio's job, or null when fio cannot run the case */
    private FioRun fioRound(List<String> args, Path json) {
        if (args == null) {
            return new FioRun(null, fio == null ? "fio not installed" : null);
        }
        try {
            return new FioRun(fio.run(args, json, o.seconds() + o.rampSeconds() + 120L), null);
        } catch (IOException e) {
            return new FioRun(null, e.getMessage());
        }
    }

    // ------------------------------------------------------------------ report

    /** The table of medians and ratios. */
    public void printTable(PrintStream p) {
        p.printf(Locale.ROOT, "Medians of %d round(s); ratio = ours/fio; CPU in cores busy (user+system) during the"
                + " window. fio = the reference judged: for 1 MiB cases fio with its buffers on huge pages"
                + " (--mem=shmhuge), as ours are, like for like (* = it did not run: plain fio, see the case's note),"
                + " and for the adapter's stores that fio beside the same flushes as ours' log commits (F), for its"
                + " loads under verify_payload \"always\" that fio checking the CRC32C of every block it reads (C);"
                + " 2nd fio = plain fio, with its own malloc'd buffers (F and C: fio on huge pages alone)."
                + " CPU and per CPU-s: plain fio.%n", o.rounds());
        String row = "%-26s %-6s %12s %13s %7s %7s %4s | %12s %7s | %5s %5s %11s %11s %6s %6s %4s";
        int width = printHeading(p, row, new Object[] {"case", "unit", "ours", "fio", "ratio", "target", "met",
                "2nd fio", "ratio", "CPU", "CPU", "per CPU-s", "per CPU-s", "ratio", "target", "met"},
                new Object[] {"", "", "", "", "", "", "", "", "", "ours", "fio", "ours", "fio", "", "", ""});
        int met = 0;
        int judged = 0;
        for (CaseResult r : results) {
            BenchCase c = r.benchCase();
            if (r.skipped() != null) {
                p.printf(Locale.ROOT, "%-26s skipped: %s%n", c.label(), r.skipped());
                continue;
            }
            List<CaseResult.Target> ts = r.targets();
            for (CaseResult.Target t : ts) {
                if (t.met() != null) {
                    judged++;
                    met += t.met() ? 1 : 0;
                }
            }
            if (c.kind() == BenchCase.Kind.ADAPTER_LOOKUP) {
                CaseResult.Target latency = target(ts, CaseResult.LOOKUP_LATENCY_TARGET);
                CaseResult.Target cpu = target(ts, CaseResult.LOOKUP_CPU_TARGET);
                p.printf(Locale.ROOT, "%-26s %-6s %12s %13s %7s %7s %4s |%n", c.label(), "p50 us",
                        r.lookup() == null ? "-" : num(r.lookup().medianMicros(), 1), "-", "-", latency.describe(),
                        yesNo(latency.met()));
                p.printf(Locale.ROOT, "%-26s %-6s %12s %13s %7s %7s %4s |%n", "  CPU vs hashing keys once", "CPU us",
                        r.lookup() == null ? "-" : num(r.lookup().cpuMedianMicros(), 1), num(r.hashOnceCpuMicros(), 1),
                        ratio(r.lookupCpuOverHashOnce()), cpu.describe(), yesNo(cpu.met()));
                continue;
            }
            CaseResult.Target thr = ts.stream().filter(t -> t.name().startsWith("IOPS ours/")
                    || t.name().startsWith("bandwidth ours/")).findFirst().orElse(null);
            CaseResult.Target eff = ts.stream().filter(t -> t.name().contains("per CPU")).findFirst().orElse(null);
            boolean iops = c.judgedByIops();
            boolean second = !Double.isNaN(r.secondFioThroughput());
            p.printf(Locale.ROOT, row + "%n", c.label(), r.throughputUnit(), num(r.oursThroughput(), iops ? 0 : 1),
                    num(r.headlineFioThroughput(), iops ? 0 : 1) + (r.headlineFallsBackToPlainFio() && r.hasFio() ? "*"
                            : r.judgedOnSameWork() ? r.sameWork().mark() : " "), ratio(r.headlineThroughputRatio()),
                    thr == null ? "-" : thr.describe(), thr == null ? "-" : yesNo(thr.met()),
                    second ? num(r.secondFioThroughput(), 1) : "-", second ? ratio(r.secondThroughputRatio()) : "-",
                    num(r.oursCpuCores(), 2), num(r.fioCpuCores(), 2),
                    num(r.oursIopsPerCpuSec(), 0), num(r.fioIopsPerCpuSec(), 0), ratio(r.cpuEfficiencyRatio()),
                    eff == null ? "-" : eff.describe(), eff == null ? "-" : yesNo(eff.met()));
        }
        p.println("-".repeat(width));
        p.printf(Locale.ROOT, "targets met: %d of %d judged%s%n", met, judged,
                fio == null ? " (fio missing: ratios cannot be judged; run `make bench`)" : "");
        p.println(CPU_ACCOUNTING + ".");
        printCpuPerChunkTable(p);
        printFlushesTable(p);
        printWhy(p);
    }

    private static CaseResult.Target target(List<CaseResult.Target> ts, String name) {
        return ts.stream().filter(t -> t.name().equals(name)).findFirst().orElseThrow();
    }

    /**
     * The adapter's CPU per chunk beyond fio's per I/O and beyond the CRC32C of the bytes it checks
     * (medians of the rounds; each round's figures are in the JSON).
     */
    private void printCpuPerChunkTable(PrintStream p) {
        List<CaseResult> chunks = results.stream().filter(r -> r.skipped() == null && r.movesChunks() && r.hasOurs())
                .toList();
        if (chunks.isEmpty()) {
            return;
        }
        p.println();
        p.println("CPU per chunk (us, medians of the rounds): ours = process CPU per chunk; fio = its CPU per I/O of"
                + " the chunk's bytes (on huge pages where that ran; * = plain fio); CRC32C = the CPU of the bytes the"
                + " store checksums (stores and \"always\" loads: the payload; \"recovery\" loads: none, every slot was"
                + " stored since the open) at the rate of the CRC32C alone, measured beside each round; beyond = ours -"
                + " fio - CRC32C, per round");
        String row = "%-26s %8s %9s %11s %8s %8s %7s %4s";
        printHeading(p, row, new Object[] {"case", "ours", "fio", "CRC32C MB", "CRC32C", "beyond", "target", "met"},
                new Object[] {"", "", "", "per CPU-s", "", "", "", ""});
        for (CaseResult r : chunks) {
            CaseResult.Target t = target(r.targets(), CaseResult.CPU_BEYOND_TARGET);
            p.printf(Locale.ROOT, row + "%n", r.benchCase().label(), num(r.oursCpuMicrosPerChunk(), 1),
                    num(r.fioCpuMicrosPerIo(), 1) + (r.cpuPerChunkAgainstPlainFio() ? "*" : " "),
                    num(r.crc32cAloneMbPerCpuSec(), 0), num(r.crc32cMicrosPerChunk(), 1),
                    num(r.cpuMicrosPerChunkBeyondFioAndCrc(), 1), t.describe(), yesNo(t.met()));
        }
    }

    /**
     * The stores against fio with the same flushes as ours' log commits, made two ways (medians of the
     * rounds): beside fio's writes, the reference judged, and inline, stopping them.
     */
    private void printFlushesTable(PrintStream p) {
        List<CaseResult> stores = results.stream().filter(r -> r.skipped() == null && r.hasOurs()
                && !Double.isNaN(r.medianExtra(true, "log_commits"))).toList();
        if (stores.isEmpty()) {
            return;
        }
        p.println();
        p.println("Stores and their flushes (MB/s, medians of the rounds): ours commits its log with a flush, as often"
                + " as commits says, while its puts go on; fio inline = fio's job with --fdatasync every as many MiB"
                + " (its writes stop at each flush); fio beside = fio's job beside a second one flushing as often,"
                + " the reference judged (fio's flush ms: the mean time of those flushes)");
        String row = "%-26s %8s %8s %9s %9s %8s %9s %7s %7s";
        printHeading(p, row, new Object[] {"case", "ours", "commits", "flush ms", "fio", "fio's", "fio", "ratio", "ratio"},
                new Object[] {"", "", "", "ours", "inline", "flush ms", "beside", "inline", "beside"});
        for (CaseResult r : stores) {
            p.printf(Locale.ROOT, row + "%n", r.benchCase().label(), num(r.oursThroughput(), 1),
                    num(r.medianExtra(true, "log_commits"), 0), num(r.medianExtra(true, "log_commit_flush_ms_avg"), 1),
                    num(r.medianExtra(true, "fio_same_flushes_mb_per_sec"), 1),
                    num(r.medianExtra(true, "fio_concurrent_flushes_flush_ms_avg"), 1),
                    num(r.medianExtra(true, "fio_concurrent_flushes_mb_per_sec"), 1),
                    num(r.medianExtra(true, "ours_over_fio_same_flushes"), 2),
                    num(r.medianExtra(true, "ours_over_fio_concurrent_flushes"), 2));
        }
    }

    /** Why a ratio is what it is: depth in flight, latency, system calls per I/O (medians of the rounds). */
    public void printWhy(PrintStream p) {
        p.println();
        p.println("Why (medians): depth = I/Os in flight, time-averaged: ours in the kernel (ring) and by Little's law"
                + " (IOPS x mean latency), fio by Little's law (IOPS x mean lat); latency submit to completion (fio: its"
                + " lat, --lat_percentiles=1); io_uring_enter calls per I/O and SQEs per submitting call (ours), I/Os per"
                + " submit call (fio). fio = the fio each case is judged against in the first table (a store's: beside the"
                + " same flushes; an \"always\" load's: checking the same CRC32C)");
        String head = String.format(Locale.ROOT, "%-26s %7s %7s %7s | %8s %8s %8s %8s | %8s %8s %12s", "case",
                "ring", "Little", "fio", "p50 ours", "p50 fio", "p99 ours", "p99 fio", "enters/IO", "SQEs/submit",
                "fio I/O/call");
        p.println(head);
        p.println("-".repeat(head.length()));
        for (CaseResult r : results) {
            BenchCase c = r.benchCase();
            if (r.skipped() != null || c.kind() == BenchCase.Kind.ADAPTER_LOOKUP) {
                continue;
            }
            p.printf(Locale.ROOT, "%-26s %7s %7s %7s | %8s %8s %8s %8s | %8s %8s %12s%n", c.label(),
                    num(r.medianExtra(true, "ring_depth_avg"), 1), num(r.medianExtra(true, "depth_littles_law"), 1),
                    num(r.judgedFioMedianExtra("depth_littles_law"), 1), num(r.medianExtra(true, "lat_p50_us"), 1),
                    num(r.judgedFioMedianExtra("lat_p50_us"), 1), num(r.medianExtra(true, "lat_p99_us"), 1),
                    num(r.judgedFioMedianExtra("lat_p99_us"), 1), num(r.medianExtra(true, "io_uring_enters_per_io"), 2),
                    num(r.medianExtra(true, "sqes_per_submit"), 2), r.fioSubmitBatch());
        }
    }

    /**
     * A table's two heading lines in {@code row}'s columns (the names, then what is under them) and the rule
     * below them.
     *
     * @return the rule's width
     */
    private static int printHeading(PrintStream p, String row, Object[] names, Object[] below) {
        String head = String.format(Locale.ROOT, row, names);
        p.println(head);
        p.println(String.format(Locale.ROOT, row, below));
        p.println("-".repeat(head.length()));
        return head.length();
    }

    private static String yesNo(Boolean b) {
        return b == null ? "-" : b ? "yes" : "NO";
    }

    private static String num(double v, int digits) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%,." + digits + "f", v);
    }

    private static String ratio(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.2fx", v);
    }

    private Map<String, Object> toMap(Instant started) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tool", "fdpblock bench");
        m.put("started", started.toString());
        m.put("finished", Instant.now().toString());
        Map<String, Object> host = new LinkedHashMap<>();
        host.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        host.put("cpus", Runtime.getRuntime().availableProcessors());
        host.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        // other work on the machine skews every figure: /proc/loadavg before and after
        host.put("loadavg_start", loadAtStart);
        host.put("loadavg_end", loadAverage());
        m.put("host", host);
        Map<String, Object> opts = new LinkedHashMap<>();
        opts.put("file", o.file().toString());
        opts.put("size_bytes", o.sizeBytes());
        opts.put("device", o.device() == null ? null : o.device().toString());
        opts.put("block_device", o.blockDevice() == null ? null : o.blockDevice().toString());
        opts.put("seconds", o.seconds());
        opts.put("ramp_seconds", o.rampSeconds());
        opts.put("rounds", o.rounds());
        opts.put("prewrite", o.prewrite());
        opts.put("pipeline", o.pipeline().name().toLowerCase());
        opts.put("submit_policy", o.submitPolicy().name().toLowerCase());
        opts.put("io_buffers", IoMemory.hugePages()); // what backs our buffers (IoMemory); fio mallocs its own
        opts.put("adapter_keys_per_task", o.adapterKeysPerTask());
        opts.put("adapter_buffer_bytes", o.adapterBufferBytes());
        opts.put("lookup_iterations", o.lookupIterations());
        m.put("options", opts);
        if (fio == null) {
            m.put("fio", null);
        } else {
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("version", fio.version());
            f.put("path", fio.executable().toString());
            m.put("fio", f);
        }
        m.put("cpu_accounting", CPU_ACCOUNTING);
        m.put("units", "IOPS = operations per second; MB/s = 10^6 bytes per second; per_cpu_sec = operations (4 KiB"
                + " cases) or MB (1 MiB cases) per CPU-second (user + system)");
        m.put("cases", results.stream().map(CaseResult::toMap).toList());
        if (crcAlone != null) { // the run's first; every adapter round has its own, measured beside it
            m.put("crc32c_alone", crcAlone.toMap());
        }
        if (fio != null) { // what backs fio's buffers in the like-for-like reference, and what the bench reserved
            m.put("hugetlb", hugetlb.describe());
        }
        if (!placementResults.isEmpty()) {
            m.put("placement_cases", placementResults.stream().map(PlacementResult::toMap).toList());
        }
        return m;
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
