package io.fdpblock.bench;

import io.fdpblock.device.IoEngine;

import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The reference side: runs fio with a job generated from a {@link BenchCase} and reads its JSON output.
 *
 * <p>CPU time of fio is taken from its own JSON: {@code (usr_cpu + sys_cpu) / 100 x job_runtime}, i.e.
 * the job process's getrusage (user + system) over its measured window (fio resets it at the end of
 * {@code ramp_time}), the counterpart of our JVM's process CPU time over our measured window.
 */
public final class Fio {
    /** fio's JSON, read refusing a key given twice (Jackson would keep the last value silently). */
    private static final ObjectMapper JSON =
            JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

    private final Path executable;
    private final String version;

    private Fio(Path executable, String version) {
        this.executable = executable;
        this.version = version;
    }

    /**
     * Finds fio: {@code explicit} when given, else on the PATH.
     *
     * @return null when there is none
     */
    public static Fio find(String explicit) {
        Path exe = null;
        if (explicit != null && !explicit.isBlank()) {
            Path p = Path.of(explicit);
            exe = Files.isExecutable(p) ? p : null;
        } else {
            String path = System.getenv("PATH");
            for (String dir : (path == null ? "/usr/bin:/usr/local/bin" : path).split(File.pathSeparator)) {
                Path p = Path.of(dir.isEmpty() ? "." : dir, "fio");
                if (Files.isExecutable(p) && !Files.isDirectory(p)) {
                    exe = p;
                    break;
                }
            }
        }
        if (exe == null) {
            return null;
        }
        String v;
        try {
            Process pr = new ProcessBuilder(exe.toString(), "--version").redirectErrorStream(true).start();
            v = new String(pr.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            pr.waitFor(10, TimeUnit.SECONDS);
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
        return new Fio(exe, v);
    }

    public Path executable() {
        return executable;
    }

    public String version() {
        return version;
    }

    /** fio >= 3.32 has the io_uring_cmd engine (NVMe passthru). */
    public boolean hasUringCmd() {
        Matcher m = Pattern.compile("fio-(\\d+)\\.(\\d+)").matcher(version);
        return m.find() && (Integer.parseInt(m.group(1)) > 3
                || (Integer.parseInt(m.group(1)) == 3 && Integer.parseInt(m.group(2)) >= 32));
    }

    /**
     * The job, as fio arguments (without the executable and the output options).
     *
     * @param target the file or /dev/ngXnY
     * @param sizeBytes bytes of it to use (from offset 0)
     */
    public static List<String> jobArgs(BenchCase c, Path target, long sizeBytes, int runtimeSeconds, int rampSeconds) {
        return jobArgs(c, target, sizeBytes, runtimeSeconds, rampSeconds, Integer.MAX_VALUE);
    }

    /**
     * The job for a device whose commands carry at most {@code maxCommandBytes} (NVMe passthru: the
     * namespace's max transfer). fio's io_uring_cmd engine sends each I/O as one command and the device
     * refuses larger ones (EINVAL), where our engine splits: fio then runs the commands ours sends, with the
     * same bytes in flight ({@code --bs} = that size, {@code --iodepth} scaled up).
     */
    public static List<String> jobArgs(BenchCase c, Path target, long sizeBytes, int runtimeSeconds, int rampSeconds,
            int maxCommandBytes) {
        int bs = c.blockSize();
        int depth = c.depthPerRing();
        if (bs > maxCommandBytes && c.engine() == IoEngine.URING_CMD) {
            depth = (int) Math.min(4096, (long) depth * (bs / maxCommandBytes));
            bs = maxCommandBytes;
        }
        List<String> a = new ArrayList<>();
        a.add("--name=" + c.id());
        a.add("--filename=" + target);
        a.add("--size=" + sizeBytes);
        a.add("--ioengine=" + c.fioEngine());
        if (c.fioEngine().equals("io_uring_cmd")) {
            a.add("--cmd_type=nvme"); // a char device: no page cache to bypass, and fio refuses --direct=1 on it
        } else {
            a.add("--direct=1");
        }
        a.add("--rw=" + c.rw());
        a.add("--bs=" + bs);
        a.add("--iodepth=" + depth);
        a.add("--numjobs=" + c.rings());
        if (c.rings() > 1) { // one result for all jobs: I/Os and CPU summed, runtime the longest
            a.add("--group_reporting");
        }
        // ours uses registered buffers and a registered file: so does fio
        a.add("--fixedbufs=1");
        a.add("--registerfiles=1");
        if (c.isRandom()) { // ours draws offsets uniformly with repeats: no random map, no repeatable seed
            a.add("--norandommap");
            a.add("--randrepeat=0");
        }
        a.add("--lat_percentiles=1"); // percentiles of lat (submission to completion), as ours; not only clat
        a.add("--time_based");
        a.add("--runtime=" + runtimeSeconds);
        if (rampSeconds > 0) {
            a.add("--ramp_time=" + rampSeconds);
        }
        return a;
    }

    /**
     * A second job for fio's command line, run beside the job before it: a 4 KiB write at offset 0 of
     * {@code target}, then an {@code fdatasync}, then {@code pauseMicros} of nothing, over and over, as a
     * store's log writer commits beside its puts (a small write and a flush, while the data writes go on).
     * fio's own {@code --fdatasync=N} instead stops its job's I/O at each flush. Its flushes are counted
     * in the first job's measurement ({@link #parse}: {@code other_jobs_fdatasyncs}).
     */
    static List<String> flusherJob(String target, long pauseMicros, int runtimeSeconds, int rampSeconds) {
        List<String> a = new ArrayList<>();
        a.add("--name=flusher");
        a.add("--filename=" + target);
        a.add("--ioengine=psync");
        a.add("--direct=1");
        a.add("--rw=write");
        a.add("--bs=4096");
        a.add("--size=4096");
        a.add("--offset=0");
        a.add("--fdatasync=1");
        a.add("--thinktime=" + Math.max(0, pauseMicros));
        a.add("--time_based");
        a.add("--runtime=" + runtimeSeconds);
        if (rampSeconds > 0) {
            a.add("--ramp_time=" + rampSeconds);
        }
        return a;
    }

    /**
     * A job writing {@code target} whole, in order, in blocks of {@code blockSize}, each with fio's verify
     * header holding the block's CRC32C ({@code --verify=crc32c}): what a read job with {@code --verify=crc32c}
     * checks every block against. It does not read them back itself ({@code --do_verify=0}), nor leave its
     * verify state in the working directory ({@code --verify_state_save=0}: fio writes one there by default).
     */
    static List<String> verifiedFileArgs(Path target, long sizeBytes, int blockSize) {
        return List.of("--name=crc32c-verify-file", "--filename=" + target, "--size=" + sizeBytes,
                "--ioengine=io_uring", "--direct=1", "--rw=write", "--bs=" + blockSize, "--iodepth=16",
                "--verify=crc32c", "--do_verify=0", "--verify_state_save=0");
    }

    /** The fastest read the passes of {@link #verifyingReadArgs} are counted for: 16 GB/s. */
    static final long VERIFY_PASS_BYTES_PER_SEC = 16_000_000_000L;

    /**
     * {@code readJob} (a time-based read of one file, its {@code --filename} and {@code --size}, with
     * {@code --verify=crc32c} added by the caller) made to read for its whole ramp and runtime. fio ends a
     * verifying read after one pass over its file, whatever {@code --time_based}, {@code --loops} or
     * {@code --io_size} say (fio 3.33, as served here): over a 2 GiB file at 2 GB/s its window was the second
     * left after the ramp, not the runtime ours is measured over, and with the ramp eating into that pass fio
     * reported no latencies. So the file is named as many times as that many seconds take at
     * {@link #VERIFY_PASS_BYTES_PER_SEC}, read one name after the other ({@code --file_service_type=sequential}),
     * each name the whole file; the runtime ends the job.
     *
     * @throws IllegalArgumentException for a path fio would split (a colon separates its file names)
     */
    static List<String> verifyingReadArgs(List<String> readJob) {
        String path = option(readJob, "filename");
        if (path.indexOf(':') >= 0) {
            throw new IllegalArgumentException("fio's check file " + path + " has a ':' in its path, which fio takes"
                    + " for a list of files: give --file a path without one");
        }
        long fileBytes = longOption(readJob, "size", 0);
        long seconds = longOption(readJob, "runtime", 0) + longOption(readJob, "ramp_time", 0);
        long passes = Math.max(2, Math.min(256,
                (long) Math.ceil((double) seconds * VERIFY_PASS_BYTES_PER_SEC / fileBytes) + 1));
        List<String> a = new ArrayList<>();
        for (String arg : readJob) {
            if (arg.startsWith("--filename=")) {
                a.add("--filename=" + String.join(":", Collections.nCopies((int) passes, path)));
                a.add("--file_service_type=sequential");
            } else if (arg.startsWith("--size=")) {
                a.add("--size=" + passes * fileBytes);
            } else {
                a.add(arg);
            }
        }
        return a;
    }

    /** The value of {@code --name=value} in {@code jobArgs} (the last one), or null. */
    static String option(List<String> jobArgs, String name) {
        String prefix = "--" + name + "=";
        String v = null;
        for (String a : jobArgs) {
            if (a.startsWith(prefix)) {
                v = a.substring(prefix.length());
            }
        }
        return v;
    }

    private static long longOption(List<String> jobArgs, String name, long absent) {
        String v = option(jobArgs, name);
        return v == null ? absent : Long.parseLong(v);
    }

    /**
     * Huge pages fio's buffers take for {@code jobArgs}: iodepth x bs per job, rounded up to pages, and two
     * more (fio rounds its buffer size up to a page and then adds alignment on top; measured with fio 3.33:
     * 1 MiB x 16 needs 10 pages of 2 MiB, 9 fail).
     */
    static long hugetlbPagesNeeded(List<String> jobArgs, long pageBytes) {
        long bs = longOption(jobArgs, "bs", 0);
        long depth = longOption(jobArgs, "iodepth", 1);
        long jobs = longOption(jobArgs, "numjobs", 1);
        return jobs * ((bs * depth + pageBytes - 1) / pageBytes + 2);
    }

    /**
     * Runs one job and reads its result.
     *
     * @param jsonOut where fio writes its JSON (kept next to the results)
     * @throws IOException when fio fails (its exit code and stderr) or its output has no job
     */
    public Measurement run(List<String> jobArgs, Path jsonOut, long timeoutSeconds) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(executable.toString());
        cmd.addAll(jobArgs);
        cmd.add("--output-format=json");
        cmd.add("--output=" + jsonOut);
        Path err = Files.createTempFile("fdpblock-fio-", ".err");
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(false)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(err.toFile()).start();
            boolean finished;
            try {
                finished = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while fio ran", e);
            }
            if (!finished) {
                p.destroyForcibly();
                throw new IOException("fio did not finish within " + timeoutSeconds + " s: " + String.join(" ", cmd));
            }
            String stderr = Files.readString(err).trim();
            if (p.exitValue() != 0) {
                throw new IOException("fio exited with " + p.exitValue() + ": " + lastLines(stderr, 5) + " (command: "
                        + String.join(" ", cmd) + ")");
            }
            Measurement m = parse(Files.readString(jsonOut));
            m.extra().put("command", String.join(" ", cmd));
            return m;
        } finally {
            Files.deleteIfExists(err);
        }
    }

    private static String lastLines(String s, int n) {
        String[] lines = s.split("\n");
        return String.join(" | ", Arrays.copyOfRange(lines, Math.max(0, lines.length - n), lines.length));
    }

    /**
     * Reads fio's JSON (anything before the first '{' is skipped: fio may print notes there) into a
     * measurement of its first job: the read or the write side, whichever did the I/O.
     */
    public static Measurement parse(String output) throws IOException {
        int brace = output.indexOf('{');
        if (brace < 0) {
            throw new IOException("fio wrote no JSON: " + output.substring(0, Math.min(200, output.length())));
        }
        JsonNode root = JSON.readTree(output.substring(brace));
        JsonNode jobs = root.path("jobs");
        if (!jobs.isArray() || jobs.isEmpty()) {
            throw new IOException("fio's JSON has no jobs");
        }
        JsonNode job = jobs.get(0);
        if (job.path("error").asInt(0) != 0) {
            throw new IOException("fio job " + job.path("jobname").asText() + " failed with error "
                    + job.path("error").asInt());
        }
        JsonNode read = job.path("read");
        JsonNode write = job.path("write");
        JsonNode side = write.path("io_bytes").asLong(0) > read.path("io_bytes").asLong(0) ? write : read;
        long ops = side.path("total_ios").asLong(0);
        long bytes = side.path("io_bytes").asLong(0);
        double runtimeMs = side.path("runtime").asDouble(0);
        double jobRuntimeMs = job.path("job_runtime").asDouble(runtimeMs);
        double cpuPercent = job.path("usr_cpu").asDouble(Double.NaN) + job.path("sys_cpu").asDouble(Double.NaN);
        double cpuSeconds = cpuPercent / 100.0 * jobRuntimeMs / 1000.0;
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("fio_iops", side.path("iops").asDouble());
        extra.put("fio_bw_bytes", side.path("bw_bytes").asLong());
        extra.put("usr_cpu_percent", job.path("usr_cpu").asDouble());
        extra.put("sys_cpu_percent", job.path("sys_cpu").asDouble());
        extra.put("job_runtime_ms", jobRuntimeMs);
        extra.put("ctx_switches", job.path("ctx").asLong());
        // The same keys as our side (PipelinedIo.describe): lat = submission to completion (slat + clat).
        JsonNode lat = side.path("lat_ns");
        JsonNode clat = side.path("clat_ns");
        if (lat.isObject()) {
            double meanUs = lat.path("mean").asDouble() / 1000.0;
            extra.put("lat_mean_us", Measurement.round(meanUs, 2));
            if (runtimeMs > 0) { // Little's law: in flight = throughput x time in the system
                extra.put("depth_littles_law", Measurement.round(ops / (runtimeMs / 1000.0) * meanUs / 1e6, 2));
            }
        }
        if (clat.isObject()) {
            extra.put("clat_mean_us", Measurement.round(clat.path("mean").asDouble() / 1000.0, 2));
        }
        // percentiles of lat with --lat_percentiles=1 (ours: submit to completion too), else of clat
        JsonNode pct = lat.path("percentile").isObject() ? lat.path("percentile") : clat.path("percentile");
        extra.put("lat_percentiles_of", lat.path("percentile").isObject() ? "lat" : "clat");
        String[][] keys = {{"50.000000", "lat_p50_us"}, {"99.000000", "lat_p99_us"}, {"99.900000", "lat_p999_us"}};
        for (String[] k : keys) {
            JsonNode p = pct.path(k[0]);
            if (!p.isMissingNode()) {
                extra.put(k[1], Measurement.round(p.asDouble() / 1000.0, 2));
            }
        }
        // the flushes of the jobs after the first (a flusherJob), how many and how long they took
        long syncs = 0;
        double syncNanos = 0;
        for (int i = 1; i < jobs.size(); i++) {
            JsonNode syncLat = jobs.get(i).path("sync").path("lat_ns");
            long n = syncLat.path("N").asLong(0);
            syncs += n;
            syncNanos += n * syncLat.path("mean").asDouble(0);
        }
        if (jobs.size() > 1) {
            extra.put("other_jobs_fdatasyncs", syncs);
            if (syncs > 0) {
                extra.put("other_jobs_fdatasync_ms_avg", Measurement.round(syncNanos / syncs / 1e6, 1));
            }
        }
        // fio's own depth figures: % of time at each depth, and I/Os per submit and per reap call
        for (String d : new String[] {"iodepth_level", "iodepth_submit", "iodepth_complete"}) {
            if (job.path(d).isObject()) {
                extra.put(d, JSON.convertValue(job.path(d), Map.class));
            }
        }
        return new Measurement(ops, bytes, runtimeMs / 1000.0, cpuSeconds, extra);
    }
}
