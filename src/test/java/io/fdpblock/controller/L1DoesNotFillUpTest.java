package io.fdpblock.controller;

import io.fdpblock.controller.Fixtures.Kind;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.testing.DiskTempDirFactory;
import io.fdpblock.testing.LogCapture;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.fdpblock.controller.Fixtures.CHUNK;
import static io.fdpblock.controller.Fixtures.LAYOUT;
import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.assertNoL1Locks;
import static io.fdpblock.controller.Fixtures.assertNoL2Locks;
import static io.fdpblock.controller.Fixtures.holds;
import static io.fdpblock.controller.Fixtures.holdsPattern;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.payload;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * With the README's StorageManager and the default store policy (which keeps what it
 * stored in L1), L1 never reaches a state where every later store or prefetch does nothing.
 */
@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class L1DoesNotFillUpTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private static List<MemorySegment> payloads(Arena arena, List<ObjectKey> keys) {
        List<MemorySegment> out = new ArrayList<>();
        for (ObjectKey k : keys) {
            out.add(payload(arena, k));
        }
        return out;
    }

    /** Ten times L1's size goes through the default policy; every older prefix is still served. */
    @ParameterizedTest
    @EnumSource(Kind.class)
    void moreDataThanL1HoldsKeepsBeingStoredAndPrefetched(Kind kind) throws Exception {
        int l1Chunks = 8;
        int rounds = 40; // 2 keys a round: 80 keys, 10 x L1, within the raw_block fixture's 128 slots
        try (L2Adapter a = Fixtures.open(kind, dir, "fill");
             StorageManager sm = StorageManager.builder().l1(CHUNK, l1Chunks).adapter(a)
                     .storePolicy("default").prefetchPolicy("default").build();
             Arena arena = Arena.ofShared()) {
            List<ObjectKey> all = keys(0, 2 * rounds);
            int loadedFromL2 = 0;
            for (int r = 0; r < rounds; r++) {
                List<ObjectKey> ks = all.subList(2 * r, 2 * r + 2);
                assertThat(sm.store(ks, payloads(arena, ks))).as("store of round %d", r).containsOnly(true);
                assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
                if (r < 4) {
                    continue;
                }
                List<ObjectKey> old = all.subList(2 * (r - 4), 2 * (r - 4) + 2); // stored 4 rounds ago
                PrefetchHandle h = sm.submitPrefetchTask(old, LAYOUT);
                Integer found = sm.awaitPrefetchStatus(h, WAIT);
                assertThat(found).as("prefetch of round %d's keys in round %d", r - 4, r).isEqualTo(2);
                loadedFromL2 += 2 - h.l1PrefixHitCount();
                List<MemoryObj> objs = sm.readPrefetchedResults(old);
                for (int i = 0; i < old.size(); i++) {
                    assertThat(holdsPattern(objs.get(i).segment(), old.get(i))).as("bytes of %s", old.get(i)).isTrue();
                }
                sm.finishReadPrefetched(old);
            }
            assertThat(holds(a, all).cardinality()).as("keys that reached L2").isEqualTo(all.size());
            assertThat(loadedFromL2).as("prefetched keys that L1 had evicted and L2 served").isPositive();
            assertThat(sm.l1().evictions()).isPositive();
            assertThat(sm.status()).containsEntry("l1_refused_stores", 0L).containsEntry("l1_refused_prefetches", 0L)
                    .containsEntry("store_tasks_failed", 0L).containsEntry("store_tasks_completed", (long) rounds);
            assertNoL1Locks(sm.l1());
            assertNoL2Locks(List.of(a), all);
        }
    }

    /** A store nothing will retry does not pin its keys: a failing L2 cannot fill L1 for good. */
    @Test
    void keysOfAFailedStoreBecomeEvictableToo() throws Exception {
        try (L2Adapter tiny = new MockL2Adapter(2 * CHUNK, 0); // room for 2 keys: tasks of 4 fail
             StorageManager sm = StorageManager.builder().l1(CHUNK, 4).adapter(tiny).build();
             Arena arena = Arena.ofShared()) {
            for (int r = 0; r < 3; r++) {
                List<ObjectKey> ks = keys(4 * r, 4 * r + 4);
                assertThat(sm.store(ks, payloads(arena, ks))).as("store of round %d", r).containsOnly(true);
                assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
            }
            assertThat(sm.storeController().failedTasks()).isEqualTo(3);
            assertThat(sm.l1().evictions()).isEqualTo(8);
            assertThat(sm.l1().refusedStores()).isZero();
        }
    }

    /** While L1 holds only objects it may not evict, a store is refused, counted and logged once. */
    @Test
    void aStoreOrPrefetchL1CannotTakeIsCountedAndLoggedOnce() throws Exception {
        ObjectKey inL2 = Fixtures.key(9);
        try (L2Adapter mock = new MockL2Adapter(); Arena arena = Arena.ofShared()) {
            Fixtures.putDirect(mock, List.of(inL2));
            GatedAdapter gated = new GatedAdapter(mock);
            gated.stallStores = true; // stores never answer: their keys stay read-locked in L1
            try (StorageManager sm = StorageManager.builder().l1(CHUNK, 2).adapter(gated).build();
                 LogCapture log = new LogCapture("io.fdpblock.cache")) {
                List<ObjectKey> ks = keys(0, 2);
                assertThat(sm.store(ks, payloads(arena, ks))).containsOnly(true);
                List<ObjectKey> more = keys(2, 5);
                assertThat(sm.store(more, payloads(arena, more))).containsOnly(false);
                assertThat(sm.store(more.subList(0, 1), payloads(arena, more.subList(0, 1)))).containsOnly(false);
                assertThat(sm.status()).containsEntry("l1_refused_stores", 4L).containsEntry("l1_keys", 2);
                assertThat(log.messagesContaining("L1 is full")).hasSize(1);

                // A prefetch that L1 has no room for completes with fewer hits, counted the same way.
                PrefetchHandle h = sm.submitPrefetchTask(List.of(inL2), LAYOUT);
                assertThat(sm.awaitPrefetchStatus(h, WAIT)).isZero();
                assertThat(sm.status()).containsEntry("l1_refused_prefetches", 1L);
                assertThat(log.messagesContaining("L1 is full")).hasSize(1);
                assertNoL2Locks(List.of(mock), List.of(inL2));
            }
        }
    }
}
