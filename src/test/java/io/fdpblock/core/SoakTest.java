package io.fdpblock.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A long run on a store whose metadata is small, so that its log wraps many times and snapshots follow
 * each other: random puts (new keys and keys stored again after a delete), deletes and evictions of the
 * oldest keys on a full device (slots reused at once), from several threads, with reopens after clean
 * closes. After every reopen the store must hold exactly the keys of the model, each with its bytes.
 *
 * <p>{@code make test} runs it at a size of a few seconds; {@code make soak} (system property
 * {@code fdpblock.soak.ops}) runs it for minutes.
 */
@Tag("host")
class SoakTest {
    private static final long SLOT = 8192;
    private static final int PAYLOAD = 4096;

    /** Operations of the whole run, over every thread and reopen. */
    private static long ops() {
        return Long.getLong("fdpblock.soak.ops", 120_000);
    }

    @Test
    void aLongRunOnFourThreadsReopensExactlyWhatItHeld(@TempDir Path dir) throws Exception {
        soak(dir, 4, 5, 256, IoEngine.IO_URING, 17);
    }

    @Test
    void aLongRunOnOneThreadReopensExactlyWhatItHeld(@TempDir Path dir) throws Exception {
        soak(dir, 1, 3, 96, IoEngine.POSIX, 5);
    }

    /**
     * @param threads workers, each on a key range of its own (so each one's model is exact)
     * @param reopens clean close and reopen this many times over the run
     * @param slots the device's slots: small, so the device is full and evicts most of the time
     */
    private static void soak(Path dir, int threads, int reopens, int slots, IoEngine engine, long seed)
            throws Exception {
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, slots);
        long capacity = meta + slots * SLOT;
        Path file = BlockDevices.createFile(dir.resolve("soak.img"), capacity);
        RawBlockCoreConfig config = RawBlockCoreConfig.builder(file.toString(), SLOT).capacityBytes(capacity)
                .metaTotalBytes(meta).ioEngine(engine).metaSyncIntervalMs(2).build();
        // per thread: key -> version of the bytes it holds (the model)
        List<Map<String, Integer>> models = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            models.add(new LinkedHashMap<>());
        }
        long perRound = ops() / (reopens + 1) / threads;
        long snapshots = 0;
        long logBytes = 0;
        long lsn = 0;
        try (Arena arena = Arena.ofShared(); ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            for (int round = 0; round <= reopens; round++) {
                try (RawBlockCore core = RawBlockCore.open(config)) {
                    if (round > 0) {
                        assertHolds(core, models, arena, "after reopen " + round);
                    }
                    List<Future<?>> running = new ArrayList<>();
                    for (int t = 0; t < threads; t++) {
                        int worker = t;
                        long s = seed * 1_000 + round * 31L + t;
                        running.add(pool.submit(() -> {
                            work(core, worker, models.get(worker), perRound, slots / threads, new SplittableRandom(s), arena);
                            return null;
                        }));
                    }
                    for (Future<?> f : running) {
                        f.get();
                    }
                    assertHolds(core, models, arena, "before close " + round);
                    Map<String, Object> st = core.status();
                    snapshots += (long) st.get("snapshots_written");
                    lsn = (long) st.get("log_next_lsn");
                    logBytes = (long) st.get("log_bytes");
                    assertThat(st.get("is_healthy")).as("status %s", st).isEqualTo(true);
                }
            }
            try (RawBlockCore core = RawBlockCore.open(config)) {
                assertHolds(core, models, arena, "after the last reopen");
            }
        }
        // the run is only worth something if the log wrapped and snapshots were taken over and over
        System.out.printf("soak (%d threads, %d slots): %d operations, %d clean closes and reopens, %d snapshots,"
                + " %d laps of the log; every reopen held the model's keys, byte for byte%n", threads, slots,
                perRound * threads * (reopens + 1), reopens + 1, snapshots, lsn / logBytes);
        assertThat(lsn / logBytes).as("laps of the log over the run").isGreaterThanOrEqualTo(2);
        assertThat(snapshots).as("snapshots over the run").isGreaterThanOrEqualTo(8);
    }

    private static void work(RawBlockCore core, int worker, Map<String, Integer> model, long ops, int share,
            SplittableRandom random, Arena arena) throws IOException {
        int keySpace = share * 3;
        Map<String, Integer> versions = new HashMap<>(); // what the next put of a key writes
        MemorySegment buf = arena.allocate(PAYLOAD, 4096);
        for (long op = 0; op < ops; op++) {
            int choice = random.nextInt(100);
            if (choice < 65) { // a put, of a key maybe stored before (and deleted since, or not)
                String key = key(worker, random.nextInt(keySpace));
                int version = versions.merge(key, 1, Integer::sum);
                fill(buf, key, version);
                PutOutcome o = core.putWithOutcome(List.of(PutRequest.of(key, buf)))[0];
                switch (o) {
                    case STORED -> model.put(key, version);
                    case ALREADY_STORED -> assertThat(model).containsKey(key);
                    case DEVICE_FULL -> evictOldest(core, model, 1 + random.nextInt(3));
                    default -> throw new AssertionError("put " + key + ": " + o);
                }
            } else if (choice < 85) { // a delete of a key held, or of one not held
                String key = random.nextBoolean() && !model.isEmpty() ? pick(model, random)
                        : key(worker, random.nextInt(keySpace));
                DeleteOutcome o = core.deleteWithOutcome(List.of(key), false)[0];
                assertThat(o).as("delete %s", key).isEqualTo(model.remove(key) != null
                        ? DeleteOutcome.REMOVED : DeleteOutcome.MISSING);
            } else if (choice < 95) { // an eviction round: the oldest few
                evictOldest(core, model, 1 + random.nextInt(share / 4 + 1));
            } else { // a load, checked byte for byte
                if (!model.isEmpty()) {
                    String key = pick(model, random);
                    assertThat(core.load(List.of(new LoadRequest(key, buf)))[0]).as("load %s", key).isTrue();
                    assertThat(matches(buf, key, model.get(key))).as("bytes of %s", key).isTrue();
                }
            }
        }
    }

    private static void evictOldest(RawBlockCore core, Map<String, Integer> model, int n) {
        List<String> oldest = new ArrayList<>();
        for (String k : model.keySet()) {
            if (oldest.size() == n) {
                break;
            }
            oldest.add(k);
        }
        DeleteOutcome[] o = core.deleteWithOutcome(oldest, false);
        for (int i = 0; i < o.length; i++) {
            assertThat(o[i]).as("evict %s", oldest.get(i)).isEqualTo(DeleteOutcome.REMOVED);
            model.remove(oldest.get(i));
        }
    }

    private static String pick(Map<String, Integer> model, SplittableRandom random) {
        int skip = random.nextInt(model.size());
        for (String k : model.keySet()) {
            if (skip-- == 0) {
                return k;
            }
        }
        throw new AssertionError();
    }

    /** Every key of the models and nothing else, each loading the bytes of the version the model has. */
    private static void assertHolds(RawBlockCore core, List<Map<String, Integer>> models, Arena arena, String when)
            throws IOException {
        Map<String, Integer> expected = new TreeMap<>();
        models.forEach(expected::putAll);
        Map<String, Integer> held = new TreeMap<>(core.keySizes());
        assertThat(held.keySet()).as("keys %s (recovery: %s)", when, core.status().get("recovery"))
                .containsExactlyElementsOf(expected.keySet());
        assertThat(core.keyCount()).as("key count %s", when).isEqualTo(expected.size());
        MemorySegment buf = arena.allocate(PAYLOAD, 4096);
        Map<String, String> wrong = new ConcurrentHashMap<>();
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            buf.fill((byte) 0);
            boolean loaded = core.load(List.of(new LoadRequest(e.getKey(), buf)))[0];
            if (!loaded) {
                wrong.put(e.getKey(), "miss");
            } else if (!matches(buf, e.getKey(), e.getValue())) {
                wrong.put(e.getKey(), "other bytes than version " + e.getValue());
            }
        }
        assertThat(wrong).as("keys whose bytes are not the model's %s", when).isEmpty();
    }

    private static String key(int worker, int i) {
        return KeyCodec.encode("soak/model", worker, new byte[] {(byte) i, (byte) (i >> 8), 9}, "", 0);
    }

    private static void fill(MemorySegment buf, String key, int version) {
        SplittableRandom r = new SplittableRandom(key.hashCode() * 31L + version);
        for (long i = 0; i < PAYLOAD; i += 8) {
            buf.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
    }

    private static boolean matches(MemorySegment buf, String key, int version) {
        SplittableRandom r = new SplittableRandom(key.hashCode() * 31L + version);
        for (long i = 0; i < PAYLOAD; i += 8) {
            if (buf.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != r.nextLong()) {
                return false;
            }
        }
        return true;
    }
}
