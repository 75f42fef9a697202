package io.fdpblock.controller;

import io.fdpblock.cache.L1Manager;
import io.fdpblock.testing.DiskTempDirFactory;
import io.fdpblock.controller.Fixtures.Kind;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.fdpblock.controller.Fixtures.CHUNK;
import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.assertNoL1Locks;
import static io.fdpblock.controller.Fixtures.holds;
import static io.fdpblock.controller.Fixtures.key;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.putL1;
import static org.assertj.core.api.Assertions.assertThat;

@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StoreControllerTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private final Closer closer = new Closer();
    private L1Manager l1;

    @AfterEach
    void closeAll() throws Exception {
        closer.close();
    }

    private L1Manager l1() {
        l1 = closer.add(new L1Manager(CHUNK, 64));
        return l1;
    }

    private L2Adapter adapter(Kind kind, String name) throws Exception {
        return closer.add(Fixtures.open(kind, dir, name));
    }

    private StoreController controller(List<L2Adapter> adapters, String policy) throws Exception {
        StoreController sc = closer.add(new StoreController(l1, adapters, Policies.STORE.create(policy)));
        sc.start();
        return sc;
    }

    private record Submitted(int adapter, List<ObjectKey> keys) {}

    @ParameterizedTest
    @EnumSource(Kind.class)
    void everyWrittenKeyReachesEveryAdapterAndItsReadLocksAreReleased(Kind kind) throws Exception {
        l1();
        L2Adapter a = adapter(kind, "a");
        L2Adapter b = adapter(kind, "b");
        StoreController sc = closer.add(new StoreController(l1, List.of(a, b), Policies.STORE.create("default")));
        // the store lock table: read-locked while a store is in flight, unlocked after the last one
        List<Integer> readLocksAtSubmit = new CopyOnWriteArrayList<>();
        Map<ObjectKey, Integer> readLocksAfterLastCompletion = new ConcurrentHashMap<>();
        sc.setStepHook(new StoreController.StepHook() {
            @Override
            public void onSubmitted(int adapterIndex, long taskId, List<ObjectKey> keys) {
                keys.forEach(k -> readLocksAtSubmit.add(l1.readLockCount(k)));
            }

            @Override
            public void onCompleted(int adapterIndex, long taskId, List<ObjectKey> keys, boolean success) {
                keys.forEach(k -> readLocksAfterLastCompletion.put(k, l1.readLockCount(k)));
            }
        });
        sc.start();
        List<ObjectKey> ks = keys(0, 6);
        putL1(l1, ks, false);
        assertThat(sc.awaitIdle(WAIT)).isTrue();
        assertThat(readLocksAtSubmit).hasSize(12).allSatisfy(n -> assertThat(n).isBetween(1, 2));
        assertThat(readLocksAfterLastCompletion).hasSize(6).containsOnlyKeys(ks).allSatisfy((k, n) -> assertThat(n).isZero());
        assertThat(holds(a, ks)).hasToString("111111");
        assertThat(holds(b, ks)).hasToString("111111");
        assertNoL1Locks(l1);
        assertThat(l1.size()).isEqualTo(6); // default: L1 keeps everything
        assertThat(sc.completedTasks()).isEqualTo(2);
        assertThat(sc.failedTasks()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void keysAreReadLockedWhileTheirStoreIsInFlightAndStopReleasesThem(Kind kind) throws Exception {
        l1();
        GatedAdapter gated = closer.add(new GatedAdapter(Fixtures.open(kind, dir, "a")));
        gated.stallStores = true;
        StoreController sc = closer.add(new StoreController(l1, List.of(gated), Policies.STORE.create("default")));
        CountDownLatch submitted = new CountDownLatch(1);
        sc.setStepHook(new StoreController.StepHook() {
            @Override
            public void onSubmitted(int adapterIndex, long taskId, List<ObjectKey> keys) {
                submitted.countDown();
            }
        });
        sc.start();
        List<ObjectKey> ks = keys(0, 4);
        putL1(l1, ks, false);
        assertThat(submitted.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        for (ObjectKey k : ks) {
            assertThat(l1.readLockCount(k)).as("store in flight: %s", k).isEqualTo(1);
        }
        assertThat(l1.delete(ks)).isEmpty(); // the read locks protect the buffers the adapter reads
        assertThat(sc.inFlightTasks()).isEqualTo(1);

        sc.stop();
        assertNoL1Locks(l1);
        assertThat(l1.delete(ks)).hasSize(4);
        assertThat(sc.inFlightTasks()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void temporaryObjectsNeverReachL2(Kind kind) throws Exception {
        l1();
        L2Adapter a = adapter(kind, "a");
        StoreController sc = closer.add(new StoreController(l1, List.of(a), Policies.STORE.create("default")));
        List<ObjectKey> submittedKeys = new CopyOnWriteArrayList<>();
        sc.setStepHook(new StoreController.StepHook() {
            @Override
            public void onSubmitted(int adapterIndex, long taskId, List<ObjectKey> keys) {
                submittedKeys.addAll(keys);
            }
        });
        sc.start();
        List<ObjectKey> ks = keys(0, 6);
        putL1(l1, ks.subList(0, 3), true); // e.g. prefetched copies
        l1.reserveWrite(ks.subList(3, 4), Fixtures.LAYOUT, true);
        l1.finishWriteAndReserveRead(ks.subList(3, 4)); // the prefetch path's transition
        putL1(l1, ks.subList(4, 6), false);
        assertThat(sc.awaitIdle(WAIT)).isTrue();
        assertThat(holds(a, ks)).hasToString("000011");
        assertThat(submittedKeys).containsExactlyInAnyOrderElementsOf(ks.subList(4, 6));
        l1.finishRead(ks.subList(3, 4));
        assertNoL1Locks(l1);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aSubmissionThatThrowsReleasesItsReadLocksAndOtherAdaptersStillStore(Kind kind) throws Exception {
        l1();
        GatedAdapter failing = closer.add(new GatedAdapter(Fixtures.open(kind, dir, "failing")));
        failing.failStoreSubmit = true;
        L2Adapter healthy = adapter(kind, "healthy");
        StoreController sc = controller(List.of(failing, healthy), "default");
        List<ObjectKey> ks = keys(0, 3);
        putL1(l1, ks, false);
        assertThat(sc.awaitIdle(WAIT)).isTrue();
        assertNoL1Locks(l1);
        assertThat(l1.delete(ks)).hasSize(3); // nothing left locked
        assertThat(holds(healthy, ks)).hasToString("111");
        assertThat(holds(failing.delegate, ks)).hasToString("000");
        assertThat(sc.failedTasks()).isEqualTo(1);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void skipL1DeletesFromL1OnceEveryAdapterHasStored(Kind kind) throws Exception {
        l1();
        L2Adapter a = adapter(kind, "a");
        L2Adapter b = adapter(kind, "b");
        StoreController sc = controller(List.of(a, b), "skip_l1");
        List<ObjectKey> ks = keys(0, 5);
        putL1(l1, ks, false);
        assertThat(sc.awaitIdle(WAIT)).isTrue();
        assertThat(holds(a, ks)).hasToString("11111");
        assertThat(holds(b, ks)).hasToString("11111");
        assertThat(l1.size()).isZero();
        assertThat(l1.freeChunks()).isEqualTo(l1.capacity());
    }

    @Test
    void aFailedStoreReleasesTheReadLocksAndKeepsTheKeysInL1() throws Exception {
        l1();
        L2Adapter tiny = closer.add(new MockL2Adapter(2 * CHUNK, 0)); // room for 2 of 4: the task fails
        StoreController sc = controller(List.of(tiny), "skip_l1");
        List<ObjectKey> ks = keys(0, 4);
        putL1(l1, ks, false);
        assertThat(sc.awaitIdle(WAIT)).isTrue();
        assertThat(sc.failedTasks()).isEqualTo(1);
        assertNoL1Locks(l1);
        assertThat(l1.size()).isEqualTo(4); // no deletion after a failure, even with skip_l1
    }

    @Test
    void keysAreGroupedByModelAndKvRankBeforeTheyAreSubmitted() throws Exception {
        l1();
        L2Adapter a = adapter(Kind.MOCK, "a");
        StoreController sc = closer.add(new StoreController(l1, List.of(a), Policies.STORE.create("default")));
        List<Submitted> submitted = new CopyOnWriteArrayList<>();
        sc.setStepHook(new StoreController.StepHook() {
            @Override
            public void onSubmitted(int adapterIndex, long taskId, List<ObjectKey> keys) {
                submitted.add(new Submitted(adapterIndex, List.copyOf(keys)));
            }
        });
        sc.start();
        List<ObjectKey> ks = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            ks.add(key("org/a", 1, i));
            ks.add(key("org/b", 1, i));
            ks.add(key("org/a", 2, i));
        }
        putL1(l1, ks, false);
        assertThat(sc.awaitIdle(WAIT)).isTrue();
        List<ObjectKey> all = new ArrayList<>();
        for (Submitted s : submitted) {
            ObjectKey first = s.keys().get(0);
            assertThat(s.keys()).allSatisfy(k -> {
                assertThat(k.modelName()).isEqualTo(first.modelName());
                assertThat(k.kvRank()).isEqualTo(first.kvRank());
            });
            all.addAll(s.keys());
        }
        assertThat(all).containsExactlyInAnyOrderElementsOf(ks);
        assertThat(submitted).hasSizeGreaterThanOrEqualTo(3);
        assertNoL1Locks(l1);
    }

    @Test
    void withoutAdaptersWrittenKeysAreDroppedAndNothingIsLocked() throws Exception {
        l1();
        StoreController sc = controller(List.of(), "default");
        putL1(l1, keys(0, 3), false);
        assertThat(sc.awaitIdle(WAIT)).isTrue();
        assertNoL1Locks(l1);
    }
}
