package io.fdpblock.core.tools;

import io.fdpblock.core.CoreFixture;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.StoreLayout;
import io.fdpblock.core.tools.Migration;
import io.fdpblock.core.tools.MigrationRefusedException;
import io.fdpblock.core.v1.MetadataArea;
import io.fdpblock.device.PowerLossDevice;
import io.fdpblock.l2.ObjectMeta;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@link Migration} through power losses: the power goes at every device operation a migration makes
 * (in turn), writes not covered by a completed flush are dropped, torn or kept at random
 * ({@link PowerLossDevice}), and what comes back must open, in one of the two formats, with exactly the
 * keys the store had and their exact bytes; running the migration again on it must finish in the target
 * format, again with every key.
 */
@Tag("unit")
class MigrationPowerLossTest {
    private static final RawBlockCoreConfig.MetaFormat V1 = RawBlockCoreConfig.MetaFormat.LMCACHE_V1;
    private static final RawBlockCoreConfig.MetaFormat V2 = RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2;
    private static final long SLOT = 16 << 10;
    private static final long META = 1 << 20;
    private static final int SLOTS = 56;
    private static final int SEEDS_PER_POINT = 2;

    static {
        Logger.getLogger("io.fdpblock.core").setLevel(Level.OFF);
    }

    private static RawBlockCoreConfig config(RawBlockCoreConfig.MetaFormat format) {
        return RawBlockCoreConfig.builder("power-loss", SLOT).capacityBytes(META + SLOTS * SLOT).metaTotalBytes(META)
                .metaFormat(format).metaEnablePeriodic(false).metaSyncIntervalMs(0).build();
    }

    /**
     * Keys with long, mostly distinct cache salts: the checkpoint JSON and the snapshot body (which lists
     * the salts) then take several blocks each, so that a crash can tear them.
     */
    private static Map<String, byte[]> batch(int from, int to) {
        Map<String, byte[]> m = new LinkedHashMap<>();
        for (int i = from; i < to; i++) {
            String k = MigrationTest.key(i, i % 7 == 0 ? "" : "tenant" + i + "x".repeat(110));
            m.put(k, MigrationTest.payload(k, 1 + (int) ((i * 104729L) % (SLOT - 4096))));
        }
        return m;
    }

    /**
     * A store in {@code from} with both metadata copies written (lmcache_v1: the newest checkpoint in
     * container 0 or 1 as asked; fdpblock_v2: a snapshot and log records after it), a deleted key, and
     * for lmcache_v1 slot headers as LMCache writes them; every write flushed.
     */
    private static PowerLossDevice store(RawBlockCoreConfig.MetaFormat from, boolean newestInContainer0,
            Map<String, byte[]> expected) throws IOException {
        PowerLossDevice device = new PowerLossDevice(META + SLOTS * SLOT, 4096, false, 42);
        try (RawBlockCore core = RawBlockCore.open(config(from), device)) {
            Map<String, byte[]> first = batch(0, 24);
            MigrationTest.put(core, first, new ObjectMeta(List.of(4), "uint8", null, null));
            expected.putAll(first);
            core.checkpointNow(); // lmcache_v1: seq 2 in container 1 (seq 1, container 0, is the new store's empty one)
            Map<String, byte[]> second = batch(24, 44);
            MigrationTest.put(core, second, null);
            expected.putAll(second);
            String gone = new ArrayList<>(first.keySet()).get(3);
            assertThat(core.delete(List.of(gone), false)).containsExactly(true);
            expected.remove(gone);
        } // lmcache_v1: close writes seq 3 (container 0); v2: commits the log
        if (from == V1) {
            if (!newestInContainer0) {
                try (RawBlockCore core = RawBlockCore.open(config(from), device)) {
                    Map<String, byte[]> third = batch(44, 48);
                    MigrationTest.put(core, third, null);
                    expected.putAll(third);
                } // seq 4: container 1
            }
            assertThat(MetadataArea.newestFirst(new MetadataArea(device, 4096, META).readContainers()).get(0).index())
                    .as("the container of the newest checkpoint").isEqualTo(newestInContainer0 ? 0 : 1);
            for (int slot : new int[] {0, 5, 9}) {
                CoreFixture.patch(device, META + slot * SLOT + 24, 4096 - 24, s -> s.fill((byte) 0));
            }
        }
        device.flush();
        return device;
    }

    /** What the crash runs saw. */
    private static final class Tally {
        int points;
        int openedAsSource;
        int openedAsTarget;
        int finishedByRerun;
        long torn;
        long dropped;
        final List<String> failures = new ArrayList<>();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"lmcache_v1 (newest in container 1) -> fdpblock_v2",
            "lmcache_v1 (newest in container 0) -> fdpblock_v2", "fdpblock_v2 -> lmcache_v1"})
    void aPowerLossAtAnyOperationLeavesADeviceThatOpensWithEveryKey(String variant) throws Exception {
        RawBlockCoreConfig.MetaFormat from = variant.startsWith("lmcache_v1") ? V1 : V2;
        RawBlockCoreConfig.MetaFormat to = from == V1 ? V2 : V1;
        Map<String, byte[]> expected = new LinkedHashMap<>();
        PowerLossDevice base = store(from, variant.contains("container 0"), expected);
        Migration.Options options = Migration.Options.to(to);

        // the whole migration, uninterrupted: how many operations it makes
        PowerLossDevice clean = base.afterPowerLoss(1);
        long start = clean.ops();
        Migration.Result r = Migration.migrate(clean, "power-loss", options);
        long total = clean.ops() - start;
        assertThat(r.keys()).isEqualTo(expected.size());
        assertThat(total).as("operations of a migration").isGreaterThan(20);
        try (RawBlockCore core = RawBlockCore.open(config(to), clean)) {
            assertThat(core.status()).containsEntry("meta_format", to.configName());
            MigrationTest.assertHolds(core, expected);
        }
        clean.release();

        Tally t = new Tally();
        for (long n = 1; n <= total; n++) {
            for (int s = 0; s < SEEDS_PER_POINT; s++) {
                long seed = n * 1_000_003L + s;
                runOnce(base, n, seed, options, from, to, expected, t);
            }
        }
        System.out.printf("migration power loss, %s: %d operations, %d crash points; opened as %s %d times, as %s %d"
                + " times; %d finished by running migrate again; writes at the crash: %d dropped, %d torn%n", variant,
                total, t.points, from.configName(), t.openedAsSource, to.configName(), t.openedAsTarget,
                t.finishedByRerun, t.dropped, t.torn);
        assertThat(t.failures).as(variant).isEmpty();
        assertThat(t.points).isEqualTo(total * SEEDS_PER_POINT);
        assertThat(t.openedAsSource).as("crashes before the commit").isPositive();
        assertThat(t.openedAsTarget).as("crashes after the commit").isPositive();
        assertThat(t.torn + t.dropped).as("writes the crashes tore or dropped").isPositive();
        base.release();
    }

    private static void runOnce(PowerLossDevice base, long n, long seed, Migration.Options options,
            RawBlockCoreConfig.MetaFormat from, RawBlockCoreConfig.MetaFormat to, Map<String, byte[]> expected, Tally t)
            throws IOException {
        PowerLossDevice device = base.afterPowerLoss(seed);
        device.crashAtOp(n);
        try {
            Migration.migrate(device, "power-loss", options);
        } catch (IOException e) {
            if (!device.crashed()) {
                t.failures.add("crash point " + n + ": failed without a crash: " + e);
            }
        }
        if (!device.crashed()) {
            t.failures.add("crash point " + n + ": the migration ended before it");
        }
        t.points++;
        long[] fates = device.crashFates();
        t.dropped += fates[0];
        t.torn += fates[1];
        String where = "crash point " + n + " (seed " + seed + ")";
        PowerLossDevice back = device.afterPowerLoss(seed + 1);
        try (RawBlockCore core = RawBlockCore.open(config(to), back)) {
            String format = (String) core.status().get("meta_format");
            if (format.equals(from.configName())) {
                t.openedAsSource++;
            } else {
                t.openedAsTarget++;
            }
            MigrationTest.assertHolds(core, expected);
        } catch (IOException | RuntimeException | AssertionError e) {
            t.failures.add(where + ": after the power came back: " + e);
        } finally {
            back.release();
        }
        // running it again (with the size of the metadata area, which a store in lmcache_v1 needs anyway) finishes
        PowerLossDevice again = device.afterPowerLoss(seed + 2);
        try {
            Migration.migrate(again, "power-loss", options.withLayout(
                    new StoreLayout.Given(null, null, null, META, null)));
            t.finishedByRerun++;
        } catch (MigrationRefusedException e) {
            if (e.reason() != MigrationRefusedException.Reason.SAME_FORMAT) {
                t.failures.add(where + ": running migrate again was refused: " + e.getMessage());
            }
        } catch (IOException | RuntimeException e) {
            t.failures.add(where + ": running migrate again failed: " + e);
        }
        try (RawBlockCore core = RawBlockCore.open(config(to), again)) {
            assertThat(core.status()).containsEntry("meta_format", to.configName());
            MigrationTest.assertHolds(core, expected);
        } catch (IOException | RuntimeException | AssertionError e) {
            t.failures.add(where + ": after running migrate again: " + e);
        } finally {
            again.release();
            device.release();
        }
    }
}
