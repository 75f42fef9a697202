package io.fdpblock.controller;

import io.fdpblock.cache.KvLayout;
import io.fdpblock.cache.L1Manager;
import io.fdpblock.testing.DiskTempDirFactory;
import io.fdpblock.controller.Fixtures.Kind;
import io.fdpblock.controller.PrefetchController.Step;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.fdpblock.controller.Fixtures.CHUNK;
import static io.fdpblock.controller.Fixtures.LAYOUT;
import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.assertNoL1Locks;
import static io.fdpblock.controller.Fixtures.assertNoL2Locks;
import static io.fdpblock.controller.Fixtures.holdsPattern;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.l2Locks;
import static io.fdpblock.controller.Fixtures.pick;
import static io.fdpblock.controller.Fixtures.putDirect;
import static io.fdpblock.controller.Fixtures.slowBeside;
import static io.fdpblock.controller.Fixtures.state;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PrefetchControllerTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private final Closer closer = new Closer();
    private L1Manager l1;

    @AfterEach
    void closeAll() throws Exception {
        closer.close();
    }

    private L1Manager l1(int chunks) {
        l1 = closer.add(new L1Manager(CHUNK, chunks));
        return l1;
    }

    private L2Adapter adapter(Kind kind, String name) throws Exception {
        return closer.add(Fixtures.open(kind, dir, name));
    }

    private PrefetchController controller(List<L2Adapter> adapters, int maxInFlight, PrefetchController.StepHook hook)
            throws Exception {
        PrefetchController pc = closer.add(new PrefetchController(l1, adapters, Policies.PREFETCH.create("default"),
                maxInFlight));
        pc.setStepHook(hook);
        pc.start();
        return pc;
    }

    private static int await(PrefetchController pc, long id) throws InterruptedException {
        Integer r = pc.awaitPrefetchResult(id, WAIT);
        assertThat(r).as("result of prefetch %s", id).isNotNull();
        return r;
    }

    /** A hook recording {@link Fixtures#state} at every step (on the controller thread, which waits for it). */
    private static PrefetchController.StepHook recorder(Map<Step, String> states, L1Manager l1, List<L2Adapter> adapters) {
        return (step, id, keys, active) -> states.put(step, state(l1, adapters, keys));
    }

    private void assertLoaded(List<ObjectKey> keys) {
        List<MemoryObj> objs = l1.readLockedObjects(keys);
        for (int i = 0; i < keys.size(); i++) {
            assertThat(holdsPattern(objs.get(i).segment(), keys.get(i))).as("bytes of %s", keys.get(i)).isTrue();
        }
    }

    // ------------------------------------------------------------------ lock invariants

    @ParameterizedTest
    @EnumSource(Kind.class)
    void lockInvariantsHoldAtEveryStepWithAGap(Kind kind) throws Exception {
        l1(16);
        L2Adapter a = adapter(kind, "a");
        List<ObjectKey> ks = keys(0, 5);
        putDirect(a, pick(ks, 0, 1, 3)); // key 2 missing: 3 is a hit past the gap
        Map<Step, String> states = new ConcurrentHashMap<>();
        PrefetchController pc = controller(List.of(a), 8, recorder(states, l1, List.of(a)));

        long id = pc.submitPrefetchRequest(ks, LAYOUT);
        assertThat(await(pc, id)).isEqualTo(2);
        assertThat(states).containsOnlyKeys(Step.LOOKUP, Step.AFTER_PLAN, Step.LOADING, Step.ADMITTED, Step.AFTER_LOAD);
        assertThat(states.get(Step.LOOKUP)).isEqualTo("L1=----- L2[0]=11010");      // hits locked, L1 none
        assertThat(states.get(Step.AFTER_PLAN)).isEqualTo("L1=WW--- L2[0]=11000");  // phase 1 unlocked key 3
        assertThat(states.get(Step.LOADING)).isEqualTo("L1=WW--- L2[0]=11000");
        assertThat(states.get(Step.ADMITTED)).isEqualTo("L1=11--- L2[0]=00000");   // the adapter's load is in
        assertThat(states.get(Step.AFTER_LOAD)).isEqualTo("L1=11--- L2[0]=00000");  // prefix read-locked
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=11--- L2[0]=00000");
        assertThat(l1.isTemporary(ks.get(0))).isTrue();
        assertLoaded(ks.subList(0, 2));
        assertThat(pc.queryPrefetchResult(id)).isNull(); // exactly once

        l1.finishRead(ks.subList(0, 2));
        assertNoL1Locks(l1);
    }

    /**
     * Overlap: adapter 0 holds keys {0, 1}, adapter 1 holds {1, 2}, nobody holds 3. Key 1 is loaded once,
     * from the lower index (adapter 0), so adapter 1 loads only key 2 and phase 1 unlocks key 1 there.
     * The union {0, 1, 2} is contiguous from 0 and key 3 is missing everywhere: the answer is 3.
     */
    @ParameterizedTest
    @EnumSource(Kind.class)
    void overlappingAdaptersLoadEachKeyOnceAndGiveThree(Kind kind) throws Exception {
        l1(16);
        L2Adapter a = adapter(kind, "a");
        L2Adapter b = adapter(kind, "b");
        List<ObjectKey> ks = keys(0, 4);
        putDirect(a, pick(ks, 0, 1));
        putDirect(b, pick(ks, 1, 2));
        List<L2Adapter> both = List.of(a, b);
        Map<Step, String> states = new ConcurrentHashMap<>();
        PrefetchController pc = controller(both, 8, recorder(states, l1, both));

        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isEqualTo(3);
        assertThat(states.get(Step.LOOKUP)).isEqualTo("L1=---- L2[0]=1100 L2[1]=0110");
        assertThat(states.get(Step.AFTER_PLAN)).isEqualTo("L1=WWW- L2[0]=1100 L2[1]=0010");
        assertThat(states.get(Step.LOADING)).isEqualTo("L1=WWW- L2[0]=1100 L2[1]=0010");
        assertThat(states.get(Step.AFTER_LOAD)).isEqualTo("L1=111- L2[0]=0000 L2[1]=0000");
        assertLoaded(ks.subList(0, 3));
        l1.finishRead(ks.subList(0, 3));
        assertNoL1Locks(l1);
        assertNoL2Locks(both, ks);
    }

    // ------------------------------------------------------------------ admission per adapter

    /**
     * A fast adapter (raw_block, keys 0 and 1) and a slow one (keys 2 and 3, its load held back): the fast
     * adapter's keys are read-locked in L1, with their bytes, and its L2 locks released while the slow load is
     * still out; the answer waits for the slow one and then counts all four.
     */
    @Test
    void aFastAdaptersLoadIsInL1BeforeTheSlowOneIsIn() throws Exception {
        l1(16);
        L2Adapter fast = adapter(Kind.RAW_BLOCK, "fast");
        List<ObjectKey> ks = keys(0, 4);
        MockL2Adapter slow = slowBeside(fast, closer, ks);
        List<L2Adapter> both = List.of(fast, slow);
        StepRecorder steps = new StepRecorder(l1, both);
        PrefetchController pc = controller(both, 8, steps);

        long id = pc.submitPrefetchRequest(ks, LAYOUT);
        assertThat(steps.await(Step.ADMITTED, 1)).isEqualTo("L1=11WW L2[0]=0000 L2[1]=0011");
        assertLoaded(ks.subList(0, 2));
        assertThat(pc.queryPrefetchResult(id)).as("the slow load is still out").isNull();
        assertThat(slow.heldLoads()).isEqualTo(1);

        slow.releaseLoads();
        assertThat(await(pc, id)).isEqualTo(4);
        assertThat(steps.await(Step.ADMITTED, 2)).isEqualTo("L1=1111 L2[0]=0000 L2[1]=0000");
        assertLoaded(ks);
        l1.finishRead(ks);
        assertNoL1Locks(l1);
        assertNoL2Locks(both, ks);
    }

    /** A failed key of the fast adapter ends the prefix at once: its buffer is gone before the slow load is in. */
    @Test
    void aFastAdaptersFailedKeyIsDeletedBeforeTheSlowOneIsIn() throws Exception {
        l1(16);
        GatedAdapter fast = closer.add(new GatedAdapter(Fixtures.open(Kind.RAW_BLOCK, dir, "fast")));
        List<ObjectKey> ks = keys(0, 4);
        MockL2Adapter slow = slowBeside(fast, closer, ks);
        fast.loadMisses.add(ks.get(1));
        List<L2Adapter> both = List.of(fast, slow);
        StepRecorder steps = new StepRecorder(l1, both);
        PrefetchController pc = controller(both, 8, steps);

        long id = pc.submitPrefetchRequest(ks, LAYOUT);
        assertThat(steps.await(Step.ADMITTED, 1)).isEqualTo("L1=1-WW L2[0]=0000 L2[1]=0011");
        slow.releaseLoads();
        assertThat(await(pc, id)).isEqualTo(1);
        // keys 2 and 3 loaded past the failed key: left ready, unlocked and evictable
        assertThat(state(l1, both, ks)).isEqualTo("L1=1-UU L2[0]=0000 L2[1]=0000");
        l1.finishRead(ks.subList(0, 1));
        assertNoL1Locks(l1);
    }

    // ------------------------------------------------------------------ prefix results

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aFullHitLoadsEveryKey(Kind kind) throws Exception {
        l1(16);
        L2Adapter a = adapter(kind, "a");
        List<ObjectKey> ks = keys(0, 6);
        putDirect(a, ks);
        PrefetchController pc = controller(List.of(a), 8, null);
        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isEqualTo(6);
        assertLoaded(ks);
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=111111 L2[0]=000000");
        l1.finishRead(ks);
        assertNoL1Locks(l1);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aGapAtTwoGivesTwoAndNothingPastItIsLoaded(Kind kind) throws Exception {
        l1(16);
        L2Adapter a = adapter(kind, "a");
        List<ObjectKey> ks = keys(0, 5);
        putDirect(a, pick(ks, 0, 1, 3, 4));
        PrefetchController pc = controller(List.of(a), 8, null);
        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isEqualTo(2);
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=11--- L2[0]=00000");
        assertLoaded(ks.subList(0, 2));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void keyZeroMissingGivesZeroAndReservesNothing(Kind kind) throws Exception {
        l1(16);
        L2Adapter a = adapter(kind, "a");
        List<ObjectKey> ks = keys(0, 4);
        putDirect(a, pick(ks, 1, 2, 3));
        Map<Step, String> states = new ConcurrentHashMap<>();
        PrefetchController pc = controller(List.of(a), 8, recorder(states, l1, List.of(a)));
        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isZero();
        assertThat(states.get(Step.LOOKUP)).isEqualTo("L1=---- L2[0]=0111");
        assertThat(states.get(Step.AFTER_PLAN)).isEqualTo("L1=---- L2[0]=0000");
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=---- L2[0]=0000");
        assertThat(l1.freeChunks()).isEqualTo(16);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void twoDisjointAdaptersTogetherGiveFour(Kind kind) throws Exception {
        l1(16);
        L2Adapter a = adapter(kind, "a");
        L2Adapter b = adapter(kind, "b");
        List<ObjectKey> ks = keys(0, 4);
        putDirect(a, pick(ks, 0, 2)); // interleaved: each adapter's load bitmap is scattered back by index
        putDirect(b, pick(ks, 1, 3));
        PrefetchController pc = controller(List.of(a, b), 8, null);
        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isEqualTo(4);
        assertLoaded(ks);
        assertThat(state(l1, List.of(a, b), ks)).isEqualTo("L1=1111 L2[0]=0000 L2[1]=0000");
    }

    @Test
    void withoutAdaptersARequestCompletesAtZero() throws Exception {
        l1(4);
        PrefetchController pc = controller(List.of(), 8, null);
        assertThat(await(pc, pc.submitPrefetchRequest(keys(0, 3), LAYOUT))).isZero();
        assertThat(await(pc, pc.submitPrefetchRequest(List.of(), LAYOUT))).isZero();
        assertThat(l1.size()).isZero();
    }

    // ------------------------------------------------------------------ admission, locks after every request

    @ParameterizedTest
    @EnumSource(Kind.class)
    void atMostMaxInFlightAreActiveAndEveryQueuedRequestCompletes(Kind kind) throws Exception {
        l1(32);
        L2Adapter a = adapter(kind, "a");
        List<ObjectKey> all = keys(0, 16);
        putDirect(a, all);
        AtomicInteger maxActive = new AtomicInteger();
        PrefetchController pc = controller(List.of(a), 2, (step, id, keys, active) -> maxActive.accumulateAndGet(active,
                Math::max));
        List<Long> ids = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            ids.add(pc.submitPrefetchRequest(all.subList(4 * r, 4 * r + 4), LAYOUT));
        }
        for (long id : ids) {
            assertThat(await(pc, id)).isEqualTo(4);
        }
        assertThat(maxActive.get()).isBetween(1, 2);
        assertThat(pc.activeRequests()).isZero();
        assertThat(pc.pendingRequests()).isZero();
        assertLoaded(all);
        assertNoL2Locks(List.of(a), all);
        l1.finishRead(all);
        assertNoL1Locks(l1);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void l2LockCountsAreBackToZeroAfterEveryRequest(Kind kind) throws Exception {
        l1(64);
        L2Adapter a = adapter(kind, "a");
        L2Adapter b = adapter(kind, "b");
        List<ObjectKey> all = keys(0, 12);
        putDirect(a, pick(all, 0, 1, 2, 5, 6, 8, 10));
        putDirect(b, pick(all, 0, 2, 3, 4, 6, 7, 11));
        List<L2Adapter> both = List.of(a, b);
        PrefetchController pc = controller(both, 3, null);
        int[][] requests = {{0, 1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10}, {10, 11}, {2, 3}, {0, 9}, {6, 7, 8, 9}};
        int[] expected = {5, 4, 0, 2, 2, 1, 3};
        for (int r = 0; r < requests.length; r++) {
            List<ObjectKey> ks = pick(all, requests[r]);
            int got = await(pc, pc.submitPrefetchRequest(ks, LAYOUT));
            assertThat(got).as("request %s", r).isEqualTo(expected[r]);
            assertNoL2Locks(both, all);
            l1.finishRead(ks.subList(0, got));
            assertNoL1Locks(l1);
            l1.delete(ks); // requests are independent: a key already in L1 is not reserved again
        }
    }

    // ------------------------------------------------------------------ failures

    @ParameterizedTest
    @EnumSource(Kind.class)
    void whenL1RunsOutThePlanIsTrimmedToTheReservedPrefixAndTheRestUnlocked(Kind kind) throws Exception {
        l1(2);
        L2Adapter a = adapter(kind, "a");
        List<ObjectKey> ks = keys(0, 4);
        putDirect(a, ks);
        Map<Step, String> states = new ConcurrentHashMap<>();
        PrefetchController pc = controller(List.of(a), 8, recorder(states, l1, List.of(a)));
        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isEqualTo(2);
        assertThat(states.get(Step.AFTER_PLAN)).isEqualTo("L1=WW-- L2[0]=1100");
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=11-- L2[0]=0000");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aLoadMissInTheMiddleEndsThePrefixAndLoadedKeysPastItAreReleased(Kind kind) throws Exception {
        l1(16);
        GatedAdapter a = closer.add(new GatedAdapter(Fixtures.open(kind, dir, "a")));
        List<ObjectKey> ks = keys(0, 4);
        putDirect(a, ks);
        a.loadMisses.add(ks.get(1));
        PrefetchController pc = controller(List.of(a), 8, null);
        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isEqualTo(1);
        // key 1 failed: finishWrite + delete; keys 2, 3 loaded past the prefix: ready, unlocked, temporary
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=1-UU L2[0]=0000");
        assertThat(l1.isTemporary(ks.get(2))).isTrue();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aLoadSubmissionThatThrowsReleasesItsL1BuffersAndL2Locks(Kind kind) throws Exception {
        l1(16);
        GatedAdapter a = closer.add(new GatedAdapter(Fixtures.open(kind, dir, "a")));
        List<ObjectKey> ks = keys(0, 3);
        putDirect(a, ks);
        a.failLoadSubmit = true;
        PrefetchController pc = controller(List.of(a), 8, null);
        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isZero();
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=--- L2[0]=000");
        assertThat(l1.freeChunks()).isEqualTo(16);
    }

    @Test
    void aLayoutLargerThanAnL1ChunkIsRefusedAtSubmit() throws Exception {
        l1(4);
        PrefetchController pc = controller(List.of(), 8, null);
        assertThatThrownBy(() -> pc.submitPrefetchRequest(keys(0, 1), KvLayout.ofBytes(CHUNK + 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("do not fit");
    }

    // ------------------------------------------------------------------ stop

    @ParameterizedTest
    @EnumSource(Kind.class)
    void stopWhileLoadingReleasesEveryL1AndL2LockAndCompletesEveryRequest(Kind kind) throws Exception {
        l1(16);
        GatedAdapter a = closer.add(new GatedAdapter(Fixtures.open(kind, dir, "a")));
        List<ObjectKey> ks = keys(0, 4);
        putDirect(a, pick(ks, 0, 1, 2));
        a.stallLoads = true; // loads never complete: the request stays at LOADING
        CountDownLatch loading = new CountDownLatch(1);
        PrefetchController pc = controller(List.of(a), 1, (step, id, keys, active) -> {
            if (step == Step.LOADING) {
                loading.countDown();
            }
        });
        long first = pc.submitPrefetchRequest(ks, LAYOUT);
        assertThat(loading.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        long queued = pc.submitPrefetchRequest(ks, LAYOUT); // waits behind the first (max in flight 1)
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=WWW- L2[0]=1110");
        assertThat(pc.queryPrefetchResult(first)).isNull();

        pc.stop();
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=---- L2[0]=0000");
        assertThat(l1.freeChunks()).isEqualTo(16);
        assertThat(pc.queryPrefetchResult(first)).isZero();
        assertThat(pc.queryPrefetchResult(queued)).isZero();
        assertThatThrownBy(() -> pc.submitPrefetchRequest(ks, LAYOUT)).isInstanceOf(IllegalStateException.class);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void stopDuringLookupReleasesTheLocksOfLookupsThatAnswered(Kind kind) throws Exception {
        l1(16);
        L2Adapter a = adapter(kind, "a");
        GatedAdapter b = closer.add(new GatedAdapter(Fixtures.open(kind, dir, "b")));
        List<ObjectKey> ks = keys(0, 3);
        putDirect(a, ks);
        putDirect(b, ks);
        b.stallLookups = true; // adapter 1 never answers: the request stays in LOOKUP
        List<L2Adapter> both = List.of(a, b);
        PrefetchController pc = controller(both, 8, null);
        pc.setStopLookupGrace(Duration.ZERO);
        long id = pc.submitPrefetchRequest(ks, LAYOUT);
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (l2Locks(a, ks.get(0)) == 0) { // adapter 0's lookup locks its hits at submit
            assertThat(System.nanoTime()).as("lookup on adapter 0").isLessThan(deadline);
            Thread.onSpinWait();
        }
        assertThat(state(l1, both, ks)).isEqualTo("L1=--- L2[0]=111 L2[1]=000");

        pc.stop();
        assertThat(state(l1, both, ks)).isEqualTo("L1=--- L2[0]=000 L2[1]=000");
        assertThat(pc.queryPrefetchResult(id)).isZero();
    }
}
