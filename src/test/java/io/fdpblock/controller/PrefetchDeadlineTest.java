package io.fdpblock.controller;

import io.fdpblock.cache.L1Manager;
import io.fdpblock.controller.Fixtures.Kind;
import io.fdpblock.controller.PrefetchController.Step;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2DeleteResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static io.fdpblock.controller.Fixtures.LAYOUT;
import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.assertNoL1Locks;
import static io.fdpblock.controller.Fixtures.assertNoL2Locks;
import static io.fdpblock.controller.Fixtures.holdsPattern;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.l2Locks;
import static io.fdpblock.controller.Fixtures.putDirect;
import static io.fdpblock.controller.Fixtures.slowBeside;
import static io.fdpblock.controller.Fixtures.state;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The prefetch load deadline (docs/contract.md section 4): time is a test clock that moves only when a
 * test says so, and the late tasks are held back by the adapters until the test releases them, so nothing
 * here depends on how fast the machine is.
 */
@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PrefetchDeadlineTest {
    private static final Duration DEADLINE = Duration.ofMillis(100);

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private final Closer closer = new Closer();
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private L1Manager l1;

    @AfterEach
    void closeAll() throws Exception {
        closer.close();
    }

    private L1Manager l1(int chunks) {
        l1 = closer.add(new L1Manager(Fixtures.CHUNK, chunks));
        return l1;
    }

    private L2Adapter rawBlock(String name) throws Exception {
        return closer.add(Fixtures.open(Kind.RAW_BLOCK, dir, name));
    }

    private PrefetchController controller(List<L2Adapter> adapters, int maxInFlight, PrefetchController.StepHook hook)
            throws Exception {
        PrefetchController pc = closer.add(new PrefetchController(l1, adapters, Policies.PREFETCH.create("default"),
                maxInFlight, DEADLINE));
        pc.setClock(now::get);
        pc.setStepHook(hook);
        pc.start();
        return pc;
    }

    /** A mock that holds {@code keys} and holds its loads back until {@code releaseLoads()}. */
    private MockL2Adapter holdingLoads(List<ObjectKey> keys) throws Exception {
        MockL2Adapter a = closer.add(new MockL2Adapter());
        putDirect(a, keys);
        a.holdLoads();
        return a;
    }

    /** Moves the test clock past every deadline given so far and has the controller look at once. */
    private void passDeadline(PrefetchController pc) {
        now.addAndGet(DEADLINE.toNanos());
        pc.wakeUp();
    }

    private static int await(PrefetchController pc, long id) throws InterruptedException {
        Integer r = pc.awaitPrefetchResult(id, WAIT);
        assertThat(r).as("answer of prefetch %s", id).isNotNull();
        return r;
    }

    private void assertBytes(List<ObjectKey> keys) {
        List<MemoryObj> objs = l1.reserveRead(keys);
        for (int i = 0; i < keys.size(); i++) {
            assertThat(objs.get(i)).as("%s in L1", keys.get(i)).isNotNull();
            assertThat(holdsPattern(objs.get(i).segment(), keys.get(i))).as("bytes of %s", keys.get(i)).isTrue();
        }
        l1.finishRead(keys);
    }

    /** A request of keys 0..3, answered at its deadline with the fast adapter's load in and the slow one's held. */
    private record Expired(List<ObjectKey> keys, MockL2Adapter slow, List<L2Adapter> both, StepRecorder steps,
            PrefetchController pc, long id) {}

    /** Keys 0 and 1 on a raw_block adapter, 2 and 3 on a mock that holds its loads; then the deadline passes. */
    private Expired expiredWithTheFastLoadIn() throws Exception {
        l1(8);
        L2Adapter fast = rawBlock("fast");
        List<ObjectKey> ks = keys(0, 4);
        MockL2Adapter slow = slowBeside(fast, closer, ks);
        List<L2Adapter> both = List.of(fast, slow);
        StepRecorder steps = new StepRecorder(l1, both);
        PrefetchController pc = controller(both, 8, steps);

        long id = pc.submitPrefetchRequest(ks, LAYOUT);
        assertThat(steps.await(Step.ADMITTED, 1)).isEqualTo("L1=11WW L2[0]=0000 L2[1]=0011");
        passDeadline(pc);
        assertThat(steps.await(Step.EXPIRED, 1)).isEqualTo("L1=11WW L2[0]=0000 L2[1]=0011");
        return new Expired(ks, slow, both, steps, pc, id);
    }

    @Test
    void withoutADeadlineTheClockIsNeverRead() throws Exception {
        l1(8);
        MockL2Adapter a = closer.add(new MockL2Adapter());
        List<ObjectKey> ks = keys(0, 3);
        putDirect(a, ks);
        PrefetchController pc = closer.add(new PrefetchController(l1, List.of(a), Policies.PREFETCH.create("default"),
                8));
        pc.setClock(() -> {
            throw new AssertionError("the clock was read without a deadline");
        });
        pc.start();
        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isEqualTo(3);
        assertThat(pc.loadDeadline()).isEqualTo(Duration.ZERO);
        assertThat(pc.deadlineTimeouts()).isZero();
    }

    @Test
    void aNegativeDeadlineIsRefused() throws Exception {
        l1(2);
        assertThatThrownBy(() -> new PrefetchController(l1, List.of(), Policies.PREFETCH.create("default"), 8,
                Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT-0.001S");
    }

    /**
     * The load is held by the adapter past the deadline: the caller is answered once (0: nothing loaded
     * yet), and until the load is in its buffers stay write-locked (not free, not evictable, not deletable:
     * L1 is full and refuses a new reservation), its L2 locks held. When it is in, its bytes are in its own
     * buffers, which become ready and unlocked; the late completion answers nobody.
     */
    @Test
    void aLoadPastItsDeadlineIsAnsweredOnceAndItsBuffersAreNotReusedBeforeItIsIn() throws Exception {
        l1(3);
        List<ObjectKey> ks = keys(0, 3);
        MockL2Adapter a = holdingLoads(ks);
        StepRecorder steps = new StepRecorder(l1, List.of(a));
        PrefetchController pc = controller(List.of(a), 8, steps);

        long id = pc.submitPrefetchRequest(ks, LAYOUT);
        assertThat(steps.await(Step.LOADING, 1)).isEqualTo("L1=WWW L2[0]=111");
        passDeadline(pc);
        assertThat(await(pc, id)).isZero();
        assertThat(steps.await(Step.EXPIRED, 1)).isEqualTo("L1=WWW L2[0]=111");
        assertThat(pc.deadlineTimeouts()).isEqualTo(1);
        assertThat(pc.drainingRequests()).isEqualTo(1);
        assertThat(pc.activeRequests()).as("a draining request keeps its place").isEqualTo(1);

        assertThat(l1.freeChunks()).isZero();
        assertThat(l1.reserveWrite(keys(10, 11), LAYOUT, true)).containsOnlyNulls();
        assertThat(l1.delete(ks)).isEmpty();
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=WWW L2[0]=111");
        assertThat(a.heldLoads()).isEqualTo(1);

        assertThat(a.releaseLoads()).isEqualTo(1);
        assertThat(steps.await(Step.DRAINED, 1)).isEqualTo("L1=UUU L2[0]=000");
        assertThat(pc.drainingRequests()).isZero();
        assertThat(pc.queryPrefetchResult(id)).as("answered once, never again").isNull();
        assertThat(steps.count(Step.AFTER_LOAD)).isZero();
        assertThat(l1.isTemporary(ks.get(0))).isTrue();
        assertBytes(ks);
        assertNoL1Locks(l1);
    }

    /** The same on the raw-block store: its lock counts stay up while the late load is out, and are 0 after. */
    @Test
    void theRawBlockLocksOfALateLoadAreReleasedWhenItIsInAndNotBefore() throws Exception {
        l1(8);
        GatedAdapter a = closer.add(new GatedAdapter(Fixtures.open(Kind.RAW_BLOCK, dir, "a")));
        List<ObjectKey> ks = keys(0, 4);
        putDirect(a, ks);
        a.holdLoads = true;
        StepRecorder steps = new StepRecorder(l1, List.of(a));
        PrefetchController pc = controller(List.of(a), 8, steps);

        long id = pc.submitPrefetchRequest(ks, LAYOUT);
        assertThat(steps.await(Step.LOADING, 1)).isEqualTo("L1=WWWW L2[0]=1111");
        passDeadline(pc);
        assertThat(await(pc, id)).isZero();
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=WWWW L2[0]=1111");
        // the locks still protect the late load's keys from a delete
        assertThat(a.deleteReporting(ks, false)).containsOnly(L2DeleteResult.LOCKED);

        assertThat(a.releaseHeld()).isEqualTo(1);
        assertThat(steps.await(Step.DRAINED, 1)).isEqualTo("L1=UUUU L2[0]=0000");
        assertNoL2Locks(List.of(a), ks);
        assertBytes(ks);
        assertThat(pc.queryPrefetchResult(id)).isNull();
        assertNoL1Locks(l1);
    }

    /**
     * A fast adapter (raw_block, keys 0 and 1) answered, a slow one (keys 2 and 3) held: at the deadline the
     * caller gets the fast adapter's prefix, read-locked for it; the slow load drains. The answer is taken only
     * after the drain, and it is still the deadline's.
     */
    @Test
    void atTheDeadlineTheFastAdaptersPrefixIsTheAnswerAndTheSlowOneDrains() throws Exception {
        Expired e = expiredWithTheFastLoadIn();
        List<ObjectKey> ks = e.keys();
        e.slow().releaseLoads();
        assertThat(e.steps().await(Step.DRAINED, 1)).isEqualTo("L1=11UU L2[0]=0000 L2[1]=0000");

        assertThat(e.pc().queryPrefetchResult(e.id())).isEqualTo(2);
        assertThat(e.pc().queryPrefetchResult(e.id())).isNull();
        List<MemoryObj> answered = l1.readLockedObjects(ks.subList(0, 2));
        assertThat(holdsPattern(answered.get(0).segment(), ks.get(0))).isTrue();
        assertThat(holdsPattern(answered.get(1).segment(), ks.get(1))).isTrue();
        l1.finishRead(ks.subList(0, 2));
        assertBytes(ks.subList(2, 4));
        assertNoL1Locks(l1);
        assertNoL2Locks(e.both(), ks);
    }

    /**
     * Adapter 0 answers its lookup at once, adapter 1's lookup is held: at the deadline the answer is 0 (a
     * lookup that loaded nothing serves nothing) and adapter 0's locks are released; adapter 1's late lookup
     * takes its locks when it answers, and the drain releases them.
     */
    @Test
    void aLookupPastItsDeadlineAnswersZeroAndTheLateLookupsLocksAreReleasedWhenItAnswers() throws Exception {
        l1(8);
        L2Adapter a = rawBlock("a");
        GatedAdapter b = closer.add(new GatedAdapter(Fixtures.open(Kind.RAW_BLOCK, dir, "b")));
        List<ObjectKey> ks = keys(0, 3);
        putDirect(a, ks);
        putDirect(b, ks);
        b.holdLookups = true;
        List<L2Adapter> both = List.of(a, b);
        StepRecorder steps = new StepRecorder(l1, both);
        PrefetchController pc = controller(both, 8, steps);

        long id = pc.submitPrefetchRequest(ks, LAYOUT);
        long until = System.nanoTime() + WAIT.toNanos();
        while (l2Locks(a, ks.get(0)) == 0) { // the controller submitted the lookups: the request is in LOOKUP
            assertThat(System.nanoTime()).as("lookup on adapter 0").isLessThan(until);
            Thread.onSpinWait();
        }
        passDeadline(pc);
        assertThat(await(pc, id)).isZero();
        assertThat(steps.await(Step.EXPIRED, 1)).isEqualTo("L1=--- L2[0]=000 L2[1]=000");

        assertThat(b.releaseHeld()).isEqualTo(1);
        assertThat(steps.await(Step.DRAINED, 1)).isEqualTo("L1=--- L2[0]=000 L2[1]=000");
        assertThat(steps.count(Step.LOOKUP)).as("never planned").isZero();
        assertThat(pc.queryPrefetchResult(id)).isNull();
        assertThat(l1.size()).isZero();
        assertNoL2Locks(both, ks);
    }

    /** With one request in flight at a time, the queued one is due before it starts: 0, and no L2 work at all. */
    @Test
    @SuppressWarnings("unchecked")
    void aRequestDueWhileQueuedIsAnsweredZeroAndNeverReachesL2() throws Exception {
        l1(8);
        List<ObjectKey> ks = keys(0, 6);
        MockL2Adapter a = holdingLoads(ks);
        StepRecorder steps = new StepRecorder(l1, List.of(a));
        PrefetchController pc = controller(List.of(a), 1, steps);

        long first = pc.submitPrefetchRequest(ks.subList(0, 3), LAYOUT);
        steps.await(Step.LOADING, 1);
        long queued = pc.submitPrefetchRequest(ks.subList(3, 6), LAYOUT);
        passDeadline(pc);
        assertThat(await(pc, queued)).isZero();
        assertThat(await(pc, first)).isZero();
        assertThat(pc.deadlineTimeouts()).isEqualTo(2);

        a.releaseLoads();
        steps.await(Step.DRAINED, 1);
        assertThat(pc.activeRequests()).isZero();
        assertThat(pc.pendingRequests()).isZero();
        assertThat(((Map<String, Object>) a.reportStatus().get("lookup")).get("tasks")).as("lookups").isEqualTo(1L);
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=UUU--- L2[0]=000000");
    }

    /**
     * The load is in and the clock past the deadline at the same moment (both done by the hook while the
     * controller waits at LOADING): the completion is taken first and answers in full.
     */
    @Test
    void aLoadThatIsInWhenTheDeadlinePassesWins() throws Exception {
        l1(8);
        List<ObjectKey> ks = keys(0, 3);
        MockL2Adapter a = holdingLoads(ks);
        StepRecorder steps = new StepRecorder(l1, List.of(a)).then((step, id, keys, active) -> {
            if (step == Step.LOADING) {
                a.releaseLoads();
                now.addAndGet(DEADLINE.toNanos());
            }
        });
        PrefetchController pc = controller(List.of(a), 8, steps);

        assertThat(await(pc, pc.submitPrefetchRequest(ks, LAYOUT))).isEqualTo(3);
        assertThat(pc.deadlineTimeouts()).isZero();
        assertThat(steps.count(Step.EXPIRED)).isZero();
        assertThat(state(l1, List.of(a), ks)).isEqualTo("L1=111 L2[0]=000");
        l1.finishRead(ks);
    }

    /**
     * A stop while a request drains keeps its answer (the deadline's, not stop's 0) and the caller's read
     * locks, and releases what the late load held (its buffers and L2 locks), as stop does for any load.
     */
    @Test
    void stopWhileDrainingKeepsTheAnswerAndReleasesTheLateLoadsLocks() throws Exception {
        Expired e = expiredWithTheFastLoadIn();
        e.pc().stop();
        assertThat(state(l1, e.both(), e.keys())).isEqualTo("L1=11-- L2[0]=0000 L2[1]=0000");
        assertThat(e.pc().queryPrefetchResult(e.id())).isEqualTo(2);
        assertThat(e.pc().drainingRequests()).isZero();
        l1.finishRead(e.keys().subList(0, 2));
        assertNoL1Locks(l1);
    }
}
