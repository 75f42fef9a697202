package io.fdpblock.controller;

import io.fdpblock.testing.DiskTempDirFactory;
import io.fdpblock.controller.Fixtures.Kind;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.adapter.RawBlockL2Adapter;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.fdpblock.controller.Fixtures.CHUNK;
import static io.fdpblock.controller.Fixtures.LAYOUT;
import static io.fdpblock.controller.Fixtures.META;
import static io.fdpblock.controller.Fixtures.SLOT;
import static io.fdpblock.controller.Fixtures.SLOTS;
import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.assertNoL1Locks;
import static io.fdpblock.controller.Fixtures.assertNoL2Locks;
import static io.fdpblock.controller.Fixtures.holds;
import static io.fdpblock.controller.Fixtures.holdsPattern;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.payload;
import static io.fdpblock.controller.Fixtures.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StorageManagerTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private static List<MemorySegment> payloads(Arena arena, List<ObjectKey> keys) {
        List<MemorySegment> out = new ArrayList<>();
        for (ObjectKey k : keys) {
            out.add(payload(arena, k));
        }
        return out;
    }

    private static void assertBytes(List<MemoryObj> objs, List<ObjectKey> keys) {
        assertThat(objs).hasSameSizeAs(keys);
        for (int i = 0; i < keys.size(); i++) {
            assertThat(holdsPattern(objs.get(i).segment(), keys.get(i))).as("bytes of %s", keys.get(i)).isTrue();
        }
    }

    private String rawBlockJson(String name) {
        return "{\"type\":\"raw_block\",\"device_path\":\"" + dir.resolve(name) + "\",\"slot_bytes\":" + SLOT
                + ",\"capacity_bytes\":" + (META + SLOTS * SLOT) + ",\"meta_total_bytes\":" + META
                + ",\"io_engine\":\"io_uring\",\"meta_enable_periodic\":false}";
    }

    @Test
    void storeEightChunksToRawBlockEvictThemFromL1PrefetchThemBackAndReadTheSameBytes() throws Exception {
        try (RawBlockL2Adapter raw = (RawBlockL2Adapter) Fixtures.open(Kind.RAW_BLOCK, dir, "e2e");
             StorageManager sm = StorageManager.builder().l1(CHUNK, 32).adapter(raw).build();
             Arena arena = Arena.ofShared()) {
            List<ObjectKey> ks = keys(0, 8);
            assertThat(sm.store(ks, payloads(arena, ks))).containsOnly(true);
            assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
            assertThat(raw.core().keyCount()).isEqualTo(8);
            assertNoL1Locks(sm.l1());

            assertThat(sm.l1().delete(ks)).hasSize(8); // evicted from L1
            assertThat(sm.l1().size()).isZero();

            PrefetchHandle h = sm.submitPrefetchTask(ks, LAYOUT);
            assertThat(h.requestId()).isNotNegative();
            assertThat(h.l1PrefixHitCount()).isZero();
            assertThat(h.totalRequestedKeys()).isEqualTo(8);
            assertThat(sm.awaitPrefetchStatus(h, WAIT)).isEqualTo(8);

            List<MemoryObj> objs = sm.readPrefetchedResults(ks);
            assertBytes(objs, ks);
            assertNoL2Locks(List.of(raw), ks);
            for (ObjectKey k : ks) {
                assertThat(sm.l1().readLockCount(k)).isEqualTo(1);
                assertThat(sm.l1().isTemporary(k)).isTrue();
            }
            sm.finishReadPrefetched(ks);
            assertNoL1Locks(sm.l1());
            assertThat(sm.storeController().completedTasks()).isEqualTo(1); // the prefetched copies were not stored again
        }
    }

    @Test
    void whenL1HasEveryKeyNoL2RequestIsMadeAndTheKeysAreReadLocked() throws Exception {
        try (StorageManager sm = StorageManager.create(CHUNK, 16, "{\"type\":\"mock\"}");
             Arena arena = Arena.ofShared()) {
            List<ObjectKey> ks = keys(0, 4);
            sm.store(ks, payloads(arena, ks));
            PrefetchHandle h = sm.submitPrefetchTask(ks, LAYOUT);
            assertThat(h.requestId()).isEqualTo(-1);
            assertThat(h.l1Only()).isTrue();
            assertThat(sm.queryPrefetchStatus(h)).isEqualTo(4);
            assertBytes(sm.readPrefetchedResults(ks), ks);
            sm.finishReadPrefetched(ks);
            assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
            assertNoL1Locks(sm.l1());
        }
    }

    @Test
    void l1PrefixHitsAndL2PrefixHitsAddUp() throws Exception {
        try (StorageManager sm = StorageManager.create(CHUNK, 16, rawBlockJson("json.img"), "{\"type\":\"mock\"}");
             Arena arena = Arena.ofShared()) {
            assertThat(sm.adapters()).hasSize(2);
            List<ObjectKey> ks = keys(0, 6);
            sm.store(ks.subList(0, 5), payloads(arena, ks.subList(0, 5))); // key 5 is nowhere
            assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
            for (L2Adapter a : sm.adapters()) {
                assertThat(holds(a, ks)).hasToString("111110");
            }
            sm.l1().delete(pick(ks, 2, 3, 4)); // L1 keeps 0, 1

            PrefetchHandle h = sm.submitPrefetchTask(ks, LAYOUT);
            assertThat(h.l1PrefixHitCount()).isEqualTo(2);
            assertThat(h.requestId()).isNotNegative();
            Integer found = sm.awaitPrefetchStatus(h, WAIT);
            assertThat(found).isEqualTo(5); // 2 from L1 + 3 from L2 (raw_block, the lower index)
            assertBytes(sm.readPrefetchedResults(ks.subList(0, found)), ks.subList(0, found));
            sm.finishReadPrefetched(ks.subList(0, found));
            assertNoL1Locks(sm.l1());
            assertNoL2Locks(sm.adapters(), ks);
        }
    }

    @Test
    void aPendingQueryAnswersNullAndTheResultComesOnce() throws Exception {
        try (StorageManager sm = StorageManager.create(CHUNK, 16, "{\"type\":\"mock\"}")) {
            List<ObjectKey> ks = keys(0, 2);
            PrefetchHandle h = sm.submitPrefetchTask(ks, LAYOUT);
            Integer first = null;
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (first == null) {
                assertThat(System.nanoTime()).isLessThan(deadline);
                first = sm.queryPrefetchStatus(h);
                Thread.onSpinWait();
            }
            assertThat(first).isZero(); // nothing anywhere
            assertThat(sm.queryPrefetchStatus(h)).isNull();
        }
    }

    @Test
    void unknownPoliciesAndAdapterTypesFailAtBuildListingTheKnownNames() {
        assertThatThrownBy(() -> StorageManager.builder().l1(CHUNK, 4).storePolicy("nope").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("skip_l1");
        assertThatThrownBy(() -> StorageManager.builder().l1(CHUNK, 4).prefetchPolicy("nope").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("default");
        assertThatThrownBy(() -> StorageManager.create(CHUNK, 4, "{\"type\":\"mock\"}", "{\"type\":\"nope\"}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("raw_block");
    }

    @Test
    void closeIsIdempotentAndLaterCallsFail() throws Exception {
        StorageManager sm = StorageManager.builder().l1(CHUNK, 4).adapterJson("{\"type\":\"mock\"}")
                .storePolicy("skip_l1").maxInFlight(2).build();
        L2Adapter owned = sm.adapters().get(0);
        sm.close();
        sm.close();
        assertThatThrownBy(owned::reportStatus).as("the adapter it opened is closed with it")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> sm.store(keys(0, 1), List.of(MemorySegment.ofArray(new byte[8]))))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> sm.submitPrefetchTask(keys(0, 1), LAYOUT)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void stoppedControllersLeaveTheAdaptersOpenAndTheHeldKeysAsTheyAre() throws Exception {
        try (StorageManager sm = StorageManager.builder().l1(CHUNK, 4).adapterJson("{\"type\":\"mock\"}")
                .storePolicy("skip_l1").eviction("lru", 0.5, 0.1).build()) {
            L2Adapter a = sm.adapters().get(0);
            sm.stopControllers();
            sm.stopControllers();
            EvictionController ec = sm.evictionControllers().get(0);
            assertThatThrownBy(ec::start).as("stopped for good: its thread was joined")
                    .isInstanceOf(IllegalStateException.class);
            assertThat(a.reportStatus()).as("the adapter stays open").containsKey("is_healthy");
            assertThat(ec.evictIfNeeded()).as("nothing held, nothing to evict").isEqualTo(EvictionRound.NONE);
        }
    }

    @Test
    void aFailedCloseOfAnOwnedAdapterIsThrownAfterEverythingIsClosed() throws Exception {
        StorageManager sm = StorageManager.create(CHUNK, 4, "{\"type\":\"failing_close\"}", "{\"type\":\"mock\"}");
        L2Adapter failing = sm.adapters().get(0);
        L2Adapter other = sm.adapters().get(1);
        assertThatThrownBy(sm::close).isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("final checkpoint failed");
        // closed, both: every call after close fails (docs/contract.md section 2), accessors included
        assertThatThrownBy(((GatedAdapter) failing).delegate::reportStatus).hasMessageContaining("closed");
        assertThatThrownBy(other::reportStatus).hasMessageContaining("closed");
        sm.close(); // once only
    }
}
