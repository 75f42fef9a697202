package io.fdpblock.cli;

import io.fdpblock.sim.TraceFormat;
import io.fdpblock.sim.TraceReader;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import io.fdpblock.device.BlockDevices;
import java.nio.file.Files;

/**
 * The comparison of {@code fdpblock waf}, small: the multi-tenant job on a 32 MiB file that acts as an FDP
 * namespace (512 KiB reclaim units, 16 KiB slots: 32 to a unit), once with per-key LRU and no placement,
 * once with reclaim-unit groups; both traced and replayed through the FDP SSD model. Group eviction must
 * come out below the reference, and its trace must show one deallocation per evicted group.
 */
@Tag("host")
class WafComparisonTest {
    private static final long GROUP_BYTES = 512 << 10;

    @TempDir
    Path dir;

    @Test
    void groupEvictionWritesEachReclaimUnitOnceWherePerKeyLruMakesTheModelCopy() throws Exception {
        WafCommand cmd = new WafCommand();
        new CommandLine(cmd).parseArgs("--size", "32M", "--ru-size", "512K", "--chunk-tokens", "1", "--max-chunks", "24",
                "--out", dir.toString());
        WafCommand.Workload w = new WafCommand.Workload("tenants", "small", List.of(
                KvCacheJob.Tenant.parse("chat:sessions=0.5/0.8/300"), KvCacheJob.Tenant.parse("rag:docs=0.3/0.8/40"),
                KvCacheJob.Tenant.parse("batch:jobs=0.2/0.3/0")), 2400);
        WafCommand.Case reference = WafCommand.CASES.stream().filter(c -> c.name().equals("reference")).findFirst()
                .orElseThrow();
        WafCommand.Case groups = WafCommand.CASES.stream().filter(c -> c.name().equals("groups")).findFirst().orElseThrow();

        Path devices = BlockDevices.directIoTempDir("fdpblock-waf-test-");
        WafCommand.Row lru;
        WafCommand.Row grouped;
        try {
            lru = cmd.runCase(w, reference, 12288, devices, () -> false);
            grouped = cmd.runCase(w, groups, 12288, devices, () -> false);
        } finally {
            Files.deleteIfExists(devices);
        }

        for (WafCommand.Row r : List.of(lru, grouped)) {
            assertThat(r.hostWritesPerCapacity()).as("%s: host writes / capacity", r.caseName()).isGreaterThanOrEqualTo(5);
            assertThat(r.meanUsage()).as("%s: L2 usage once full", r.caseName()).isGreaterThanOrEqualTo(0.90);
            assertThat(r.l2HitRatio()).as("%s: L2 hit ratio", r.caseName()).isGreaterThan(0.3);
        }
        assertThat(grouped.evictedGroups()).isPositive();
        assertThat(lru.evictedGroups()).isZero();
        assertThat(grouped.steadyWaf()).as("group eviction's WAF (reference %.3f)", lru.steadyWaf())
                .isLessThan(lru.steadyWaf()).isLessThanOrEqualTo(1.05);
        assertThat(lru.steadyWaf()).isGreaterThan(1.0);

        List<Long> groupDeallocs = deallocations(Path.of(grouped.trace()));
        assertThat(groupDeallocs).hasSize((int) grouped.evictedGroups())
                .as("every deallocation is one whole group").containsOnly(GROUP_BYTES);
        assertThat(deallocations(Path.of(lru.trace()))).as("per-key LRU deallocates the slots it freed").isNotEmpty();
    }

    private static List<Long> deallocations(Path trace) throws Exception {
        List<Long> out = new ArrayList<>();
        try (TraceReader r = TraceReader.open(trace)) {
            assertThat(r.header().placementIdCount()).isEqualTo(8);
            assertThat(r.header().reclaimUnitBytes()).isEqualTo(GROUP_BYTES);
            while (r.next()) {
                if (r.op() == TraceFormat.OP_DEALLOCATE) {
                    out.add(r.length());
                }
            }
        }
        return out;
    }
}
