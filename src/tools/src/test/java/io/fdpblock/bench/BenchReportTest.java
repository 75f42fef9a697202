package io.fdpblock.bench;

import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import java.util.EnumMap;
import java.util.Map;

/** Medians, ratios, targets, fio's JSON and command line, and the chart, without running any I/O. */
@Tag("unit")
class BenchReportTest {
    @TempDir
    Path dir;

    @Test
    void medianOfOddAndEvenCountsIgnoresNaN() {
        assertThat(Stats.median(3, 1, 2)).isEqualTo(2);
        assertThat(Stats.median(4, 1, 3, 2)).isEqualTo(2.5);
        assertThat(Stats.median(Double.NaN, 5)).isEqualTo(5);
        assertThat(Stats.median()).isNaN();
        assertThat(Stats.ratio(1, 0)).isNaN();
        assertThat(Stats.percentile(new long[] {10, 20, 30, 40}, 4, 50)).isEqualTo(20);
        assertThat(Stats.percentile(new long[] {10, 20, 30, 40}, 4, 100)).isEqualTo(40);
    }

    static final String FIO_JSON = """
            fio: some note before the JSON
            {
              "fio version" : "fio-3.33",
              "jobs" : [ {
                  "jobname" : "randread-4k-qd32", "error" : 0, "job_runtime" : 5000,
                  "read" : { "io_bytes" : 2048000000, "bw_bytes" : 409600000, "iops" : 100000.0, "runtime" : 5000,
                             "total_ios" : 500000,
                             "lat_ns" : { "mean" : 320000.0 },
                             "clat_ns" : { "mean" : 300000.0, "percentile" : { "50.000000" : 290816,
                                           "99.000000" : 501760 } } },
                  "write" : { "io_bytes" : 0, "bw_bytes" : 0, "iops" : 0.0, "runtime" : 0, "total_ios" : 0 },
                  "usr_cpu" : 10.0, "sys_cpu" : 30.0, "ctx" : 1234,
                  "iodepth_submit" : { "0" : 0.0, "4" : 97.0, "8" : 3.0, "16" : 0.0, ">=64" : 0.0 } } ]
            }
            """;

    @Test
    void fioJsonGivesOpsBytesAndCpuSecondsOfTheWindow() throws Exception {
        Measurement m = Fio.parse(FIO_JSON);
        assertThat(m.ops()).isEqualTo(500_000);
        assertThat(m.bytes()).isEqualTo(2_048_000_000L);
        assertThat(m.seconds()).isEqualTo(5.0);
        assertThat(m.iops()).isEqualTo(100_000.0);
        assertThat(m.cpuSeconds()).isCloseTo(2.0, within(1e-9)); // 40% of 5 s
        assertThat(m.iopsPerCpuSec()).isCloseTo(250_000.0, within(1e-6));
        assertThat(m.extra()).containsEntry("lat_p50_us", 290.82).containsEntry("lat_p99_us", 501.76)
                .containsEntry("lat_mean_us", 320.0);
        // Little's law: 100,000 IOPS x 320 us = 32 in flight
        assertThat(m.extra()).containsEntry("depth_littles_law", 32.0);
        CaseResult r = new CaseResult(BenchCase.rawCases(IoEngine.IO_URING).get(1));
        r.add(new CaseResult.Round(1, null, "not run", m, null));
        assertThat(r.fioSubmitBatch()).as("fio's most frequent I/Os per submit call").isEqualTo("1-4 (97%)");
    }

    @Test
    void fioJobMatchesOurParameters() {
        BenchCase c = BenchCase.rawCases(IoEngine.IO_URING).get(1); // randread 4k QD32
        List<String> args = Fio.jobArgs(c, Path.of("/var/tmp/x.img"), 1L << 30, 5, 1);
        assertThat(args).contains("--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4096", "--iodepth=32",
                "--numjobs=1", "--time_based", "--runtime=5", "--ramp_time=1", "--fixedbufs=1", "--registerfiles=1",
                "--norandommap", "--filename=/var/tmp/x.img", "--size=1073741824");
        BenchCase nvme = BenchCase.rawCases(IoEngine.URING_CMD).get(4); // seqwrite 1m QD16
        assertThat(Fio.jobArgs(nvme, Path.of("/dev/ng0n1"), 1L << 30, 5, 0))
                .contains("--ioengine=io_uring_cmd", "--cmd_type=nvme", "--rw=write", "--bs=1048576", "--iodepth=16")
                .doesNotContain("--direct=1")
                .noneMatch(a -> a.startsWith("--ramp_time"));
        assertThat(Fio.jobArgs(nvme, Path.of("/dev/ng0n1"), 1L << 30, 5, 0, 512 << 10))
                .as("commands of the namespace's max transfer, as ours splits them, same bytes in flight")
                .contains("--bs=524288", "--iodepth=32")
                .doesNotContain("--norandommap")
                .noneMatch(a -> a.startsWith("--ramp_time"));
    }

    @Test
    void fiosHugePageBuffersAreCountedPerJobWithAPageForAlignment() {
        BenchCase seq = BenchCase.rawCases(IoEngine.IO_URING).get(4); // seqwrite 1m QD16: 16 MiB of buffers
        assertThat(Fio.hugetlbPagesNeeded(Fio.jobArgs(seq, Path.of("/x"), 1L << 30, 5, 1), 2L << 20)).isEqualTo(9);
        assertThat(Fio.hugetlbPagesNeeded(List.of("--bs=4096", "--iodepth=64", "--numjobs=2"), 2L << 20))
                .as("256 KiB per job still takes a page, and one more").isEqualTo(4);
    }

    private static CaseResult result(BenchCase c, double oursIops, double oursCpu, Double fioIops, double fioCpu) {
        CaseResult r = new CaseResult(c);
        for (int i = 1; i <= 3; i++) {
            double k = 0.9 + 0.1 * i; // rounds at 1.0x, 1.1x, 1.2x: medians at 1.1x
            Measurement ours = new Measurement((long) (oursIops * 5 * k), (long) (oursIops * 5 * k) * c.blockSize(), 5,
                    oursCpu);
            Measurement fio = fioIops == null ? null : new Measurement((long) (fioIops * 5 * k),
                    (long) (fioIops * 5 * k) * c.blockSize(), 5, fioCpu);
            r.add(new CaseResult.Round(i, ours, null, fio, fio == null ? "fio not installed" : null));
        }
        return r;
    }

    @Test
    void ratiosAndTargetsFromMedians() {
        BenchCase qd32 = BenchCase.rawCases(IoEngine.IO_URING).get(1);
        CaseResult r = result(qd32, 90_000, 2.0, 100_000.0, 2.5);
        assertThat(r.oursThroughput()).isCloseTo(99_000, within(1.0));
        assertThat(r.throughputRatio()).isCloseTo(0.9, within(1e-4));
        List<CaseResult.Target> t = r.targets();
        assertThat(t).hasSize(2);
        assertThat(t.get(0).met()).isFalse(); // 0.9 < 1.0
        assertThat(t.get(1).actual()).isCloseTo(0.9 * 2.5 / 2.0, within(1e-3));
        assertThat(t.get(1).met()).isTrue();

        BenchCase qd1 = BenchCase.rawCases(IoEngine.IO_URING).get(0);
        List<CaseResult.Target> q1 = result(qd1, 1, 1, 1.0, 1).targets();
        assertThat(q1).extracting(CaseResult.Target::required).containsExactly(1.0, 0.8); // IOPS, IOPS per CPU-s

        BenchCase twoRings = BenchCase.rawCases(IoEngine.IO_URING).stream().filter(c -> c.rings() == 2).findFirst()
                .orElseThrow();
        assertThat(twoRings.queueDepth()).isEqualTo(128);
        assertThat(Fio.jobArgs(twoRings, Path.of("/x"), 1L << 30, 5, 1)).contains("--iodepth=64", "--numjobs=2",
                "--group_reporting");
        assertThat(result(twoRings, 1, 1, 1.0, 1).targets()).extracting(CaseResult.Target::name)
                .containsExactly("IOPS ours/fio");

        CaseResult noFio = result(qd32, 90_000, 2.0, null, 0);
        assertThat(noFio.throughputRatio()).isNaN();
        assertThat(noFio.targets().get(0).met()).isNull();
        assertThat(noFio.toMap()).containsKey("median");
    }

    @Test
    void cpuPerByteIsJudgedForStoresAndTheRecoveryLoadNotForTheLoadThatChecksEveryCrc() {
        Map<BenchCase.Kind, List<String>> judged = new EnumMap<>(BenchCase.Kind.class);
        for (BenchCase c : BenchCase.adapterCases()) {
            judged.put(c.kind(), new CaseResult(c).targets().stream().map(CaseResult.Target::name).toList());
        }
        String bandwidth = "bandwidth ours/fio";
        String perCpu = "MB per CPU-second ours/fio";
        assertThat(judged.get(BenchCase.Kind.ADAPTER_LOAD)).containsExactly(bandwidth);
        assertThat(judged.get(BenchCase.Kind.ADAPTER_LOAD_VERIFY_RECOVERY)).containsExactly(bandwidth, perCpu);
        assertThat(judged.get(BenchCase.Kind.ADAPTER_STORE)).containsExactly(bandwidth, perCpu);
        assertThat(judged.get(BenchCase.Kind.ADAPTER_STORE_HEADROOM)).containsExactly(bandwidth, perCpu);
        assertThat(judged.get(BenchCase.Kind.ADAPTER_STORE_EVICT_ROUNDS)).containsExactly(bandwidth, perCpu);
    }

    @Test
    @SuppressWarnings("unchecked")
    void lookupRoundsAreJudgedTogetherAndEachSaysItsCpuAndPageFaults() {
        BenchCase lookup = BenchCase.adapterCases().stream().filter(c -> c.kind() == BenchCase.Kind.ADAPTER_LOOKUP)
                .findFirst().orElseThrow();
        CaseResult r = new CaseResult(lookup);
        // a slow round (faulting in heap pages) and a fast one: the median is of all samples together
        r.lookup(List.of(
                new AdapterWorkload.LookupResult(new long[] {170_000, 180_000, 190_000}, 1000, 2, Map.of(),
                        "here", 178.0, 10.5, 1.25),
                new AdapterWorkload.LookupResult(new long[] {70_000, 80_000}, 1000, 1, Map.of(),
                        "here", 76.0, 0.0, 1.05)));
        assertThat(r.lookup().medianMicros()).isCloseTo(170.0, within(1e-9)); // nearest rank, 3rd of 5
        assertThat(r.lookup().misses()).isEqualTo(3);
        assertThat(r.targets()).singleElement().satisfies(t -> assertThat(t.met()).isFalse()); // 170 us, not < 100
        Map<String, Object> l = (Map<String, Object>) r.toMap().get("lookup");
        assertThat(l).containsEntry("round_medians_us", List.of(180.0, 70.0))
                .containsEntry("round_thread_cpu_medians_us", List.of(178.0, 76.0))
                .containsEntry("round_minor_faults_per_lookup", List.of(10.5, 0.0))
                .containsEntry("round_process_cpu_cores", List.of(1.25, 1.05))
                .containsEntry("minor_faults_per_lookup", 5.25)
                .containsEntry("thread_cpu_median_of_rounds_us", 127.0)
                .containsEntry("iterations", 5);
    }

    @Test
    void chartIsAPngEvenWithoutFio() throws Exception {
        List<BenchCase> raw = BenchCase.rawCases(IoEngine.IO_URING);
        List<CaseResult> withFio = List.of(result(raw.get(0), 10_000, 1, 12_000.0, 0.8),
                result(raw.get(1), 90_000, 2, 100_000.0, 2.5), result(raw.get(4), 3000, 0.5, 3100.0, 0.3));
        Path png = BenchChart.write(withFio, dir.resolve("a.png"), 3);
        BufferedImage img = ImageIO.read(png.toFile());
        assertThat(img.getWidth()).isGreaterThan(1000);
        List<CaseResult> noFio = List.of(result(raw.get(0), 10_000, 1, null, 0), result(raw.get(4), 3000, 0.5, null, 0));
        assertThat(Files.size(BenchChart.write(noFio, dir.resolve("b.png"), 3))).isGreaterThan(1000);
    }

    @Test
    void placementCasesGiveEachSidesMedianAndTheCostOfStreamsAgainstPlainAndPassthru() {
        BenchCase c = BenchCase.placementCases().get(1);
        assertThat(c.id()).isEqualTo("placement-randwrite-4k-qd32");
        assertThat(c.label()).isEqualTo("placement randwrite 4k QD32");
        assertThat(c.hasReference()).as("no fio side").isFalse();
        assertThat(BenchCase.all()).contains(c);
        PlacementResult r = new PlacementResult(c);
        double[][] iops = {{1000, 900, 800}, {1200, 1000, 900}, {1100, 950, 1000}}; // plain, stream, passthru per round
        for (int round = 0; round < 3; round++) {
            Map<PlacementResult.Side, Measurement> m = PlacementResult.perSide();
            PlacementResult.Side[] sides = PlacementResult.Side.values();
            for (int s = 0; s < 3; s++) {
                long ops = (long) iops[round][s];
                m.put(sides[s], new Measurement(ops, ops * 4096, 1.0, ops * 10e-6 * (s + 1))); // 10, 20, 30 us per op
            }
            r.add(new PlacementResult.Round(round + 1, m, PlacementResult.perSide()));
        }
        assertThat(r.throughput(PlacementResult.Side.PLAIN)).isEqualTo(1100);
        assertThat(r.throughput(PlacementResult.Side.STREAM)).isEqualTo(950);
        assertThat(r.throughput(PlacementResult.Side.PASSTHRU)).isEqualTo(900);
        assertThat(r.throughputRatio(PlacementResult.Side.STREAM, PlacementResult.Side.PLAIN)).isCloseTo(950 / 1100.0,
                within(1e-12));
        assertThat(r.throughputRatio(PlacementResult.Side.STREAM, PlacementResult.Side.PASSTHRU)).isCloseTo(950 / 900.0,
                within(1e-12));
        assertThat(r.cpuMicrosPerOp(PlacementResult.Side.STREAM)).isCloseTo(20, within(1e-9));
        assertThat(r.cpuRatio(PlacementResult.Side.STREAM, PlacementResult.Side.PASSTHRU)).isCloseTo(2 / 3.0, within(1e-9));
        assertThat(r.row()).contains("placement randwrite 4k QD32").contains("1,100").contains("0.86x").contains("1.06x");
        Map<String, Object> json = r.toMap();
        assertThat(json).containsKeys("rounds", "median", "ratios").doesNotContainKey("skipped");
        @SuppressWarnings("unchecked")
        Map<String, Object> ratios = (Map<String, Object>) json.get("ratios");
        assertThat(ratios).containsEntry("throughput_stream_over_plain", 0.8636);

        PlacementResult skipped = new PlacementResult(c);
        skipped.skip("kernel 6.12 has no block-layer write streams");
        assertThat(skipped.row()).contains("skipped: kernel 6.12");
        assertThat(skipped.toMap()).containsEntry("skipped", "kernel 6.12 has no block-layer write streams")
                .doesNotContainKey("rounds");
    }
}
