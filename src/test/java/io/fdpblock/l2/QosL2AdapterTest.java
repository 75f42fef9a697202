package io.fdpblock.l2;

import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.linux.EventFd;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import static io.fdpblock.l2.L2AdapterContractTest.WAIT;
import static io.fdpblock.l2.L2AdapterContractTest.awaitLoad;
import static io.fdpblock.l2.L2AdapterContractTest.awaitLookup;
import static io.fdpblock.l2.L2AdapterContractTest.awaitStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The QoS wrapper's own invariants, driven step by step through a {@link HeldL2Adapter} (an operation
 * completes only when the test releases it) with real eventfds and the wrapper's real relay thread. No
 * timing assertions: the tests wait (bounded) for events, and admission happens only on completions.
 */
@Tag("host")
class QosL2AdapterTest {
    @TempDir
    Path dir;
    private final Arena arena = Arena.ofShared();
    private final List<L2Adapter> opened = new ArrayList<>();

    @AfterEach
    void tearDown() {
        opened.forEach(L2Adapter::close);
        arena.close();
    }

    private <A extends L2Adapter> A track(A a) {
        opened.add(a);
        return a;
    }

    private static ObjectKey key(String salt, int i) {
        return ObjectKey.of("org/model", 0x01000000, new byte[] {9, (byte) i, (byte) (i >> 8)}).withCacheSalt(salt);
    }

    private MemoryObj data(ObjectKey k, int size) {
        MemorySegment s = arena.allocate(size, 4096);
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (k.hashCode() * 31 + i));
        }
        return MemoryObj.of(s);
    }

    private MemoryObj filled(int size, byte b) {
        MemorySegment s = arena.allocate(size, 4096);
        s.fill(b);
        return MemoryObj.of(s);
    }

    private static void assertFilled(MemoryObj o, byte b) {
        MemorySegment s = o.segment();
        for (long i = 0; i < s.byteSize(); i++) {
            assertThat(s.get(ValueLayout.JAVA_BYTE, i)).as("byte %d", i).isEqualTo(b);
        }
    }

    /** Waits (bounded; never a timing assertion) until {@code condition} holds. */
    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waiting until " + what).isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> qos(L2Adapter a) {
        return (Map<String, Object>) a.reportStatus().get("qos");
    }

    /** Pops store results until every id is in, failing on one popped twice. */
    private static Map<Long, L2StoreResult> popAll(L2Adapter a, List<Long> ids) throws Exception {
        Map<Long, L2StoreResult> got = new HashMap<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!got.keySet().containsAll(ids)) {
            assertThat(System.nanoTime()).as("store results %s of %s", got.keySet(), ids).isLessThan(deadline);
            EventFd.await(a.storeEventFd(), Duration.ofMillis(200));
            a.popCompletedStoreTasks().forEach((id, r) -> assertThat(got.put(id, r)).as("task %d popped twice", id)
                    .isNull());
        }
        assertThat(got.keySet()).containsExactlyInAnyOrderElementsOf(ids);
        return got;
    }

    /** Releases each admitted operation in turn (one in flight at a time) until {@code total} reached the inner one. */
    private static void releaseInTurn(HeldL2Adapter held, int total) throws InterruptedException {
        for (int n = held.submitted().size() + 1; n <= total; n++) {
            held.releaseOnly();
            held.awaitSubmitted(n);
        }
        held.releaseOnly();
    }

    /** The salts of submissions {@code from} (0-based) to {@code to} (exclusive), as letters. */
    private static String saltsInAdmissionOrder(HeldL2Adapter held, int from, int to, Map<String, String> letters) {
        return held.submitted().subList(from, to).stream().map(h -> letters.get(h.salt())).collect(Collectors.joining());
    }

    // ---------------------------------------------------------------- weights

    @Test
    void underContentionTheInnerAdapterGetsThreeLookupsOfWeight300ForEachOfWeight100() throws Exception {
        HeldL2Adapter held = new HeldL2Adapter();
        QosL2Adapter q = track(QosL2Adapter.wrap(held, QosScheduler.builder().quantumBytes(1).maxInflightTasks(1)
                .weight("hi", 300).weight("lo", 100).build()));
        List<Long> ids = new ArrayList<>();
        ids.add(q.submitLookupAndLockTask(List.of(key("blocker", 0))));
        held.awaitSubmitted(1);
        for (int i = 0; i < 20; i++) {
            ids.add(q.submitLookupAndLockTask(List.of(key("lo", i))));
            ids.add(q.submitLookupAndLockTask(List.of(key("hi", i))));
        }
        assertThat(held.submitted()).as("only the blocker was admitted").hasSize(1);
        assertThat(qos(q)).containsEntry("queued_tasks", 40L).containsEntry("inflight_tasks", 1);
        releaseInTurn(held, 41);
        assertThat(saltsInAdmissionOrder(held, 1, 41, Map.of("hi", "H", "lo", "L")))
                .isEqualTo("LHHH".repeat(6) + "LHH" + "L".repeat(13));
        for (long id : ids) { // each result exactly once
            assertThat(awaitLookup(q, id).toString()).isEqualTo("0");
            assertThat(q.queryLookupAndLockResult(id)).isNull();
        }
        // a result is recorded before its share of the scheduler is released: wait for that too
        await("nothing in flight", () -> qos(q).get("inflight_tasks").equals(0));
        assertThat(qos(q)).containsEntry("admitted_tasks", 41L).containsEntry("queued_tasks", 0L);
    }

    @Test
    void equalWeightsShareStoreBytesNotStoreCount() throws Exception {
        HeldL2Adapter held = new HeldL2Adapter();
        QosL2Adapter q = track(QosL2Adapter.wrap(held, QosScheduler.builder().quantumBytes(16384).maxInflightTasks(1)
                .build()));
        List<Long> ids = new ArrayList<>();
        ids.add(q.submitStoreTask(List.of(key("x", 0)), List.of(data(key("x", 0), 100))));
        held.awaitSubmitted(1);
        for (int i = 0; i < 8; i++) {
            ids.add(q.submitStoreTask(List.of(key("small", i)), List.of(data(key("small", i), 4096))));
        }
        for (int i = 0; i < 4; i++) {
            ids.add(q.submitStoreTask(List.of(key("big", i)), List.of(data(key("big", i), 16384))));
        }
        releaseInTurn(held, 13);
        assertThat(saltsInAdmissionOrder(held, 1, 13, Map.of("small", "s", "big", "B"))).isEqualTo("ssssBssssBBB");
        Map<Long, L2StoreResult> results = popAll(q, ids);
        assertThat(results.values()).allMatch(L2StoreResult::success);
        assertThat(results.get(ids.get(1)).bytesWritten()).isEqualTo(4096);
        assertThat(q.popCompletedStoreTasks()).isEmpty();
    }

    @Test
    void aWeightSetAtRunTimeReordersWorkAlreadyQueued() throws Exception {
        HeldL2Adapter held = new HeldL2Adapter();
        QosScheduler s = QosScheduler.builder().quantumBytes(1).maxInflightTasks(1).build();
        QosL2Adapter q = track(QosL2Adapter.wrap(held, s));
        q.submitLookupAndLockTask(List.of(key("x", 0)));
        held.awaitSubmitted(1);
        for (int i = 0; i < 8; i++) {
            q.submitLookupAndLockTask(List.of(key("a", i)));
            q.submitLookupAndLockTask(List.of(key("b", i)));
        }
        held.releaseOnly();
        held.awaitSubmitted(2);
        held.releaseOnly();
        held.awaitSubmitted(3);
        q.scheduler().setWeight("b", 300);
        releaseInTurn(held, 11); // its last release admits a twelfth: only the first eleven are looked at
        assertThat(saltsInAdmissionOrder(held, 1, 11, Map.of("a", "A", "b", "B"))).isEqualTo("AB" + "ABBB" + "ABBB");
    }

    // ---------------------------------------------------------------- bypass and buffers

    @Test
    void unlockAndDeleteGoStraightToTheInnerAdapterPastQueuedWork() throws Exception {
        HeldL2Adapter held = new HeldL2Adapter();
        QosL2Adapter q = track(QosL2Adapter.wrap(held, QosScheduler.builder().maxInflightTasks(1).build()));
        ObjectKey k = key("a", 1);
        ObjectKey other = key("a", 2);
        long store = q.submitStoreTask(List.of(k, other), List.of(data(k, 500), data(other, 500)));
        held.releaseOnly();
        assertThat(awaitStore(q, store).success()).isTrue();
        long lookup = q.submitLookupAndLockTask(List.of(k));
        held.awaitSubmitted(2);
        held.releaseOnly();
        assertThat(awaitLookup(q, lookup).toString()).isEqualTo("1");
        assertThat(held.lockCount(k)).isEqualTo(1);

        q.submitLookupAndLockTask(List.of(key("b", 9))); // holds the one admission slot
        held.awaitSubmitted(3);
        long queued = q.submitLookupAndLockTask(List.of(k)); // waits for admission
        q.submitUnlock(List.of(k));
        assertThat(held.lockCount(k)).as("unlocked while a lookup waits for admission").isZero();
        q.delete(List.of(other));
        assertThat(held.backing.heldKeys()).containsOnlyKeys(k);
        assertThat(held.submitted()).as("the queued lookup has not reached the inner adapter").hasSize(3);

        releaseInTurn(held, 4);
        assertThat(awaitLookup(q, queued).toString()).isEqualTo("1");
        assertThat(held.lockCount(k)).isEqualTo(1);
        q.submitUnlock(List.of(k));
        assertThat(held.lockCount(k)).isZero();
    }

    @Test
    void aQueuedOperationsBuffersAreUntouchedUntilItIsAdmittedAndCompleted() throws Exception {
        HeldL2Adapter held = new HeldL2Adapter();
        QosL2Adapter q = track(QosL2Adapter.wrap(held, QosScheduler.builder().maxInflightTasks(1).build()));
        ObjectKey k = key("a", 1);
        MemoryObj payload = data(k, 3000);
        long store = q.submitStoreTask(List.of(k), List.of(payload));
        held.releaseOnly();
        assertThat(awaitStore(q, store).success()).isTrue();

        q.submitLookupAndLockTask(List.of(key("b", 0))); // holds the admission slot
        held.awaitSubmitted(2);
        MemoryObj into = filled(4096, (byte) 0x5A);
        long load = q.submitLoadTask(List.of(k), List.of(into));
        ObjectKey later = key("a", 2);
        MemoryObj laterPayload = filled(1000, (byte) 1);
        long laterStore = q.submitStoreTask(List.of(later), List.of(laterPayload));
        laterPayload.segment().fill((byte) 2); // not read yet: the store has not been admitted
        assertFilled(into, (byte) 0x5A);

        held.releaseOnly(); // the blocker: the load is admitted, the store waits behind it
        held.awaitSubmitted(3);
        assertThat(held.submitted().get(2).op()).isEqualTo(HeldL2Adapter.Op.LOAD);
        assertFilled(into, (byte) 0x5A); // admitted, but the inner adapter has not loaded yet
        assertThat(q.queryLoadResult(load)).isNull();
        held.releaseOnly();
        assertThat(awaitLoad(q, load).toString()).isEqualTo("1");
        assertThat(into.segment().asSlice(0, 3000).mismatch(payload.segment())).isEqualTo(-1);
        assertFilled(MemoryObj.of(into.segment().asSlice(3000)), (byte) 0x5A);

        held.awaitSubmitted(4);
        held.releaseOnly();
        assertThat(awaitStore(q, laterStore).success()).isTrue();
        MemoryObj check = filled(1000, (byte) 0);
        long verify = q.submitLoadTask(List.of(later), List.of(check));
        held.awaitSubmitted(5);
        held.releaseOnly();
        assertThat(awaitLoad(q, verify).toString()).isEqualTo("1");
        assertFilled(check, (byte) 2); // what the buffer held at admission
    }

    @Test
    void closingDropsQueuedOperationsWithoutTouchingTheirBuffersAndReleasesTheSchedulersShare() throws Exception {
        HeldL2Adapter held = new HeldL2Adapter();
        QosScheduler s = QosScheduler.builder().maxInflightTasks(1).build();
        QosL2Adapter q = QosL2Adapter.wrap(held, s);
        q.submitLookupAndLockTask(List.of(key("a", 0)));
        held.awaitSubmitted(1);
        MemoryObj into = filled(4096, (byte) 0x77);
        q.submitLoadTask(List.of(key("a", 1)), List.of(into));
        assertThat(s.snapshot()).containsEntry("queued_tasks", 1L).containsEntry("inflight_tasks", 1);
        q.close();
        assertFilled(into, (byte) 0x77);
        assertThat(held.submitted()).hasSize(1);
        assertThat(s.snapshot()).containsEntry("queued_tasks", 0L).containsEntry("inflight_tasks", 0)
                .containsEntry("domains", Map.of());
        assertThatThrownBy(q::storeEventFd).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    // ---------------------------------------------------------------- events and results

    @Test
    void theWrappersFdsSignalOnlyWhenOneOfItsTasksCompletesWhole() throws Exception {
        HeldL2Adapter held = new HeldL2Adapter();
        QosL2Adapter q = track(QosL2Adapter.wrap(held, QosScheduler.builder().maxInflightTasks(0).build()));
        assertThat(List.of(q.storeEventFd(), q.lookupAndLockEventFd(), q.loadEventFd())).doesNotContainAnyElementsOf(
                List.of(held.storeEventFd(), held.lookupAndLockEventFd(), held.loadEventFd())).doesNotHaveDuplicates();
        List<ObjectKey> keys = List.of(key("a", 0), key("b", 0), key("a", 1));
        long store = q.submitStoreTask(List.of(keys.get(0), keys.get(1)), List.of(data(keys.get(0), 100),
                data(keys.get(1), 100)));
        held.awaitSubmitted(2);
        held.waiting().forEach(held::release);
        // the one signal first, then the result: a result popped before its signal would leave that
        // signal to arrive later, where no store completes
        assertThat(EventFd.await(q.storeEventFd(), WAIT)).isTrue();
        assertThat(q.popCompletedStoreTasks()).containsExactly(Map.entry(store, new L2StoreResult(true, 200)));

        long lookup = q.submitLookupAndLockTask(keys); // two salts: two operations of the inner adapter
        HeldL2Adapter.Held second = held.awaitSubmitted(4);
        HeldL2Adapter.Held first = held.submitted().get(2);
        assertThat(first.keys()).containsExactly(keys.get(0), keys.get(2));
        assertThat(second.keys()).containsExactly(keys.get(1));
        await("both parts are at the inner adapter", () -> qos(q).get("at_inner_lookups").equals(2));
        assertThat(EventFd.drainFd(q.lookupAndLockEventFd())).as("admission is not a completion").isZero();

        assertThat(qos(q)).containsEntry("inflight_tasks", 2);
        held.release(first);
        // its share of the scheduler is released last, after whatever finishing the part signals
        await("the first part is finished", () -> qos(q).get("inflight_tasks").equals(1));
        assertThat(qos(q)).containsEntry("at_inner_lookups", 1);
        assertThat(EventFd.drainFd(q.lookupAndLockEventFd())).as("a part is not the task").isZero();
        assertThat(q.queryLookupAndLockResult(lookup)).isNull();

        held.release(second);
        assertThat(EventFd.await(q.lookupAndLockEventFd(), WAIT)).isTrue();
        assertThat(q.queryLookupAndLockResult(lookup).toString()).isEqualTo("110");
        assertThat(q.queryLookupAndLockResult(lookup)).as("one-shot").isNull();
        assertThat(EventFd.drainFd(q.storeEventFd())).as("no store completed").isZero();
        assertThat(EventFd.drainFd(q.loadEventFd())).as("no load completed").isZero();
        q.submitUnlock(List.of(keys.get(0), keys.get(1)));
    }

    @Test
    void aMixedSaltStoreSucceedsOnlyWhenEveryPartDoesAndLookupsMergeByPosition() throws Exception {
        QosL2Adapter q = track(QosL2Adapter.wrap(new MockL2Adapter(4000, 0))); // room for one 3000-byte payload
        ObjectKey a = key("a", 0);
        ObjectKey b = key("b", 0);
        long id = q.submitStoreTask(List.of(a, b), List.of(data(a, 3000), data(b, 3000)));
        assertThat(awaitStore(q, id)).isEqualTo(L2StoreResult.failed());
        assertThat(q.usage().bytesByCacheSalt()).as("the part that fit stays stored").isEqualTo(Map.of("a", 3000L));
        Bitmap hits = awaitLookup(q, q.submitLookupAndLockTask(List.of(b, a, key("a", 1), key("c", 0))));
        assertThat(hits.toString()).isEqualTo("0100");
        assertThat(qos(q)).containsEntry("split_tasks", 2L);

        QosL2Adapter roomy = track(QosL2Adapter.wrap(new MockL2Adapter()));
        List<ObjectKey> keys = List.of(key("a", 0), key("b", 0), key("a", 1));
        long ok = roomy.submitStoreTask(keys, List.of(data(keys.get(0), 100), data(keys.get(1), 200),
                data(keys.get(2), 300)));
        assertThat(awaitStore(roomy, ok)).isEqualTo(new L2StoreResult(true, 600));
        List<MemoryObj> into = List.of(filled(300, (byte) 0), filled(300, (byte) 0), filled(300, (byte) 0));
        assertThat(awaitLoad(roomy, roomy.submitLoadTask(List.of(keys.get(2), key("z", 0), keys.get(1)), into))
                .toString()).isEqualTo("101");
        assertThat(into.get(0).segment().asSlice(0, 300).mismatch(data(keys.get(2), 300).segment())).isEqualTo(-1);
        assertThat(into.get(2).segment().asSlice(0, 200).mismatch(data(keys.get(1), 200).segment())).isEqualTo(-1);
        assertFilled(into.get(1), (byte) 0);
    }

    @Test
    @SuppressWarnings("unchecked")
    void theStatusCountsWhatWasAdmittedPerCacheSaltAndSumsTheSaltsPastTheBound() throws Exception {
        QosL2Adapter q = track(QosL2Adapter.wrap(new MockL2Adapter()));
        List<ObjectKey> keys = List.of(key("a", 0), key("b", 0), key("a", 1));
        assertThat(awaitStore(q, q.submitStoreTask(keys, List.of(data(keys.get(0), 100), data(keys.get(1), 200),
                data(keys.get(2), 300))))).isEqualTo(new L2StoreResult(true, 600)); // split: a 400 bytes, b 200
        assertThat(awaitLookup(q, q.submitLookupAndLockTask(keys)).toString()).isEqualTo("111");
        assertThat(awaitLoad(q, q.submitLoadTask(List.of(keys.get(2), keys.get(1)), List.of(filled(300, (byte) 0),
                filled(300, (byte) 0)))).toString()).isEqualTo("11");
        q.submitUnlock(keys); // bypasses admission: not counted
        Map<String, Object> by = (Map<String, Object>) qos(q).get("admitted_by_cache_salt");
        assertThat(by).containsOnlyKeys("a", "b");
        assertThat(by.get("a")).isEqualTo(Map.of("tasks", 3L, "bytes", 700L, "lookup_keys", 2L));
        assertThat(by.get("b")).isEqualTo(Map.of("tasks", 3L, "bytes", 500L, "lookup_keys", 1L));
        assertThat(qos(q).get("admitted_other_salts")).isEqualTo(Map.of("tasks", 0L, "bytes", 0L, "lookup_keys", 0L));

        QosL2Adapter many = track(QosL2Adapter.wrap(new MockL2Adapter()));
        for (int i = 0; i <= QosL2Adapter.MAX_COUNTED_SALTS; i++) {
            assertThat(awaitLookup(many, many.submitLookupAndLockTask(List.of(key("s" + i, 0), key("s" + i, 1))))
                    .toString()).isEqualTo("00");
        }
        assertThat((Map<String, Object>) qos(many).get("admitted_by_cache_salt"))
                .hasSize(QosL2Adapter.MAX_COUNTED_SALTS).containsKey("s0").doesNotContainKey("s"
                        + QosL2Adapter.MAX_COUNTED_SALTS);
        assertThat(qos(many).get("admitted_other_salts")).isEqualTo(Map.of("tasks", 1L, "bytes", 0L, "lookup_keys", 2L));
    }

    @Test
    void buffersOnlyOneThreadMayUseAreRefusedAtSubmit() throws Exception {
        QosL2Adapter q = track(QosL2Adapter.wrap(new MockL2Adapter()));
        try (Arena confined = Arena.ofConfined()) {
            MemoryObj mine = MemoryObj.of(confined.allocate(100));
            assertThatThrownBy(() -> q.submitStoreTask(List.of(key("a", 0)), List.of(mine)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("confined")
                    .hasMessageContaining(key("a", 0).toString());
        }
        MemoryObj readOnly = MemoryObj.of(filled(100, (byte) 0).segment().asReadOnly());
        assertThatThrownBy(() -> q.submitLoadTask(List.of(key("a", 0)), List.of(readOnly)))
                .hasMessageContaining("read-only");
        assertThat(qos(q)).containsEntry("admitted_tasks", 0L);
    }

    // ---------------------------------------------------------------- resource groups

    @Test
    void wrappersSharingASchedulerShareItsInflightLimit() throws Exception {
        HeldL2Adapter first = new HeldL2Adapter();
        HeldL2Adapter second = new HeldL2Adapter();
        QosScheduler device = QosScheduler.builder().maxInflightTasks(1).build();
        QosL2Adapter q1 = track(QosL2Adapter.wrap(first, device));
        QosL2Adapter q2 = track(QosL2Adapter.wrap(second, device));
        long one = q1.submitLookupAndLockTask(List.of(key("a", 0)));
        first.awaitSubmitted(1);
        long two = q2.submitLookupAndLockTask(List.of(key("b", 0)));
        assertThat(second.submitted()).as("the group's one slot is taken by the other wrapper").isEmpty();
        first.releaseOnly();
        second.awaitSubmitted(1);
        second.releaseOnly();
        assertThat(awaitLookup(q1, one).size()).isEqualTo(1);
        assertThat(awaitLookup(q2, two).size()).isEqualTo(1);
        assertThat(q1.queryLookupAndLockResult(two)).as("results stay with their wrapper").isNull();
    }

    @Test
    void jsonAdaptersNamingOneResourceGroupShareItsSchedulerAndMustAgreeOnItsSettings() throws Exception {
        String json = "{\"type\":\"qos\",\"qos_resource_group\":\"nvme-test-group\",\"max_inflight_tasks\":2,"
                + "\"inner\":{\"type\":\"mock\"}}";
        QosL2Adapter a = (QosL2Adapter) L2Adapters.create(json);
        QosL2Adapter b = (QosL2Adapter) L2Adapters.create(json);
        try {
            assertThat(a.scheduler()).isSameAs(b.scheduler());
            assertThat(a.reportStatus()).containsEntry("qos_resource_group", "nvme-test-group");
            assertThatThrownBy(() -> L2Adapters.create(json.replace("\"max_inflight_tasks\":2", "\"max_inflight_tasks\":3")))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("nvme-test-group")
                    .hasMessageContaining("same QoS settings");
        } finally {
            a.close();
            b.close();
        }
        try (QosL2Adapter c = (QosL2Adapter) L2Adapters.create(json.replace("\"max_inflight_tasks\":2",
                "\"max_inflight_tasks\":3"))) {
            assertThat(c.scheduler()).as("the group ended with its last adapter").isNotSameAs(a.scheduler());
            assertThat(c.scheduler().maxInflightTasks()).isEqualTo(3);
        }
    }

    @Test
    void theJsonConfiguresTheSchedulerAndTheInnerAdapter() throws Exception {
        assertThat(L2Adapters.types()).contains("qos", "fault_inject");
        QosL2Adapter q = track((QosL2Adapter) L2Adapters.create("""
                {"type": "qos", "inner": {"type": "mock", "capacity_bytes": 65536},
                 "default_sched_weight": 120, "sched_weights": {"tenant-a": 300, "": 50},
                 "quantum_bytes": 4096, "max_inflight_tasks": 2, "max_inflight_bytes": 65536}"""));
        QosScheduler s = q.scheduler();
        assertThat(s.defaultWeight()).isEqualTo(120);
        assertThat(s.weights()).isEqualTo(Map.of("tenant-a", 300, "", 50));
        assertThat(s.quantumBytes()).isEqualTo(4096);
        assertThat(s.maxInflightTasks()).isEqualTo(2);
        assertThat(s.maxInflightBytes()).isEqualTo(65536);
        assertThat(q.inner()).isInstanceOf(MockL2Adapter.class);
        assertThat(q.usage().totalCapacityBytes()).isEqualTo(65536);
        assertThat(q.reportStatus()).containsEntry("type", "mock").containsKey("qos");
        assertThat(q.inner().reportStatus()).as("the identity is forwarded").containsEntry("backend", "qos");
        q.setBackendIdentity("nvme0", true);
        assertThat(q.inner().reportStatus()).containsEntry("backend", "nvme0").containsEntry("backend_shared", true);
        assertThat(q).hasToString("qos adapter over mock L2 adapter");

        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"qos\",\"inner\":{\"type\":\"mock\"},\"weight\":1}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown key 'weight'")
                .hasMessageContaining("sched_weights");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"qos\"}")).hasMessageContaining("\"inner\" must be");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"qos\",\"inner\":{\"type\":\"s3\"}}"))
                .hasMessageContaining("qos: inner adapter: unknown L2 adapter type 's3'");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"qos\",\"inner\":{\"type\":\"mock\"},"
                + "\"sched_weights\":{\"a\":0}}")).hasMessageContaining("'a' 0").hasMessageContaining("[1, 10000]");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"qos\",\"inner\":{\"type\":\"mock\"},"
                + "\"qos_resource_group\":\" \"}")).hasMessageContaining("non-empty string");
    }

    // ---------------------------------------------------------------- over the raw-block adapter

    @Test
    void overTheRawBlockAdapterMixedSaltTasksStoreLockAndLoadExactBytes() throws Exception {
        RawBlockL2Adapter raw = WrapperContractTest.rawBlock(dir);
        QosL2Adapter q = track(QosL2Adapter.wrap(raw, QosScheduler.builder().maxInflightTasks(1).quantumBytes(4096)
                .weight("a", 200).build()));
        List<ObjectKey> keys = List.of(key("a", 0), key("b", 0), key("a", 1));
        List<MemoryObj> payloads = List.of(data(keys.get(0), 5000), data(keys.get(1), 7000), data(keys.get(2), 100));
        L2StoreResult stored = awaitStore(q, q.submitStoreTask(keys, payloads));
        assertThat(stored.success()).isTrue();
        assertThat(q.usage().bytesByCacheSalt()).containsOnlyKeys("a", "b");

        List<ObjectKey> asked = List.of(keys.get(0), keys.get(1), key("c", 5), keys.get(2));
        assertThat(awaitLookup(q, q.submitLookupAndLockTask(asked)).toString()).isEqualTo("1101");
        for (ObjectKey k : keys) {
            assertThat(raw.core().lockCount(k.encoded())).isEqualTo(1);
        }
        List<MemoryObj> into = List.of(filled(8192, (byte) 0), filled(8192, (byte) 0), filled(8192, (byte) 0));
        assertThat(awaitLoad(q, q.submitLoadTask(keys, into)).toString()).isEqualTo("111");
        for (int i = 0; i < keys.size(); i++) {
            long n = payloads.get(i).size();
            assertThat(into.get(i).segment().asSlice(0, n).mismatch(payloads.get(i).segment())).isEqualTo(-1);
        }
        q.submitUnlock(keys);
        for (ObjectKey k : keys) {
            assertThat(raw.core().lockCount(k.encoded())).isZero();
        }
        await("nothing in flight", () -> qos(q).get("inflight_tasks").equals(0));
        assertThat(qos(q)).containsEntry("split_tasks", 3L).containsEntry("admitted_tasks", 7L);
    }
}
