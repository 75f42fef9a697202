package io.fdpblock.controller;

import io.fdpblock.controller.Fixtures.Recorder;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.ForwardingBlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.l2.ReclaimUnitGroups;
import io.fdpblock.linux.EventFd;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import static io.fdpblock.controller.Fixtures.SLOT;
import static io.fdpblock.controller.Fixtures.held;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.lock;
import static io.fdpblock.controller.Fixtures.pick;
import static io.fdpblock.controller.Fixtures.putDirect;
import static io.fdpblock.controller.Fixtures.salted;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The eviction controller and its two policies on the real raw-block adapter: per-key LRU on a file
 * through io_uring, and whole reclaim-unit groups on the same kind of file behind a device that acts as an
 * FDP namespace (4 placement ids, reclaim units of 4 slots), where every deallocation it is sent is seen.
 */
@Tag("host")
class EvictionControllerTest {
    private static final List<Integer> REPORTED = List.of(0, 1, 2, 3);
    private static final int GROUP = 4;
    /** The FDP store's data area: 4 groups of 4 slots. */
    private static final int FDP_SLOTS = 16;

    @TempDir
    Path dir;
    private final List<AutoCloseable> closers = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closers.size() - 1; i >= 0; i--) {
            closers.get(i).close();
        }
    }

    private <T extends AutoCloseable> T closing(T c) {
        closers.add(c);
        return c;
    }

    private L2Adapter plainAdapter() throws Exception {
        return closing(Fixtures.open(Fixtures.Kind.RAW_BLOCK, dir, "plain"));
    }

    private FaultInjectingDevice device;

    /** A raw-block adapter over a file (io_uring) that acts as an FDP namespace: data ids 1 and 2, meta id 3. */
    private RawBlockL2Adapter fdpAdapter() throws Exception {
        Path file = BlockDevices.createFile(dir.resolve("fdp.img"), Fixtures.META + FDP_SLOTS * SLOT);
        device = closing(new FaultInjectingDevice(BlockDevices.open(file, DeviceOptions.of(IoEngine.IO_URING)
                .withBuffers(1 << 20, 0))).emulatePlacement(REPORTED, GROUP * SLOT));
        return closing(RawBlockL2Adapter.open(RawBlockCoreConfig.builder(file.toString(), SLOT)
                .capacityBytes(Fixtures.META + FDP_SLOTS * SLOT).metaTotalBytes(Fixtures.META)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).fdpEnabled(true)
                .fdpDataPlacementPolicy(RawBlockCoreConfig.PlacementPolicy.CACHE_SALT_PREFIX)
                .metaCheckpointPlacementId(3).build(), new Signalling(device)));
    }

    /** Notified after every submit and every completion of {@link #fdpAdapter()}'s device. */
    private final Object deviceChanged = new Object();

    /**
     * Passes I/O on to {@link #device} and notifies {@link #deviceChanged} once a submit returns and once
     * a completion's callback has run (the store frees slots inside it).
     */
    private final class Signalling extends ForwardingBlockDevice {
        Signalling(BlockDevice inner) {
            super(inner);
        }

        @Override
        public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
            try {
                inner.submit(batch, b -> {
                    try {
                        callback.onComplete(b);
                    } finally {
                        deviceChanged();
                    }
                });
            } finally {
                deviceChanged();
            }
        }

        @Override
        public void flush() throws IOException {
            inner.flush();
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    private void deviceChanged() {
        synchronized (deviceChanged) {
            deviceChanged.notifyAll();
        }
    }

    /** Waits until {@code condition} holds, checked now and after each submit and completion of the device. */
    private void awaitDevice(BooleanSupplier condition, Supplier<String> what) throws InterruptedException {
        long deadline = System.nanoTime() + Fixtures.WAIT.toNanos(); // only so that nothing hangs
        synchronized (deviceChanged) {
            while (!condition.getAsBoolean()) {
                long left = deadline - System.nanoTime();
                assertThat(left).as(what.get()).isPositive();
                TimeUnit.NANOSECONDS.timedWait(deviceChanged, left);
            }
        }
    }

    /** Loads the keys (each must be held): the adapter tells its listeners they were accessed. */
    private static void load(L2Adapter a, List<ObjectKey> keys) throws Exception {
        try (Arena arena = Arena.ofShared()) {
            List<MemoryObj> into = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                into.add(MemoryObj.of(arena.allocate(Fixtures.CHUNK, 4096)));
            }
            long id = a.submitLoadTask(keys, into);
            Bitmap b;
            long deadline = System.nanoTime() + Fixtures.WAIT.toNanos();
            while ((b = a.queryLoadResult(id)) == null) {
                assertThat(System.nanoTime()).as("load did not complete").isLessThan(deadline);
                EventFd.await(a.loadEventFd(), Duration.ofMillis(200));
            }
            assertThat(b.cardinality()).as("loaded %s", keys).isEqualTo(keys.size());
        }
    }

    // ---------------------------------------------------------------- lru

    @Test
    void lruDeletesTheLeastRecentlyUsedKeysKeepsLockedOnesAndCountsTheHitsItEvicted() throws Exception {
        L2Adapter a = plainAdapter(); // 128 slots
        Recorder rec = new Recorder();
        a.registerListener(rec);
        // above 7 % of 128 slots, evict down to 5 % (6.4 slots); the second controller takes everything,
        // but only when asked (both hear every event from the start)
        EvictionController ec = closing(new EvictionController(a, Policies.EVICTION.create("lru"), 0.07, 0.05));
        EvictionController all = closing(new EvictionController(a, new LruEvictionPolicy(), 0.01, 0.0));
        List<ObjectKey> k = keys(0, 10);
        putDirect(a, k);
        load(a, pick(k, 0, 1)); // k0, k1 become the most recent; k2 is now the least recent
        load(a, pick(k, 0));
        lock(a, pick(k, 2));

        EvictionRound r = ec.evictIfNeeded(); // 10 slots -> 6.4: 4 keys must go, k2 is locked
        List<ObjectKey> gone = pick(k, 3, 4, 5, 6);
        assertThat(r).isEqualTo(new EvictionRound(4, 4 * SLOT, 0, 1, 0, 0));
        assertThat(held(a, k)).containsExactlyElementsOf(pick(k, 0, 1, 2, 7, 8, 9));
        assertThat(rec.deleted.stream().flatMap(List::stream).toList()).containsExactlyElementsOf(gone);
        assertThat(ec.evictIfNeeded()).as("below the high watermark now").isEqualTo(EvictionRound.NONE);

        a.submitUnlock(pick(k, 2));
        EvictionRound rest = all.evictIfNeeded();
        assertThat(rest.keys()).isEqualTo(6);
        assertThat(rest.hits()).as("the 3 loads k0 and k1 served").isEqualTo(3);
        assertThat(held(a, k)).isEmpty();
        assertThat(all.status()).containsEntry("evicted_keys", 6L).containsEntry("evicted_hits", 3L)
                .containsEntry("loaded_keys_heard", 3L).containsEntry("stored_keys_heard", 10L)
                .containsEntry("deleted_keys_heard", 10L).containsEntry("policy", "lru");
        assertThat(ec.status()).containsEntry("evicted_keys", 4L).containsEntry("skipped_locked", 1L)
                .containsEntry("evicted_hits", 0L).containsEntry("rounds", 1L);
    }

    @Test
    void theControllerThreadEvictsWhenAStoreCrossesTheHighWatermark() throws Exception {
        L2Adapter a = plainAdapter();
        // The thread also looks every 100 ms, and may do so between the commits of one store's keys:
        // the mark lies between 13 and 14 keys, so only the store's last commit crosses it.
        EvictionController ec = closing(new EvictionController(a, new LruEvictionPolicy(), 0.105, 0.05));
        ec.start();
        putDirect(a, keys(0, 12)); // 12 / 128 = 9.4 %: nothing to do
        putDirect(a, keys(12, 14)); // 13 / 128 = 10.2 %, then 14 / 128 = 10.9 %: the thread evicts down to 6.4 slots
        assertThat(ec.awaitStatus(s -> ((Number) s.get("evicted_keys")).longValue() > 0, Fixtures.WAIT))
                .as("the controller thread never evicted").isTrue();
        assertThat(ec.status()).containsEntry("evicted_keys", 8L).containsEntry("rounds", 1L);
        assertThat(held(a, keys(0, 14))).containsExactlyElementsOf(keys(8, 14));
        ec.stop();
        ec.stop();
        assertThatThrownBy(ec::start).isInstanceOf(IllegalStateException.class);
    }

    // ---------------------------------------------------------------- a round against a stop and late events

    /**
     * 10 keys on 128 slots, above 7 %, down to 5 % (6.4 slots): a round has 3.6 slots to free, so exactly
     * the 4 least recent keys go and 6 stay, whatever else happens during the round.
     */
    private static void assertTheRoundTookItsTargetOnly(L2Adapter a, List<ObjectKey> k) throws Exception {
        assertThat(held(a, k)).as("held after the round").containsExactlyElementsOf(k.subList(4, 10));
    }

    @Test
    void aStopThatLandsInTheMiddleOfARoundLeavesTheStoreAtTheLowWatermark() throws Exception {
        GatedAdapter g = new GatedAdapter(plainAdapter());
        EvictionController ec = closing(new EvictionController(g, new LruEvictionPolicy(), 0.07, 0.05));
        List<ObjectKey> k = keys(0, 10);
        putDirect(g, k);
        // the worst moment for a close (StorageManager.close, run's stopControllers) to stop the controller:
        // the round has chosen its keys and is deleting them
        g.beforeDelete = ec::stop;
        EvictionRound r = ec.evictIfNeeded();
        assertTheRoundTookItsTargetOnly(g, k);
        assertThat(r).isEqualTo(new EvictionRound(4, 4 * SLOT, 0, 0, 0, 0));
        g.beforeDelete = null;
        putDirect(g, keys(10, 14)); // above the high watermark again, but the controller is stopped
        assertThat(ec.evictIfNeeded()).as("a round after stop").isEqualTo(EvictionRound.NONE);
        assertThat(held(g, keys(0, 14))).hasSize(10);
    }

    @Test
    void aStopWaitsForTheRoundInProgressAndNoRoundRunsAfterIt() throws Exception {
        GatedAdapter g = new GatedAdapter(plainAdapter());
        EvictionController ec = closing(new EvictionController(g, new LruEvictionPolicy(), 0.07, 0.05));
        List<ObjectKey> k = keys(0, 10);
        putDirect(g, k);
        CountDownLatch inDelete = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        g.beforeDelete = () -> {
            inDelete.countDown();
            try {
                assertThat(proceed.await(Fixtures.WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        };
        AtomicReference<EvictionRound> round = new AtomicReference<>();
        Thread evictor = Thread.ofPlatform().start(() -> round.set(ec.evictIfNeeded()));
        assertThat(inDelete.await(Fixtures.WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        Thread stopper = Thread.ofPlatform().start(ec::stop);
        // the stop must wait for the round it found in progress: it ends up blocked, never done
        long deadline = System.nanoTime() + Fixtures.WAIT.toNanos();
        Thread.State s;
        while ((s = stopper.getState()) != Thread.State.BLOCKED && s != Thread.State.WAITING
                && s != Thread.State.TERMINATED) {
            assertThat(System.nanoTime()).as("the stopper never settled").isLessThan(deadline);
            Thread.onSpinWait();
        }
        assertThat(s).as("the stop returned while a round was deleting").isNotEqualTo(Thread.State.TERMINATED);
        proceed.countDown();
        evictor.join();
        stopper.join();
        assertTheRoundTookItsTargetOnly(g, k);
        assertThat(round.get()).isEqualTo(new EvictionRound(4, 4 * SLOT, 0, 0, 0, 0));
        g.beforeDelete = null;
        putDirect(g, keys(10, 14));
        assertThat(ec.evictIfNeeded()).as("a round after stop").isEqualTo(EvictionRound.NONE);
        assertThat(held(g, keys(0, 14))).hasSize(10);
    }

    @Test
    void aDeleteHeardLateNeverMakesARoundTakeMoreThanItsTarget() throws Exception {
        for (boolean says : List.of(true, false)) { // the adapter says per key what its delete did, or not
            GatedAdapter g = new GatedAdapter(closing(Fixtures.open(Fixtures.Kind.RAW_BLOCK, dir, "late-" + says)));
            g.hideDeleteResults = !says;
            EvictionController ec = closing(new EvictionController(g, new LruEvictionPolicy(), 0.07, 0.05));
            List<ObjectKey> k = keys(0, 10);
            putDirect(g, k);
            g.holdDeletes = true; // the policy hears of the deleted keys only after the round
            EvictionRound r = ec.evictIfNeeded();
            g.deliverDeletes();
            assertTheRoundTookItsTargetOnly(g, k);
            if (says) { // else the round cannot know which keys went, only that usage is down to its target
                assertThat(r).isEqualTo(new EvictionRound(4, 4 * SLOT, 0, 0, 0, 0));
            }
            assertThat(ec.evictIfNeeded()).as("at the low watermark").isEqualTo(EvictionRound.NONE);
            assertThat(ec.policy().status()).containsEntry("tracked_keys", 6);
        }
    }

    @Test
    void aKeyHeardOfThatTheAdapterDoesNotHoldIsForgottenNotTakenForLocked() throws Exception {
        L2Adapter a = plainAdapter();
        EvictionController ec = closing(new EvictionController(a, new LruEvictionPolicy(), 0.07, 0.05));
        // a store event that arrives after its key was deleted (or a replay that raced a delete)
        ec.policy().onKeysStored(List.of(Fixtures.key(99)), List.of(SLOT));
        List<ObjectKey> k = keys(0, 10);
        putDirect(a, k);
        EvictionRound r = ec.evictIfNeeded();
        assertTheRoundTookItsTargetOnly(a, k);
        assertThat(r).isEqualTo(new EvictionRound(4, 4 * SLOT, 0, 0, 0, 0));
        assertThat(ec.policy().status()).containsEntry("tracked_keys", 6);
    }

    // ---------------------------------------------------------------- reclaim_unit

    /**
     * rag (id 1) fills group 0, chat (id 2) group 1, rag group 2, chat starts group 3 (2 of 4 slots): 14 of
     * 16 slots, 87.5 %.
     */
    private record Layout(List<ObjectKey> rag0, List<ObjectKey> chat1, List<ObjectKey> rag2, List<ObjectKey> chat3) {}

    private static Layout fill(L2Adapter a) throws Exception {
        Layout l = new Layout(salted("rag:a", 0, 4), salted("chat:b", 10, 14), salted("rag:a", 4, 8),
                salted("chat:b", 14, 16));
        putDirect(a, l.rag0());
        putDirect(a, l.chat1());
        putDirect(a, l.rag2());
        putDirect(a, l.chat3());
        return l;
    }

    /** Freed slots return to the allocator when their deallocation completes. */
    private void awaitFreeSlots(RawBlockL2Adapter a, int n) throws InterruptedException {
        awaitDevice(() -> a.core().freeSlots() == n, () -> "free slots " + a.core().freeSlots() + ", expected " + n);
    }

    private void awaitDeallocations(int n) throws InterruptedException {
        awaitDevice(() -> device.deallocations().size() >= n,
                () -> "deallocations " + device.deallocations().size() + ", expected " + n);
    }

    private static long offset(int slot) {
        return Fixtures.META + slot * SLOT;
    }

    @Test
    void aWholeGroupGoesOldestFirstInOneDeallocationAndIsReusedWholeByTheNextIdThatNeedsOne() throws Exception {
        RawBlockL2Adapter a = fdpAdapter();
        Layout l = fill(a);
        assertThat(a.groupsOf(l.rag0())).containsOnly(0);
        assertThat(a.groupsOf(l.chat1())).containsOnly(1);
        assertThat(a.groupsOf(l.chat3())).containsOnly(3);
        assertThat(a.groups()).extracting(ReclaimUnitGroups.Group::open).containsExactly(false, false, false, true);
        Recorder rec = new Recorder();
        a.registerListener(rec);
        EvictionController ec = closing(new EvictionController(a,
                new ReclaimUnitEvictionPolicy(ReclaimUnitEvictionPolicy.Order.OLDEST), 0.85, 0.70));
        int deallocsBefore = device.deallocations().size();

        EvictionRound r = ec.evictIfNeeded(); // 14 -> 11.2 slots: one group of 4 is enough
        assertThat(r).isEqualTo(new EvictionRound(4, 4 * SLOT, 1, 0, 0, 0));
        assertThat(held(a, l.rag0())).isEmpty();
        assertThat(held(a, l.chat1())).hasSize(4);
        assertThat(rec.deleted).containsExactly(l.rag0());
        awaitDeallocations(deallocsBefore + 1); // sent once the delete records are durable (fdpblock_v2's log)
        assertThat(device.deallocations()).hasSize(deallocsBefore + 1);
        assertThat(device.deallocations().get(deallocsBefore)).as("group 0's whole range, one deallocation")
                .containsExactly(offset(0), GROUP * SLOT);
        assertThat(a.usage().totalBytesUsed()).isEqualTo(10 * SLOT);

        // rag's open group (2) is full and the device has no never-used slot: rag opens group 0 again, whole
        awaitFreeSlots(a, 6); // group 0 and chat's 2 unwritten slots
        device.clearSubmissions();
        List<ObjectKey> rag4 = salted("rag:a", 20, 24);
        putDirect(a, rag4);
        List<Long> slotOffsets = device.submissions().get(1).offsets(); // the headers, after the payloads
        assertThat(slotOffsets).containsExactly(offset(0), offset(1), offset(2), offset(3));
        assertThat(device.submissions().get(0).placementIds()).containsOnly(1);
        assertThat(a.groupsOf(rag4)).containsOnly(0);
    }

    @Test
    void aGroupWithALockedKeyIsSkippedUntilItIsUnlockedAndAnOpenGroupIsNeverEvicted() throws Exception {
        RawBlockL2Adapter a = fdpAdapter();
        Layout l = fill(a);
        lock(a, pick(l.rag0(), 2));
        EvictionController ec = closing(new EvictionController(a,
                new ReclaimUnitEvictionPolicy(ReclaimUnitEvictionPolicy.Order.OLDEST), 0.85, 0.70));
        assertThat(a.evictGroup(0).outcome()).isEqualTo(ReclaimUnitGroups.Outcome.LOCKED);
        assertThat(a.evictGroup(3).outcome()).isEqualTo(ReclaimUnitGroups.Outcome.OPEN);

        EvictionRound r = ec.evictIfNeeded();
        assertThat(r).isEqualTo(new EvictionRound(4, 4 * SLOT, 1, 1, 0, 0));
        assertThat(held(a, l.rag0())).as("the locked key's whole group stays").hasSize(4);
        assertThat(held(a, l.chat1())).as("the next oldest went instead").isEmpty();

        a.submitUnlock(pick(l.rag0(), 2));
        awaitFreeSlots(a, 6);
        putDirect(a, salted("chat:b", 30, 34)); // chat fills its group 3, then opens group 1 again: 14 slots
        assertThat(ec.evictIfNeeded()).isEqualTo(new EvictionRound(4, 4 * SLOT, 1, 0, 0, 0));
        assertThat(held(a, l.rag0())).isEmpty();
        assertThat(ec.status()).containsEntry("evicted_groups", 2L).containsEntry("skipped_locked", 1L)
                .containsEntry("order", "oldest");
    }

    @Test
    void secondChancePassesOverAGroupLoadedFromToTheTailAndCountsItsHitsWhenItGoes() throws Exception {
        RawBlockL2Adapter a = fdpAdapter();
        Layout l = fill(a);
        EvictionController ec = closing(new EvictionController(a,
                new ReclaimUnitEvictionPolicy(ReclaimUnitEvictionPolicy.Order.SECOND_CHANCE), 0.85, 0.70));
        load(a, pick(l.rag0(), 0, 1));
        load(a, pick(l.rag0(), 1));

        // queue 0, 1, 2 (3 is open): 0 was loaded from, so it goes to the tail and 1 goes
        assertThat(ec.evictIfNeeded().groups()).isEqualTo(1);
        assertThat(held(a, l.rag0())).as("loaded from: passed over").hasSize(4);
        assertThat(held(a, l.chat1())).isEmpty();

        awaitFreeSlots(a, 6);
        putDirect(a, salted("chat:b", 30, 34)); // chat fills group 3 and reopens group 1: 14 slots again
        assertThat(ec.evictIfNeeded().hits()).isZero();
        assertThat(held(a, l.rag2())).as("group 2 was ahead of group 0 in the queue now").isEmpty();
        assertThat(held(a, l.rag0())).hasSize(4);

        awaitFreeSlots(a, 6);
        putDirect(a, salted("chat:b", 40, 44)); // chat fills group 1 and opens group 2: 14 slots
        EvictionRound r = ec.evictIfNeeded();
        assertThat(r.groups()).isEqualTo(1);
        assertThat(r.hits()).as("the 3 loads group 0 served").isEqualTo(3);
        assertThat(held(a, l.rag0())).as("not loaded from since it was passed over: its turn").isEmpty();
        assertThat(ec.status()).containsEntry("evicted_hits", 3L).containsEntry("order", "second_chance");
    }

    @Test
    void leastHitTakesTheOlderGroupWithFewerLoads() throws Exception {
        RawBlockL2Adapter a = fdpAdapter();
        Layout l = fill(a);
        EvictionController ec = closing(new EvictionController(a,
                new ReclaimUnitEvictionPolicy(ReclaimUnitEvictionPolicy.Order.LEAST_HIT), 0.85, 0.70));
        load(a, pick(l.rag0(), 0));
        // candidates 0, 1, 2 (3 is open); the older half is 0 and 1: 1 has fewer loads
        assertThat(ec.evictIfNeeded().groups()).isEqualTo(1);
        assertThat(held(a, l.chat1())).isEmpty();
        assertThat(held(a, l.rag0())).hasSize(4);
        assertThat(held(a, l.rag2())).hasSize(4);
    }

    @Test
    void reclaimUnitEvictionRefusesAnAdapterWithoutGroupsSayingWhatItNeeds() throws Exception {
        L2Adapter plain = plainAdapter();
        assertThat(((ReclaimUnitGroups) plain).groupBytes()).isZero();
        assertThatThrownBy(() -> new EvictionController(plain, Policies.EVICTION.create("reclaim_unit"), 0.9, 0.8))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fdp_enabled")
                .hasMessageContaining("knows no reclaim unit size").hasMessageContaining("use eviction policy lru");
        try (MockL2Adapter mock = new MockL2Adapter()) {
            assertThatThrownBy(() -> new EvictionController(mock, new ReclaimUnitEvictionPolicy(), 0.9, 0.8))
                    .hasMessageContaining("does not group");
        }
        assertThatThrownBy(() -> new EvictionController(plain, new LruEvictionPolicy(), 0.8, 0.9))
                .hasMessageContaining("high 0.8").hasMessageContaining("low 0.9");
        assertThatThrownBy(() -> Policies.EVICTION.create("fifo")).hasMessageContaining("[lru, reclaim_unit, tenant_quota]");
        assertThatThrownBy(() -> StorageManager.builder().eviction("fifo", 0.9, 0.8))
                .hasMessageContaining("unknown eviction policy 'fifo'");
        assertThat(Policies.EVICTION.names()).contains("lru", "reclaim_unit");
    }

    @Test
    void storageManagerRunsOneControllerPerAdapterAndStopsItAtClose() throws Exception {
        RawBlockL2Adapter a = fdpAdapter();
        EvictionController ec;
        try (StorageManager sm = StorageManager.builder().l1(Fixtures.CHUNK, 16).adapter(a)
                .eviction("reclaim_unit", 0.85, 0.70).build()) {
            assertThat(sm.evictionControllers()).hasSize(1);
            ec = sm.evictionControllers().get(0);
            assertThat(ec.policy()).isInstanceOf(ReclaimUnitEvictionPolicy.class);
            // through L1 and the store controller (which takes every store completion of the adapter)
            try (Arena arena = Arena.ofShared()) {
                for (List<ObjectKey> ks : List.of(salted("rag:a", 0, 4), salted("chat:b", 10, 14),
                        salted("rag:a", 4, 8), salted("chat:b", 14, 16))) {
                    List<MemorySegment> data = new ArrayList<>();
                    for (ObjectKey k : ks) {
                        data.add(Fixtures.payload(arena, k));
                    }
                    assertThat(sm.store(ks, data)).containsOnly(true);
                    assertThat(sm.awaitStoresIdle(Fixtures.WAIT)).isTrue();
                }
            } // 14 of 16 slots: above 85 %, so the controller's thread evicts the oldest group it may
            assertThat(ec.awaitStatus(s -> ((Number) s.get("evicted_groups")).longValue() > 0, Fixtures.WAIT))
                    .as("no group evicted").isTrue();
        }
        assertThat(ec.status()).containsEntry("evicted_groups", 1L);
        assertThatThrownBy(ec::start).isInstanceOf(IllegalStateException.class);
    }
}
