package io.fdpblock.l2;

import io.fdpblock.linux.EventFd;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** docs/contract.md section 2, run against every adapter. */
@Tag("host")
public abstract class L2AdapterContractTest {
    public static final Duration WAIT = Duration.ofSeconds(30);

    final Arena arena = Arena.ofShared();
    final List<L2Adapter> opened = new ArrayList<>();

    /** A new, empty adapter. */
    protected abstract L2Adapter create() throws Exception;

    /** Makes the adapter's internals fail from now on (lookups and loads must still complete). */
    protected abstract void breakInternals(L2Adapter adapter) throws Exception;

    protected abstract int lockCount(L2Adapter adapter, ObjectKey key);

    /**
     * The bytes a store result reports for one newly stored key of {@code payloadBytes}: the payload by
     * default; an adapter that reports the space a key occupies (raw_block: its slot) says so here.
     */
    protected long storedBytes(int payloadBytes) {
        return payloadBytes;
    }

    L2Adapter open() throws Exception {
        L2Adapter a = create();
        opened.add(a);
        return a;
    }

    @AfterEach
    void closeAll() {
        opened.forEach(L2Adapter::close);
        arena.close();
    }

    static ObjectKey key(int i) {
        return ObjectKey.of("org/model", 0x01000000, new byte[] {1, 2, (byte) i, (byte) (i >> 8)});
    }

    MemoryObj data(ObjectKey k, int size) {
        MemorySegment s = arena.allocate(size, 4096);
        SplittableRandom r = new SplittableRandom(k.hashCode());
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
        return MemoryObj.of(s);
    }

    MemoryObj empty(int size, byte fill) {
        MemorySegment s = arena.allocate(size, 4096);
        s.fill(fill);
        return MemoryObj.of(s);
    }

    /** Waits on the store fd until task {@code id} is popped; fails when it appears twice. */
    public static L2StoreResult awaitStore(L2Adapter a, long id) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            EventFd.await(a.storeEventFd(), Duration.ofMillis(200));
            Map<Long, L2StoreResult> done = a.popCompletedStoreTasks();
            if (done.containsKey(id)) {
                return done.get(id);
            }
        }
        throw new AssertionError("store task " + id + " did not complete");
    }

    public static Bitmap awaitLookup(L2Adapter a, long id) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        Bitmap b;
        while ((b = a.queryLookupAndLockResult(id)) == null && System.nanoTime() < deadline) {
            EventFd.await(a.lookupAndLockEventFd(), Duration.ofMillis(200));
        }
        assertThat(b).as("lookup %d completed", id).isNotNull();
        return b;
    }

    public static Bitmap awaitLoad(L2Adapter a, long id) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        Bitmap b;
        while ((b = a.queryLoadResult(id)) == null && System.nanoTime() < deadline) {
            EventFd.await(a.loadEventFd(), Duration.ofMillis(200));
        }
        assertThat(b).as("load %d completed", id).isNotNull();
        return b;
    }

    void store(L2Adapter a, int... indices) throws Exception {
        List<ObjectKey> keys = new ArrayList<>();
        List<MemoryObj> objs = new ArrayList<>();
        for (int i : indices) {
            keys.add(key(i));
            objs.add(data(key(i), 3000 + i));
        }
        assertThat(awaitStore(a, a.submitStoreTask(keys, objs)).success()).isTrue();
    }

    @Test
    void eventFdsAreDistinctAndUniqueAcrossTenAdapters() throws Exception {
        Set<Integer> fds = new HashSet<>();
        for (int i = 0; i < 10; i++) {
            L2Adapter a = open();
            fds.add(a.storeEventFd());
            fds.add(a.lookupAndLockEventFd());
            fds.add(a.loadEventFd());
        }
        assertThat(fds).hasSize(30);
    }

    @Test
    void storeSignalsItsFdAndIsPoppedOnce() throws Exception {
        L2Adapter a = open();
        long id = a.submitStoreTask(List.of(key(1), key(2)), List.of(data(key(1), 100), data(key(2), 5000)));
        assertThat(EventFd.await(a.storeEventFd(), WAIT)).isTrue();
        Map<Long, L2StoreResult> popped = new HashMap<>(a.popCompletedStoreTasks());
        if (!popped.containsKey(id)) {
            popped.put(id, awaitStore(a, id));
        }
        assertThat(popped).containsOnlyKeys(id);
        assertThat(popped.get(id)).isEqualTo(new L2StoreResult(true, storedBytes(100) + storedBytes(5000)));
        assertThat(a.popCompletedStoreTasks()).isEmpty();
        long second = a.submitStoreTask(List.of(key(3)), List.of(data(key(3), 10)));
        assertThat(second).isNotEqualTo(id);
    }

    @Test
    void lookupAndLoadAreOneShotAndUnknownIdsAreNull() throws Exception {
        L2Adapter a = open();
        store(a, 0, 2);
        assertThat(a.queryLookupAndLockResult(12345)).isNull();
        assertThat(a.queryLoadResult(12345)).isNull();
        List<ObjectKey> keys = List.of(key(0), key(1), key(2), key(3));
        long lid = a.submitLookupAndLockTask(keys);
        Bitmap hits = awaitLookup(a, lid);
        assertThat(hits.toString()).isEqualTo("1010");
        assertThat(hits.size()).isEqualTo(4);
        assertThat(a.queryLookupAndLockResult(lid)).as("one-shot").isNull();
        assertThat(lockCount(a, key(0))).isEqualTo(1);
        assertThat(lockCount(a, key(1))).isZero();

        List<MemoryObj> bufs = List.of(empty(8192, (byte) 1), empty(8192, (byte) 2), empty(8192, (byte) 3),
                empty(8192, (byte) 4));
        long did = a.submitLoadTask(keys, bufs);
        assertThat(awaitLoad(a, did).toString()).isEqualTo("1010");
        assertThat(a.queryLoadResult(did)).isNull();
        for (int i : new int[] {0, 2}) {
            MemorySegment expected = data(key(i), 3000 + i).segment();
            assertThat(bufs.get(i).segment().asSlice(0, 3000 + i).mismatch(expected)).isEqualTo(-1);
        }
        for (int i : new int[] {1, 3}) { // misses untouched
            MemorySegment s = bufs.get(i).segment();
            for (long b = 0; b < 8192; b++) {
                assertThat(s.get(ValueLayout.JAVA_BYTE, b)).isEqualTo((byte) (i + 1));
            }
        }
        a.submitUnlock(List.of(key(0), key(2)));
        assertThat(lockCount(a, key(0))).isZero();
    }

    @Test
    void statusCountsTasksMissesAndLatencyPerOperation() throws Exception {
        L2Adapter a = open();
        store(a, 1);
        store(a, 2);
        awaitLookup(a, a.submitLookupAndLockTask(List.of(key(1), key(3), key(4))));
        a.submitUnlock(List.of(key(1)));
        Map<String, Object> s = a.reportStatus();
        @SuppressWarnings("unchecked")
        Map<String, Object> store = (Map<String, Object>) s.get("store");
        @SuppressWarnings("unchecked")
        Map<String, Object> lookup = (Map<String, Object>) s.get("lookup");
        assertThat(store).containsEntry("tasks", 2L).containsEntry("failed_tasks", 0L).containsEntry("bytes",
                storedBytes(3001) + storedBytes(3002));
        assertThat(lookup).containsEntry("tasks", 1L).containsEntry("misses", 2L);
        assertThat((Double) lookup.get("max_us")).isGreaterThan(0.0);
        assertThat((Double) store.get("p99_us")).isGreaterThanOrEqualTo((Double) store.get("p50_us"));
    }

    @Test
    void backendIdentityIsReportedInTheStatusAndAnEmptyNameIsRefused() throws Exception {
        L2Adapter a = open();
        a.setBackendIdentity("raw_block", true);
        assertThat(a.reportStatus()).containsEntry("backend", "raw_block").containsEntry("backend_shared", true);
        assertThatThrownBy(() -> a.setBackendIdentity("", false)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("backend name \"\" is empty");
        assertThatThrownBy(() -> a.setBackendIdentity(null, false)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("backend name null");
        assertThat(a.reportStatus()).as("a refused identity changes nothing").containsEntry("backend", "raw_block")
                .containsEntry("backend_shared", true);
        a.setBackendIdentity("fs", false);
        assertThat(a.reportStatus()).containsEntry("backend", "fs").containsEntry("backend_shared", false);
        a.close();
        assertThatThrownBy(() -> a.setBackendIdentity("fs", false)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void unlockOfUnknownKeysAndUnderflowAreNoOps() throws Exception {
        L2Adapter a = open();
        store(a, 1);
        a.submitUnlock(List.of(key(77), key(1)));
        assertThat(lockCount(a, key(1))).isZero();
        awaitLookup(a, a.submitLookupAndLockTask(List.of(key(1))));
        a.submitUnlock(List.of(key(1), key(1), key(1)));
        assertThat(lockCount(a, key(1))).isZero();
    }

    @Test
    void deleteRespectsLocksUntilUnlocked() throws Exception {
        L2Adapter a = open();
        List<ObjectKey> deleted = new CopyOnWriteArrayList<>();
        a.registerListener(new L2AdapterListener() {
            @Override
            public void onKeysDeleted(List<ObjectKey> keys) {
                deleted.addAll(keys);
            }
        });
        store(a, 1, 2);
        awaitLookup(a, a.submitLookupAndLockTask(List.of(key(1))));
        a.delete(List.of(key(1), key(2), key(3)));
        assertThat(deleted).containsExactly(key(2));
        assertThat(awaitLookup(a, a.submitLookupAndLockTask(List.of(key(1), key(2)))).toString()).isEqualTo("10");
        a.submitUnlock(List.of(key(1)));
        a.submitUnlock(List.of(key(1)));
        a.delete(List.of(key(1)));
        assertThat(deleted).containsExactly(key(2), key(1));
        assertThat(awaitLookup(a, a.submitLookupAndLockTask(List.of(key(1)))).toString()).isEqualTo("0");
        assertThat(a.usage().totalBytesUsed()).isZero();
    }

    @Test
    void deleteReportingSaysPerKeyWhatTheDeleteDid() throws Exception {
        L2Adapter a = open();
        List<ObjectKey> deleted = new CopyOnWriteArrayList<>();
        a.registerListener(new L2AdapterListener() {
            @Override
            public void onKeysDeleted(List<ObjectKey> keys) {
                deleted.addAll(keys);
            }
        });
        store(a, 1, 2);
        awaitLookup(a, a.submitLookupAndLockTask(List.of(key(1))));
        assertThat(a.deleteReporting(List.of(key(1), key(2), key(3)), false))
                .containsExactly(L2DeleteResult.LOCKED, L2DeleteResult.REMOVED, L2DeleteResult.NOT_HELD);
        assertThat(deleted).as("listeners hear what the answer says was removed").containsExactly(key(2));
        assertThat(a.deleteReporting(List.of(key(2)), false)).containsExactly(L2DeleteResult.NOT_HELD);
        assertThat(a.deleteReporting(List.of(key(1)), true)).containsExactly(L2DeleteResult.REMOVED);
        assertThat(a.usage().totalBytesUsed()).isZero();
    }

    @Test
    void aForcedDeleteRemovesALockedKeyAndAnnouncesIt() throws Exception {
        L2Adapter a = open();
        List<ObjectKey> deleted = new CopyOnWriteArrayList<>();
        a.registerListener(new L2AdapterListener() {
            @Override
            public void onKeysDeleted(List<ObjectKey> keys) {
                deleted.addAll(keys);
            }
        });
        store(a, 1);
        awaitLookup(a, a.submitLookupAndLockTask(List.of(key(1))));
        assertThat(lockCount(a, key(1))).isEqualTo(1);
        a.delete(List.of(key(1)), false);
        assertThat(deleted).as("a plain delete keeps a locked key").isEmpty();
        a.delete(List.of(key(1)), true);
        assertThat(deleted).containsExactly(key(1));
        assertThat(awaitLookup(a, a.submitLookupAndLockTask(List.of(key(1)))).toString()).isEqualTo("0");
        a.submitUnlock(List.of(key(1))); // the holder's unlock of a key forced away is a no-op
        assertThat(a.usage().totalBytesUsed()).isZero();
    }

    @Test
    void duplicateStoreGivesOneListenerEvent() throws Exception {
        L2Adapter a = open();
        List<ObjectKey> stored = new CopyOnWriteArrayList<>();
        a.registerListener(new L2AdapterListener() {
            @Override
            public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
                stored.addAll(keys);
            }
        });
        store(a, 5);
        store(a, 5);
        long id = a.submitStoreTask(List.of(key(5), key(5)), List.of(data(key(5), 3005), data(key(5), 3005)));
        assertThat(awaitStore(a, id).success()).isTrue();
        assertThat(stored).containsExactly(key(5));
    }

    @Test
    void aListenerThatThrowsInEveryHookDoesNotBlockSignals() throws Exception {
        L2Adapter a = open();
        store(a, 9); // replayed at registration: that throws too
        AtomicInteger calls = new AtomicInteger();
        a.registerListener(new L2AdapterListener() {
            @Override
            public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
                calls.incrementAndGet();
                throw new RuntimeException("stored");
            }

            @Override
            public void onKeysAccessed(List<ObjectKey> keys) {
                calls.incrementAndGet();
                throw new RuntimeException("accessed");
            }

            @Override
            public void onKeysDeleted(List<ObjectKey> keys) {
                calls.incrementAndGet();
                throw new RuntimeException("deleted");
            }
        });
        store(a, 1);
        assertThat(awaitLoad(a, a.submitLoadTask(List.of(key(1)), List.of(empty(8192, (byte) 0)))).toString())
                .isEqualTo("1");
        a.delete(List.of(key(1)));
        assertThat(calls.get()).isEqualTo(4);
        assertThat((Long) a.reportStatus().get("listener_failures")).isEqualTo(4L);
    }

    @Test
    void internalLookupOrLoadErrorsCompleteWithAnAllZeroBitmap() throws Exception {
        L2Adapter a = open();
        store(a, 1, 2);
        breakInternals(a);
        List<ObjectKey> keys = List.of(key(1), key(2), key(3));
        Bitmap lookup = awaitLookup(a, a.submitLookupAndLockTask(keys));
        assertThat(lookup.size()).isEqualTo(3);
        assertThat(lookup.cardinality()).isZero();
        Bitmap load = awaitLoad(a, a.submitLoadTask(keys, List.of(empty(8192, (byte) 0), empty(8192, (byte) 0),
                empty(8192, (byte) 0))));
        assertThat(load.size()).isEqualTo(3);
        assertThat(load.cardinality()).isZero();
    }

    @Test
    void badArgumentsAreRejectedAtSubmit() throws Exception {
        L2Adapter a = open();
        assertThatThrownBy(() -> a.submitStoreTask(List.of(), List.of())).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.submitStoreTask(List.of(key(1)), List.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("equal length");
        assertThatThrownBy(() -> a.submitLoadTask(List.of(key(1), key(2)), List.of(empty(10, (byte) 0))))
                .isInstanceOf(IllegalArgumentException.class);
        store(a, 1);
        assertThatThrownBy(() -> a.submitLoadTask(List.of(key(1)), List.of(empty(100, (byte) 0))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("smaller than the stored");
    }

    @Test
    void callsAfterCloseFailClearly() throws Exception {
        L2Adapter a = open();
        store(a, 1);
        a.close();
        a.close();
        List<ObjectKey> k = List.of(key(1));
        List<Runnable> calls = List.of(
                () -> a.submitStoreTask(k, List.of(empty(10, (byte) 0))),
                a::popCompletedStoreTasks,
                () -> a.submitLookupAndLockTask(k),
                () -> a.queryLookupAndLockResult(1),
                () -> a.submitUnlock(k),
                () -> a.submitLoadTask(k, List.of(empty(4096, (byte) 0))),
                () -> a.queryLoadResult(1),
                () -> a.delete(k),
                () -> a.registerListener(new L2AdapterListener() { }),
                a::usage,
                a::reportStatus,
                a::storeEventFd,
                a::lookupAndLockEventFd,
                a::loadEventFd,
                () -> a.delete(k, true));
        for (Runnable c : calls) {
            assertThatThrownBy(c::run).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        }
    }

    @Test
    void eightThreadsOfMixedOperationsLoseDuplicateAndMisrouteNothing() throws Exception {
        L2Adapter a = open();
        int threads = 8;
        int ops = 1000;
        Map<Long, L2StoreResult> storeResults = new ConcurrentHashMap<>();
        AtomicInteger duplicatePops = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        Semaphore popped = new Semaphore(0); // a permit per store result popped
        // One consumer drains store results, as a StoreController does; lookups and loads are queried by their submitters.
        Thread consumer = Thread.ofPlatform().start(() -> {
            while (!stop.get()) {
                try {
                    EventFd.await(a.storeEventFd(), Duration.ofMillis(50));
                } catch (Exception e) {
                    return;
                }
                a.popCompletedStoreTasks().forEach((id, r) -> {
                    if (storeResults.put(id, r) != null) {
                        duplicatePops.incrementAndGet();
                    } else {
                        popped.release();
                    }
                });
            }
        });
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Long> storeIds = new CopyOnWriteArrayList<>();
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                fs.add(pool.submit(() -> {
                    SplittableRandom r = new SplittableRandom(thread);
                    Set<Integer> mine = new HashSet<>();
                    for (int i = 0; i < ops; i++) {
                        int n = thread * 10_000 + r.nextInt(40);
                        ObjectKey k = ObjectKey.of("m", thread, new byte[] {(byte) n, (byte) (n >> 8), (byte) (n >> 16)});
                        switch (r.nextInt(4)) {
                            case 0 -> {
                                long id = a.submitStoreTask(List.of(k), List.of(data(k, 512)));
                                storeIds.add(id);
                                mine.add(n);
                            }
                            case 1 -> {
                                Bitmap b = awaitLookup(a, a.submitLookupAndLockTask(List.of(k)));
                                assertThat(b.size()).isEqualTo(1);
                                if (b.get(0)) {
                                    a.submitUnlock(List.of(k));
                                }
                            }
                            case 2 -> {
                                MemoryObj buf = empty(4096, (byte) 0);
                                Bitmap b = awaitLoad(a, a.submitLoadTask(List.of(k), List.of(buf)));
                                if (b.get(0)) { // a hit holds this key's bytes, never another's
                                    assertThat(buf.segment().asSlice(0, 512).mismatch(data(k, 512).segment()))
                                            .isEqualTo(-1);
                                }
                            }
                            default -> a.delete(List.of(k));
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get(180, TimeUnit.SECONDS);
            }
            // every store's result popped (the bound only keeps a lost one from hanging the test)
            assertThat(popped.tryAcquire(storeIds.size(), WAIT.toNanos(), TimeUnit.NANOSECONDS))
                    .as("store results popped: %d of %d", storeResults.size(), storeIds.size()).isTrue();
        } finally {
            stop.set(true);
            pool.shutdownNow();
            consumer.join();
        }
        assertThat(duplicatePops.get()).isZero();
        assertThat(storeResults.keySet()).containsExactlyInAnyOrderElementsOf(storeIds);
        assertThat(new HashSet<>(storeIds)).hasSameSizeAs(storeIds);
    }
}
