package io.fdpblock.core;

import io.fdpblock.device.PowerLossDevice;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import java.nio.ByteBuffer;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The store through thousands of simulated power losses. Each run writes, deletes, loads
 * and checkpoints at random on a {@link PowerLossDevice}, loses power at a random operation (writes
 * not covered by a completed flush dropped or torn at random), then reopens what survived and checks:
 * recovery succeeds, no key that was never stored appears, every key that was stored before the
 * last completed checkpoint (and not deleted since) is there, and every key served reads back exactly
 * the bytes stored for it.
 *
 * <p>The number of runs is {@code -Dfdpblock.powerloss.runs} (default {@value #DEFAULT_RUNS}); a run's
 * seed reproduces it exactly. Figures per configuration go to the console for the README.
 */
@Tag("unit")
class PowerLossTest {
    static final int DEFAULT_RUNS = 400;
    private static final long SLOT = 16 << 10;
    private static final long META = 256 << 10;
    private static final int SLOTS = 24;
    private static final int OPS_PER_RUN = 40;

    /**
     * One configuration of the store under test.
     *
     * @param syncMs fdpblock_v2's meta_sync_interval_ms, or -1 for lmcache_v1
     */
    record Variant(String name, boolean deallocates, boolean verifyOnLoad, int syncMs,
            RawBlockCoreConfig.VerifyPayload verifyPayload) {
        Variant(String name, boolean deallocates, boolean verifyOnLoad, int syncMs) {
            this(name, deallocates, verifyOnLoad, syncMs, RawBlockCoreConfig.VerifyPayload.ALWAYS);
        }

        boolean v2() {
            return syncMs >= 0;
        }
    }

    /** What one run found. */
    static final class Tally {
        long runs;
        long crashPoints;
        long keysRequired;
        long keysLost;
        long wrongBytesServed;
        long phantomKeys;
        long recoveryFailures;
        /** Recovered keys whose slot held other bytes (a slot reused before the delete was durable): misses. */
        long crcMisses;
        long dropped;
        long torn;
        long kept;
        final List<String> failures = new ArrayList<>();

        @Override
        public String toString() {
            return runs + " runs, " + crashPoints + " crash points, writes at the crash: " + dropped + " dropped, "
                    + torn + " torn, " + kept + " kept; keys required " + keysRequired + ", lost " + keysLost
                    + ", wrong bytes served " + wrongBytesServed + ", keys never stored that appeared " + phantomKeys
                    + ", recoveries that failed " + recoveryFailures + ", recovered keys missed on their CRC32C "
                    + crcMisses;
        }
    }

    static {
        // thousands of opens and crashes: keep the console to the figures (failures are asserted)
        Logger.getLogger("io.fdpblock.core").setLevel(Level.OFF);
    }

    private static int runs() {
        return Integer.getInteger("fdpblock.powerloss.runs", DEFAULT_RUNS);
    }

    @Test
    void noAcknowledgedKeyBeforeTheLastCheckpointIsLostAndNoWrongByteIsServed() throws Exception {
        List<Variant> variants = List.of(
                new Variant("lmcache_v1, file-like device, slot headers verified at open", false, true, -1),
                new Variant("lmcache_v1, FDP-like device (deallocation reads zeros), verified at open", true, true, -1),
                new Variant("lmcache_v1, file-like device, headers checked at first load instead", false, false, -1),
                new Variant("fdpblock_v2, meta_sync_interval_ms 0 (every acknowledged put is durable)", false, true, 0),
                new Variant("fdpblock_v2, meta_sync_interval_ms 1000, FDP-like device", true, true, 1000),
                new Variant("fdpblock_v2, meta_sync_interval_ms 2 (timed group commits all through the run)", false,
                        true, 2),
                new Variant("fdpblock_v2, meta_sync_interval_ms 2, verify_payload recovery (loads check slot headers,"
                        + " and the CRC32C of slots written before the open)", false, true, 2,
                        RawBlockCoreConfig.VerifyPayload.RECOVERY));
        int runs = runs();
        for (Variant v : variants) {
            Tally t = new Tally();
            for (int run = 0; run < runs; run++) {
                runOnce(v, 0x9E3779B97F4A7C15L * (run + 1) ^ v.name().hashCode(), t);
            }
            System.out.println("power loss, " + v.name() + ": " + t);
            assertThat(t.failures).as("%s: %s", v.name(), t).isEmpty();
            assertThat(t.crashPoints).isEqualTo(runs);
            assertThat(t.keysRequired).as("runs that required keys to survive").isPositive();
        }
    }

    /**
     * {@code "format": true} interrupted by a power loss at a random operation: what the device then
     * opens as (without format) is the old store's newest or older checkpoint, read back exactly, or a
     * refusal that names format, or an empty store; never keys that were not stored, never other bytes.
     * Formatting again always gives an empty store that works.
     */
    @Test
    void aPowerLossInsideFormatLeavesTheOldStoreARefusalOrAnEmptyStore() throws Exception {
        long size = META + SLOTS * SLOT;
        Supplier<RawBlockCoreConfig.Builder> config = () -> RawBlockCoreConfig
                .builder("power-loss", SLOT).capacityBytes(size).metaTotalBytes(META).metaEnablePeriodic(false)
                .metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1);
        Map<String, Integer> outcomes = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        int runs = runs();
        for (int run = 0; run < runs; run++) {
            long seed = 0xF0F0F0F0L * (run + 1);
            SplittableRandom rnd = new SplittableRandom(seed);
            PowerLossDevice device = new PowerLossDevice(size, 4096, run % 2 == 1, seed);
            Set<String> stored = new HashSet<>();
            try (Arena arena = Arena.ofShared()) {
                // an old store with two checkpoints that hold keys (seq 2 and 3), every write flushed
                try (RawBlockCore core = RawBlockCore.open(config.get().build(), device)) {
                    for (int round = 0; round < 2; round++) {
                        List<PutRequest> reqs = new ArrayList<>();
                        for (int k = 0; k < 4; k++) {
                            String key = "m@0x00000000@" + Integer.toHexString(round * 4 + k) + "@old";
                            byte[] data = payloadOf(key, new SplittableRandom(key.hashCode() * 31L));
                            reqs.add(PutRequest.of(key, arena.allocate(data.length, 4096)
                                    .copyFrom(MemorySegment.ofArray(data))));
                            stored.add(key);
                        }
                        core.put(reqs);
                        core.checkpointNow();
                    }
                }
                // about 16 operations to format this area and commit the new store's first checkpoint
                device.crashAtOp(1 + rnd.nextInt(20));
                try {
                    RawBlockCore.open(config.get().format(true).build(), device).close();
                } catch (IOException | RuntimeException e) {
                    // the power went during it
                }
                PowerLossDevice back = device.afterPowerLoss(seed + 1);
                device.release();
                try {
                    String outcome;
                    try (RawBlockCore reopened = RawBlockCore.open(config.get().build(), back)) {
                        Set<String> keys = reopened.keySizes().keySet();
                        outcome = keys.isEmpty() ? "empty store" : keys.equals(stored) ? "old store, every key"
                                : "old store, an older checkpoint's keys";
                        for (String key : keys) {
                            byte[] want = payloadOf(key, new SplittableRandom(key.hashCode() * 31L));
                            MemorySegment dest = arena.allocate(SLOT, 4096);
                            boolean hit = reopened.load(List.of(new LoadRequest(key, dest)))[0];
                            if (!stored.contains(key) || !hit
                                    || dest.asSlice(0, want.length).mismatch(MemorySegment.ofArray(want)) != -1) {
                                failures.add("seed " + seed + ": " + key + " (stored: " + stored.contains(key)
                                        + ", loaded: " + hit + ") does not read back as stored");
                            }
                        }
                    } catch (StoreRefusedException e) {
                        outcome = "refused (" + e.reason() + ")";
                        if (!e.getMessage().contains("\"format\": true")) {
                            failures.add("seed " + seed + ": a refusal that does not say how to go on: " + e.getMessage());
                        }
                    }
                    outcomes.merge(outcome, 1, Integer::sum);
                    String fresh = "m@0x00000000@ffff@new";
                    try (RawBlockCore formatted = RawBlockCore.open(config.get().format(true).build(), back)) {
                        if (formatted.keyCount() != 0) {
                            failures.add("seed " + seed + ": format kept " + formatted.keyCount() + " keys");
                        }
                        byte[] data = payloadOf(fresh, new SplittableRandom(fresh.hashCode() * 31L));
                        formatted.put(List.of(PutRequest.of(fresh, arena.allocate(data.length, 4096)
                                .copyFrom(MemorySegment.ofArray(data)))));
                    }
                    try (RawBlockCore again = RawBlockCore.open(config.get().build(), back)) {
                        if (!again.keySizes().keySet().equals(Set.of(fresh))) {
                            failures.add("seed " + seed + ": after format and one put: " + again.keySizes().keySet());
                        }
                    }
                } finally {
                    back.release();
                }
            }
        }
        System.out.println("power loss inside format, lmcache_v1, " + runs + " runs: " + outcomes);
        assertThat(failures).isEmpty();
        assertThat(outcomes).containsKeys("empty store", "old store, every key")
                .as("a crash between zeroing the headers and the payloads").containsKey("refused (UNREADABLE)");
    }

    /** The payload of a key: its bytes follow from its name, so any surviving copy must equal it. */
    private static byte[] payloadOf(String key, SplittableRandom sizes) {
        int size = 1 + sizes.nextInt((int) (SLOT - 4096));
        byte[] b = new byte[size];
        SplittableRandom r = new SplittableRandom(key.hashCode());
        ByteBuffer bb = ByteBuffer.wrap(b);
        while (bb.remaining() >= 8) {
            bb.putLong(r.nextLong());
        }
        while (bb.hasRemaining()) {
            bb.put((byte) r.nextInt());
        }
        return b;
    }

    private void runOnce(Variant v, long seed, Tally t) throws IOException {
        SplittableRandom rnd = new SplittableRandom(seed);
        long meta = v.v2() ? RawBlockCoreConfig.v2MetaBytesFor(4096, SLOTS) : META;
        PowerLossDevice device = new PowerLossDevice(meta + SLOTS * SLOT, 4096, v.deallocates(), seed);
        RawBlockCoreConfig config = RawBlockCoreConfig.builder("power-loss", SLOT).capacityBytes(meta + SLOTS * SLOT)
                .metaTotalBytes(meta).metaEnablePeriodic(false).metaVerifyOnLoad(v.verifyOnLoad())
                .metaFormat(v.v2() ? RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2 : RawBlockCoreConfig.MetaFormat.LMCACHE_V1)
                .metaSyncIntervalMs(Math.max(0, v.syncMs())).verifyPayload(v.verifyPayload()).build();
        Set<String> everAttempted = new HashSet<>(); // committed, maybe recovered, maybe never acknowledged
        Set<String> durableAcks = new HashSet<>(); // fdpblock_v2 with sync 0: acknowledged means durable
        // fdpblock_v2: the log commits completed when each key was acknowledged; once two more have
        // completed, one of them began after the acknowledgement and carried its record: it must survive
        Map<String, Long> commitsAtAck = new LinkedHashMap<>();
        Map<String, byte[]> stored = new LinkedHashMap<>(); // acknowledged and not deleted
        Set<String> everStored = new HashSet<>();
        Set<String> required = new HashSet<>(); // in the last completed checkpoint
        Set<String> deletedSinceCheckpoint = new HashSet<>();
        // every checkpoint attempted (by seq): what it held, and the deletes after it
        Map<Long, Set<String>> attempted = new LinkedHashMap<>();
        Map<Long, Set<String>> deletedAfter = new LinkedHashMap<>();
        long lastCompletedSeq = 0;
        // about 6 device operations per workload step: the crash lands anywhere in the run, or not at all
        long crashAt = 1 + rnd.nextLong(Math.max(1, OPS_PER_RUN * 6L));
        t.runs++;
        try (Arena arena = Arena.ofShared()) {
            RawBlockCore core = RawBlockCore.open(config, device);
            device.crashAtOp(crashAt);
            try {
                for (int op = 0; op < OPS_PER_RUN && !device.crashed(); op++) {
                    int what = rnd.nextInt(10);
                    if (what < 5) { // put 1..3 keys (sometimes one already stored)
                        int n = 1 + rnd.nextInt(3);
                        List<PutRequest> reqs = new ArrayList<>();
                        List<String> keys = new ArrayList<>();
                        for (int k = 0; k < n; k++) {
                            String key = "m@0x00000000@" + Long.toHexString(rnd.nextInt(60)) + "@s" + (seed & 3);
                            if (keys.contains(key)) {
                                continue;
                            }
                            byte[] data = payloadOf(key, new SplittableRandom(key.hashCode() * 31L));
                            MemorySegment seg = arena.allocate(data.length, 4096);
                            seg.copyFrom(MemorySegment.ofArray(data));
                            reqs.add(PutRequest.of(key, seg));
                            keys.add(key);
                        }
                        everAttempted.addAll(keys);
                        PutOutcome[] out = core.putWithOutcome(reqs);
                        for (int k = 0; k < keys.size(); k++) {
                            if (out[k].success()) {
                                String key = keys.get(k);
                                stored.put(key, payloadOf(key, new SplittableRandom(key.hashCode() * 31L)));
                                everStored.add(key);
                                if (v.syncMs() == 0 && out[k] == PutOutcome.STORED) {
                                    durableAcks.add(key);
                                }
                                if (v.v2() && out[k] == PutOutcome.STORED) {
                                    commitsAtAck.put(key, logCommits(core));
                                }
                            }
                        }
                    } else if (what < 7 && !stored.isEmpty()) { // delete one
                        String key = new ArrayList<>(stored.keySet()).get(rnd.nextInt(stored.size()));
                        if (core.delete(List.of(key), false)[0]) {
                            stored.remove(key);
                            durableAcks.remove(key); // the delete may or may not have been made durable
                            commitsAtAck.remove(key);
                            deletedSinceCheckpoint.add(key);
                            deletedAfter.values().forEach(d -> d.add(key));
                        }
                    } else if (what < 9) { // checkpoint
                        Set<String> snapshot = new HashSet<>(stored.keySet());
                        long seq = ((Number) core.status().get("checkpoint_seq")).longValue() + 1;
                        attempted.put(seq, snapshot);
                        deletedAfter.put(seq, new HashSet<>());
                        try {
                            core.checkpointNow();
                            if (((Number) core.status().get("checkpoint_seq")).longValue() == seq) {
                                required = snapshot;
                                deletedSinceCheckpoint.clear();
                                lastCompletedSeq = seq;
                            } else { // nothing had changed: nothing was written
                                attempted.remove(seq);
                                deletedAfter.remove(seq);
                            }
                        } catch (IOException e) {
                            // the power went during it: the previous checkpoint stays the last completed one
                        }
                    } else if (!stored.isEmpty()) { // load one while running
                        String key = new ArrayList<>(stored.keySet()).get(rnd.nextInt(stored.size()));
                        MemorySegment dest = arena.allocate(SLOT, 4096);
                        if (core.load(List.of(new LoadRequest(key, dest)))[0]) {
                            byte[] want = stored.get(key);
                            if (dest.asSlice(0, want.length).mismatch(MemorySegment.ofArray(want)) != -1) {
                                t.wrongBytesServed++;
                                t.failures.add("seed " + seed + ": before the crash, " + key + " read back wrong");
                            }
                        }
                    }
                }
            } finally {
                if (v.v2()) { // a lower bound of the commits completed before the power goes
                    long commits = logCommits(core);
                    commitsAtAck.forEach((key, c) -> {
                        if (commits >= c + 2) {
                            durableAcks.add(key);
                        }
                    });
                }
                long seq = ((Number) core.status().get("checkpoint_seq")).longValue() + 1;
                attempted.put(seq, new HashSet<>(stored.keySet())); // close's final checkpoint
                deletedAfter.put(seq, new HashSet<>());
                device.powerLoss();
                try {
                    core.close();
                } catch (IOException | RuntimeException e) {
                    // its final checkpoint fails: the power is gone
                }
            }
            t.crashPoints++;
            long[] fates = device.crashFates();
            t.dropped += fates[0];
            t.torn += fates[1];
            t.kept += fates[2];

            PowerLossDevice back = device.afterPowerLoss(seed + 1);
            device.release();
            Set<String> mustHave = new HashSet<>(required);
            mustHave.removeAll(deletedSinceCheckpoint);
            t.keysRequired += mustHave.size();
            RawBlockCore recovered;
            try {
                recovered = RawBlockCore.open(config, back);
            } catch (IOException | RuntimeException e) {
                t.recoveryFailures++;
                t.failures.add("seed " + seed + ": recovery failed: " + e);
                back.release();
                return;
            }
            try {
                // Whichever checkpoint was recovered (the last completed one, or a later one whose header
                // made it), every key it held and that was not deleted after it must be there: its slot
                // data was durable before its header.
                long seq = ((Number) recovered.status().get("checkpoint_seq")).longValue();
                if (!v.v2() && seq < lastCompletedSeq) {
                    t.failures.add("seed " + seed + ": recovered checkpoint seq " + seq + " is older than the last"
                            + " completed one, " + lastCompletedSeq);
                }
                if (!v.v2() && attempted.containsKey(seq)) {
                    Set<String> held = new HashSet<>(attempted.get(seq));
                    held.removeAll(deletedAfter.get(seq));
                    t.keysRequired += held.size() - mustHave.size();
                    mustHave.addAll(held);
                }
                if (v.v2()) {
                    t.keysRequired += durableAcks.size();
                    mustHave.addAll(durableAcks);
                }
                for (String key : recovered.keySizes().keySet()) {
                    if (!(v.v2() ? everAttempted : everStored).contains(key)) {
                        t.phantomKeys++;
                        t.failures.add("seed " + seed + ": " + key + " was never stored but was recovered");
                    }
                }
                Set<String> candidates = new HashSet<>(recovered.keySizes().keySet());
                candidates.addAll(mustHave);
                for (String key : candidates) {
                    byte[] want = payloadOf(key, new SplittableRandom(key.hashCode() * 31L));
                    MemorySegment dest = arena.allocate(SLOT, 4096);
                    boolean hit = recovered.load(List.of(new LoadRequest(key, dest)))[0];
                    if (hit && dest.asSlice(0, want.length).mismatch(MemorySegment.ofArray(want)) != -1) {
                        t.wrongBytesServed++;
                        t.failures.add("seed " + seed + ": " + key + " served bytes that differ from those stored");
                    }
                    if (!hit && mustHave.contains(key)) {
                        t.keysLost++;
                        t.failures.add("seed " + seed + ": " + key + " was required (in the last completed checkpoint,"
                                + " or its log record durable) and is"
                                + " lost (" + recovered.status().get("recovery") + ")");
                    }
                }
                t.crcMisses += ((Number) recovered.status().get("crc_mismatches")).longValue();
                // the recovered store works: a new key goes in and survives a clean reopen
                String fresh = "m@0x00000000@ffff@after";
                byte[] data = payloadOf(fresh, new SplittableRandom(fresh.hashCode() * 31L));
                MemorySegment seg = arena.allocate(data.length, 4096);
                seg.copyFrom(MemorySegment.ofArray(data));
                recovered.put(List.of(PutRequest.of(fresh, seg)));
            } finally {
                recovered.close();
                back.release();
            }
        }
    }

    private static long logCommits(RawBlockCore core) {
        return ((Number) core.status().get("log_commits")).longValue();
    }

    static byte[] bytes(MemorySegment s, int n) {
        return s.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
    }
}
