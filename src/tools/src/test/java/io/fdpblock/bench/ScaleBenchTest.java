package io.fdpblock.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.core.RawBlockCoreConfig.MetaFormat;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The scale benchmark's code path, small: 20,000 entries in each format on a sparse file through
 * io_uring. Asserts what can go wrong (keys lost across the reopen, bytes not counted, figures not
 * measured), never a timing.
 */
@Tag("host")
class ScaleBenchTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    @Test
    void fillsReopensAndMeasuresBothFormats() throws IOException {
        long n = 20_000;
        Path json = dir.resolve("out/scale.json");
        ScaleBench.Options o = new ScaleBench.Options(n, n, List.of(MetaFormat.FDPBLOCK_V2, MetaFormat.LMCACHE_V1),
                ScaleBench.Backing.FILE, dir, null, json, 8, 4, 1000, 60, 0, false, "test");
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        ScaleBench.Report report = new ScaleBench(o, new PrintStream(printed, true, StandardCharsets.UTF_8)).run();

        assertThat(report.results()).extracting(ScaleBench.FormatResult::metaFormat)
                .containsExactly("fdpblock_v2", "lmcache_v1");
        for (ScaleBench.FormatResult r : report.results()) {
            String f = r.metaFormat();
            assertThat(r.errors()).as("%s: checks", f).isEmpty();
            assertThat(r.fill().keysStored()).as("%s: stored", f).isEqualTo(n);
            assertThat(r.fill().keysFailed()).isZero();
            assertThat(r.reopen().keysRecovered()).as("%s: keys after the reopen", f).isEqualTo(n);
            assertThat(r.reopen().sampledExistsHits()).isEqualTo(r.reopen().sampledExists()).isEqualTo(1000);
            assertThat(r.reopen().sampledLoadsVerified()).isEqualTo(r.reopen().sampledLoads()).isEqualTo(100);
            // The heap delta is taken in this JVM shared with earlier tests, whose leftovers may be
            // collected during the fill, more than the index's heap share (a CI run once measured -578
            // bytes per entry): it is reported, not asserted. What the store reports is exact.
            assertThat(r.memory().storeReportedIndexBytes()).as("%s: index bytes the store reports", f).isPositive();
            if (f.equals("fdpblock_v2")) { // 32-byte entries, at most 80 % full
                assertThat(r.memory().offHeapBytesPerEntry()).as("%s: off-heap bytes per entry", f).isBetween(40.0, 41.0);
            } else {
                assertThat(r.memory().indexOffHeapBytes()).as("%s: a heap index", f).isZero();
            }
            assertThat(r.latency().all().count()).as("%s: one latency per put call", f).isEqualTo(n / 8);
            assertThat(r.latency().duringSnapshot().count() + r.latency().withoutSnapshot().count())
                    .isEqualTo(n / 8);
            // a plain file on this file system: its block size makes the slot
            ScaleBench.Geometry g = ScaleBench.Geometry.forBlockSize(r.config().blockAlign());
            assertThat(r.config().slotBytes()).isEqualTo(2 * r.config().blockAlign());
            assertThat(r.config().keyChars()).isEqualTo(ScaleKeys.key(0).length()).isBetween(100, 130);
            assertThat(r.metadata().dataBytesWritten()).as("%s: header and payload of every slot, once", f)
                    .isEqualTo(n * g.slotBytes());
            assertThat(r.metadata().metaBytesWritten()).isPositive();
            assertThat(r.metadata().metaBytesPerPut()).isEqualTo((double) r.metadata().metaBytesWritten() / n);
            assertThat(r.targets()).hasSize(6).allSatisfy(t -> assertThat(t.verdict()).isIn("met", "missed",
                    "not measured"));
        }
        ScaleBench.FormatResult v2 = report.results().get(0);
        assertThat(v2.memory().indexOffHeapBytes()).as("the compact index: 32 bytes an entry at load <= 0.8")
                .isGreaterThanOrEqualTo(n * 32).isLessThanOrEqualTo(n * 41);
        long reported = ((Number) v2.metadata().storeReported().get("meta_bytes_written")).longValue();
        assertThat(v2.metadata().metaBytesWritten() - reported)
                .as("counted at the device = the log and snapshots the store counts + the superblocks written at"
                        + " format (a few blocks)")
                .isBetween(0L, 8L * v2.config().blockAlign());
        ScaleBench.FormatResult v1 = report.results().get(1);
        assertThat(v1.memory().indexOffHeapBytes()).isZero();
        // v1 keeps every key on the heap: the store's own estimate says so. The heap delta measured in this JVM,
        // shared with other tests, is the benchmark's figure to print, not a test's to assert; only its arithmetic is.
        assertThat(v1.memory().storeReportedIndexBytes()).as("v1's heap index, as the store reports it")
                .isGreaterThan(n * 100);
        for (ScaleBench.FormatResult r : report.results()) {
            ScaleBench.Memory m = r.memory();
            assertThat(m.heapDeltaBytes()).isEqualTo(m.heapAfterBytes() - m.heapBeforeBytes());
            assertThat(m.heapBytesPerEntry()).isEqualTo((double) m.heapDeltaBytes() / n);
            assertThat(m.indexBytesPerEntry()).isEqualTo((double) (m.heapDeltaBytes() + m.indexOffHeapBytes()) / n);
        }
        assertThat(v1.metadata().metaBytesWritten()).as("at least the JSON checkpoint of every key, written at close")
                .isGreaterThan(n * (ScaleKeys.key(0).length() + 60L));

        JsonNode root = ScaleBench.json().readTree(json.toFile());
        assertThat(root.path("results")).hasSize(2);
        // The JSON carries what the report measured; the heap part of it moves with the shared JVM's GC (it was
        // negative on a busy machine), so only its arithmetic is pinned above, never its sign.
        assertThat(root.path("results").get(0).path("memory").path("index_bytes_per_entry").asDouble())
                .isEqualTo(report.results().get(0).memory().indexBytesPerEntry());
        assertThat(root.path("results").get(1).path("reopen").path("keys_recovered").asLong()).isEqualTo(n);
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("targets (scale)");
        try (Stream<Path> left = Files.list(dir)) {
            assertThat(left.filter(p -> p.toString().endsWith(".img"))).as("device files removed").isEmpty();
        }
    }

    @Test
    void keepingOnlyTheLastSlotsPunchesTheRestOutAndStillRecoversEveryKey() throws IOException {
        // for runs larger than the disk: the slots' bytes behind the fill go, the index and metadata stay whole
        long n = 20_000;
        long keep = 4_000;
        ScaleBench.Options o = new ScaleBench.Options(n, n, List.of(MetaFormat.FDPBLOCK_V2), ScaleBench.Backing.FILE,
                dir, null, dir.resolve("punched.json"), 8, 4, 1000, 60, keep, false, "test");
        ScaleBench.FormatResult r = new ScaleBench(o, new PrintStream(new ByteArrayOutputStream(), true,
                StandardCharsets.UTF_8)).run().results().get(0);
        assertThat(r.errors()).isEmpty();
        assertThat(r.fill().dataBytesPunched()).as("all but the kept slots, punched by the end of the fill")
                .isEqualTo((n - keep) * r.config().slotBytes());
        assertThat(r.reopen().keysRecovered()).isEqualTo(n);
        assertThat(r.reopen().sampledExistsHits()).isEqualTo(1000);
        assertThat(r.reopen().sampledLoadsVerified()).as("loads among the kept slots").isEqualTo(100);
        assertThat(r.config().backing()).contains("punched");
        assertThatThrownBy(() -> new ScaleBench.Options(n, n, List.of(MetaFormat.FDPBLOCK_V2), ScaleBench.Backing.FILE,
                dir, null, dir.resolve("x.json"), 8, 4, 1000, 60, 10, false, "test"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--keep-data-slots 10");
    }

    @Test
    void theSnapshotTargetsSetThePutsDuringOneAgainstThoseOutsideAndSayWhenOneGroupIsEmpty() {
        ScaleBench.Snapshots snaps = new ScaleBench.Snapshots(2, 2400, 2500, 2700, 5.1, 4000, List.of());
        // p99.9 95 vs 72 ms (1.32x), worst 96 vs 40 ms (2.4x), longest stall 82 vs 228 ms (0.36x)
        ScaleBench.Latencies lat = new ScaleBench.Latencies(new ScaleBench.Latency(30_000, 4000, 28_000, 80_000, 96_000),
                new ScaleBench.Latency(4_000, 5800, 68_000, 95_000, 96_000),
                new ScaleBench.Latency(26_000, 3900, 21_000, 72_000, 40_000), 82, 228);
        List<ScaleBench.Target> t = ScaleBench.snapshotTargets(lat, snaps);
        assertThat(t).extracting(ScaleBench.Target::name).containsExactly(ScaleBench.P999_TARGET,
                ScaleBench.WORST_PUT_TARGET, ScaleBench.STALL_TARGET);
        assertThat(t).extracting(ScaleBench.Target::value).containsExactly(1.32, 2.4, 0.36);
        assertThat(t).extracting(ScaleBench.Target::verdict).containsExactly("met", "missed", "met");
        assertThat(t.get(1).detail()).contains("96.0 ms during a snapshot vs 40.0 ms outside");

        ScaleBench.Latencies none = new ScaleBench.Latencies(lat.all(), new ScaleBench.Latency(0, 0, 0, 0, 0),
                lat.withoutSnapshot(), 0, 228);
        assertThat(ScaleBench.snapshotTargets(none, snaps)).hasSize(3).allSatisfy(x -> {
            assertThat(x.verdict()).isEqualTo("not measured");
            assertThat(x.detail()).contains("no put overlapped a snapshot (2 snapshots");
        });
    }
}
