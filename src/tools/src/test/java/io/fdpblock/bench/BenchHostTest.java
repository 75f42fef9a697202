package io.fdpblock.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import io.fdpblock.core.RawBlockCoreConfig;

/** The bench's pieces on a real file through io_uring (O_DIRECT: a disk-backed temp dir). */
@Tag("host")
class BenchHostTest {
    private Path dir;

    @BeforeEach
    void mkdir() throws IOException {
        Path varTmp = Path.of("/var/tmp");
        dir = Files.createTempDirectory(Files.isDirectory(varTmp) && Files.isWritable(varTmp) ? varTmp
                : Path.of(System.getProperty("java.io.tmpdir")), "fdpblock-bench-test-");
    }

    @AfterEach
    void rmdir() throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    @Test
    void pipelineOnIoUringInBothModes() throws IOException {
        Path f = BlockDevices.createFile(dir.resolve("dev.img"), 64L << 20);
        try (BlockDevice dev = BlockDevices.open(f, DeviceOptions.of(IoEngine.IO_URING).withQueueDepth(64)
                .withBuffers(1 << 20, 8))) {
            for (PipelinedIo.Mode mode : PipelinedIo.Mode.values()) {
                PipelinedIo w = new PipelinedIo(dev, new PipelinedIo.Spec(true, false, 1 << 20, 8, 0, 64L << 20), 1, mode);
                assertThat(w.runOps(64).ops()).isEqualTo(64);
                w.release();
                PipelinedIo r = new PipelinedIo(dev, new PipelinedIo.Spec(false, true, 4096, 8, 0, 64L << 20), 2, mode);
                Measurement m = r.run(10_000_000L, 100_000_000L);
                r.release();
                assertThat(m.ops()).as(mode.name()).isPositive();
                // measured (NaN when unknown); it may read 0: the process's CPU time moves in clock ticks (10 ms),
                // and a 100 ms window spent mostly waiting for the disk can fall between two
                assertThat(m.cpuSeconds()).isNotNaN().isGreaterThanOrEqualTo(0.0);
            }
        }
    }

    @Test
    void adapterStoresLoadsAndLooksUp() throws IOException {
        Path f = dir.resolve("adapter.img");
        try (AdapterWorkload w = AdapterWorkload.open(f, 200L << 20, 1 << 20, 16, 4)) {
            assertThat(w.keyCount()).isGreaterThan(16);
            assertThat(w.bufferPoolBytes()).as("a 1 MiB buffer per chunk in flight").isEqualTo(16L << 20);
            w.populate(); // every key stored: the device is full
            Measurement s = w.store(0, 200_000_000L);
            assertThat(s.ops()).isPositive();
            assertThat(s.extra()).containsEntry("failed_tasks", 0L);
            // a full device: every put takes a slot of the group deleted just before, at once (no put waits for
            // that delete's commit)
            assertThat(((Number) s.extra().get("slot_waits_per_task")).doubleValue()).isZero();
            assertThat(s.extra()).containsKeys("log_commits", "log_commits_per_task");
            // headroom: the keys beyond it are deleted first, and the store cycles through the others only
            int fewer = w.keyCount(AdapterWorkload.HEADROOM_SLOTS);
            assertThat(fewer).isLessThanOrEqualTo(w.adapter().core().maxSlots() - AdapterWorkload.HEADROOM_SLOTS)
                    .isGreaterThan(w.keyCount() - AdapterWorkload.HEADROOM_SLOTS - 4);
            Measurement h = w.store(0, 200_000_000L, AdapterWorkload.HEADROOM_SLOTS);
            assertThat(h.ops()).isPositive();
            assertThat(h.extra()).containsEntry("failed_tasks", 0L);
            assertThat(w.adapter().core().keyCount()).isLessThanOrEqualTo(fewer);
            // eviction rounds: at 95 % of the slots stored, the oldest keys go in one delete down to 90 %
            int groups = w.keyCount() / w.keysPerTask();
            Measurement e = w.storeEvictingInRounds(0, Long.MAX_VALUE / 4, 2L * groups);
            assertThat(e.ops()).isEqualTo(2L * groups * w.keysPerTask());
            assertThat(e.extra()).containsEntry("failed_tasks", 0L);
            assertThat((Long) e.extra().get("eviction_rounds_with_ramp"))
                    .as("two passes over the keys, about 5 %% of them a round").isGreaterThan(groups / 10L);
            assertThat(w.adapter().core().keyCount()).as("at most 95 %% of the %d groups stored, and the tasks in flight"
                    + " then", groups).isLessThanOrEqualTo(((int) (groups * AdapterWorkload.EVICT_HIGH) + w.tasksInFlight())
                    * w.keysPerTask());
            w.populate();
            Measurement l = w.load(0, 200_000_000L);
            assertThat(l.ops()).isPositive();
            assertThat(l.extra()).containsEntry("missed_chunks", 0L);
            assertThat(l.extra()).containsKeys("ring_depth_avg", "depth_littles_law", "lat_p50_us", "device_ios_per_chunk");
            AdapterWorkload.LookupResult r = w.lookup(w.keyCount(), 0, 50);
            assertThat(r.misses()).isZero();
            assertThat(r.medianMicros()).isPositive();
            assertThat(r.cpuMedianMicros()).as("the caller's CPU per lookup (it runs on the caller's thread)").isPositive();
            assertThat(r.minorFaultsPerLookup()).as("page faults per lookup, read from /proc/thread-self/stat")
                    .isGreaterThanOrEqualTo(0.0);
            assertThat(r.processCpuCores()).as("the process's CPU over the round, in cores").isPositive();
            assertThat(r.hashOnceCpuMedianMicros()).as("hashing the same keys once, beside the lookups").isPositive();
            assertThat(r.cpuOverHashOnce()).isEqualTo(r.cpuMedianMicros() / r.hashOnceCpuMedianMicros());
            assertThat(w.adapter().core().keyCount()).isEqualTo(w.keyCount());
        }
        // verify_payload "recovery": the same loads, every chunk served (its slot header is read with it), the
        // tasks taking their buffers in turn from twice the chunks in flight
        try (AdapterWorkload w = AdapterWorkload.open(f, 96L << 20, 1 << 20, 16, 4,
                RawBlockCoreConfig.VerifyPayload.RECOVERY, 32L << 20)) {
            assertThat(w.bufferPoolBytes()).isEqualTo(32L << 20);
            w.populate();
            Measurement l = w.load(0, 200_000_000L);
            assertThat(l.ops()).isPositive();
            assertThat(l.extra()).containsEntry("missed_chunks", 0L);
        }
        Measurement crc = Crc32cAlone.measure(1 << 20, 8L << 20, 50_000_000L);
        assertThat(crc.ops()).isPositive();
        assertThat(crc.bytes()).isEqualTo(crc.ops() << 20);
        assertThat(crc.cpuSeconds()).isPositive();
        try (Crc32cAlone again = Crc32cAlone.open(1 << 20, 8L << 20)) { // one region, measured beside every round
            for (int round = 0; round < 2; round++) {
                Measurement m = again.measure(20_000_000L);
                assertThat(m.bytes()).isEqualTo(m.ops() << 20).isPositive();
                assertThat(m.mbPerCpuSec()).isPositive();
            }
        }
        AdapterWorkload.LookupResult mem = AdapterWorkload.lookupOnMemory(1000, 5, 20);
        assertThat(mem.keys()).isEqualTo(1000);
        assertThat(mem.misses()).isZero();
    }

    @Test
    void benchWithoutFioRunsOurSideAndWritesTheFigures() throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        Path out = dir.resolve("out");
        // a stand-in hugetlb pool: this test must never touch the machine's /proc/sys/vm/nr_hugepages
        Path meminfo = Files.writeString(dir.resolve("meminfo"), "HugePages_Free: 0\nHugepagesize: 2048 kB\n");
        Path nr = Files.writeString(dir.resolve("nr_hugepages"), "0\n");
        Bench b = new Bench(new Bench.Options(dir.resolve("bench.img"), 256L << 20, null, 1, 0, 1, out,
                dir.resolve("no-such-fio").toString(), List.of("randread-4k-qd1", "nvme-randread-4k-qd1",
                "adapter-store-1m-qd16-evict-rounds", "adapter-lookup"), true, 4, 20, PipelinedIo.Mode.HANDOFF, null),
                new PrintStream(buf, true, StandardCharsets.UTF_8), new HugetlbPool(meminfo, nr, true, Duration.ZERO));
        assertThat(b.run()).isZero();
        String printed = buf.toString(StandardCharsets.UTF_8);
        assertThat(printed).contains("fio not found", "make bench", "randread 4k QD1 io_uring",
                "skipped: no --device", "adapter lookup 1000 keys", "targets met:", "CPU per chunk: ours",
                "CPU vs hashing keys once", "hashing the keys once: CPU");
        JsonNode json = new ObjectMapper().readTree(out.resolve("bench-results.json").toFile());
        assertThat(json.path("cases")).hasSize(4);
        JsonNode raw = json.path("cases").get(0);
        assertThat(raw.path("rounds").get(0).path("ours").path("ops").asLong()).isPositive();
        assertThat(raw.path("rounds").get(0).path("fio").isNull()).isTrue();
        assertThat(json.path("cases").get(1).path("skipped").asText()).contains("--device");
        JsonNode store = json.path("cases").get(2).path("rounds").get(0);
        assertThat(store.path("crc32c_alone").path("bytes").asLong()).as("the CRC32C alone beside the round")
                .isPositive();
        assertThat(store.path("ours_cpu_us_per_chunk").asDouble()).isPositive();
        assertThat(store.path("crc32c_us_per_chunk").asDouble()).isPositive();
        assertThat(store.has("cpu_us_per_chunk_beyond_fio_and_crc")).as("null without fio, but there").isTrue();
        assertThat(json.path("crc32c_alone").path("bytes").asLong()).isPositive();
        JsonNode lookup = json.path("cases").get(3).path("lookup");
        assertThat(lookup.path("median_us").asDouble()).isPositive();
        assertThat(lookup.path("hash_once_cpu_median_of_rounds_us").asDouble()).isPositive();
        assertThat(lookup.path("thread_cpu_over_hash_once").asDouble()).isPositive();
        assertThat(out.resolve("bench-results.png")).exists();
        assertThat(Files.readString(nr)).as("no fio: no huge pages wanted").isEqualTo("0\n");
    }
}
