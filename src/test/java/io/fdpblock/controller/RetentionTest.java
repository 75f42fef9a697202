package io.fdpblock.controller;

import io.fdpblock.cache.KvLayout;
import io.fdpblock.controller.Fixtures.Recorder;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static io.fdpblock.controller.Fixtures.CHUNK;
import static io.fdpblock.controller.Fixtures.SLOT;
import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.held;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.payload;
import static io.fdpblock.controller.Fixtures.putDirect;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Retention (docs/contract.md section 7): a TTL shields keys from L2 eviction within a budget, and its
 * expiry never deletes anything. Time is a test clock; rounds are run on the test's thread.
 */
@Tag("host")
class RetentionTest {
    private static final Duration HOUR = Duration.ofHours(1);

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private final Closer closer = new Closer();
    private final AtomicLong now = new AtomicLong(5_000_000_000L);

    @AfterEach
    void closeAll() throws Exception {
        closer.close();
    }

    private RetentionLedger ledger(long budget) {
        return new RetentionLedger(budget, now::get);
    }

    private static List<Long> sizes(int n, long size) {
        return new ArrayList<>(Collections.nCopies(n, size));
    }

    // ------------------------------------------------------------------ the ledger

    @Test
    void deadlinesOnlyMoveLaterAndExtendingCostsNoBudget() {
        RetentionLedger r = ledger(1000);
        List<ObjectKey> k = keys(0, 1);
        assertThat(r.retain(k, sizes(1, 100), Duration.ofSeconds(10))).isEqualTo(1);
        now.addAndGet(Duration.ofSeconds(5).toNanos());
        assertThat(r.retain(k, sizes(1, 100), Duration.ofSeconds(1))).as("a shorter TTL").isEqualTo(1);
        assertThat(r.retainedBytes()).as("charged once").isEqualTo(100);
        now.addAndGet(Duration.ofSeconds(4).toNanos()); // 9 s after the first TTL of 10 s
        assertThat(r.isEvictable(k.get(0))).isFalse();
        now.addAndGet(Duration.ofSeconds(1).toNanos()); // its deadline: evictable before any sweep
        assertThat(r.isEvictable(k.get(0))).isTrue();
        assertThat(r.retainedKeys()).isEqualTo(1);
        assertThat(r.sweep()).isEqualTo(1);
        assertThat(r.retainedBytes()).isZero();
        assertThat(r.status()).containsEntry("stamps", 1L).containsEntry("extends", 1L)
                .containsEntry("expirations", 1L).containsEntry("budget_rejections", 0L);
        assertThat(r.isEvictable(keys(5, 6).get(0))).as("never retained").isTrue();
    }

    @Test
    void keysPastTheBudgetAreNotRetainedAndASweepFreesBudgetForNewOnes() {
        RetentionLedger r = ledger(300);
        List<ObjectKey> k = keys(0, 5);
        assertThat(r.retain(k, sizes(5, 100), HOUR)).isEqualTo(3);
        assertThat(r.retainedBytes()).isEqualTo(300);
        assertThat(r.isEvictable(k.get(2))).isFalse();
        assertThat(r.isEvictable(k.get(3))).isTrue();
        assertThat(r.retain(k.subList(0, 3), sizes(3, 100), HOUR)).as("extending within a full budget").isEqualTo(3);
        assertThat(r.status()).containsEntry("retained_keys", 3).containsEntry("max_retained_bytes", 300L)
                .containsEntry("budget_rejections", 2L);

        r.forget(k.subList(0, 1)); // deleted by someone: its bytes are free again
        assertThat(r.retain(k.subList(3, 5), sizes(2, 100), HOUR)).isEqualTo(1);
        now.addAndGet(HOUR.toNanos());
        assertThat(r.sweep()).isEqualTo(3);
        assertThat(r.retain(k.subList(3, 5), sizes(2, 100), HOUR)).isEqualTo(2);
        assertThat(r.retainedBytes()).isEqualTo(200);
    }

    @Test
    void whatTheAdapterChargesReplacesTheL1SizeAndMustFitTheBudgetToo() {
        RetentionLedger r = ledger(3 * SLOT);
        List<ObjectKey> k = keys(0, 4);
        assertThat(r.retain(k, sizes(4, CHUNK), HOUR)).isEqualTo(4); // 4 payloads fit 3 slots
        r.charge(k, sizes(4, SLOT)); // the adapter charges a whole slot each: only 3 fit
        assertThat(r.retainedBytes()).isEqualTo(3 * SLOT);
        assertThat(r.retainedKeys()).isEqualTo(3);
        // in the order heard: keys 0 and 1 fit their slots, key 2's did not fit beside key 3's payload
        assertThat(r.isEvictable(k.get(2))).isTrue();
        assertThat(r.isEvictable(k.get(3))).isFalse();
        assertThat(r.status()).containsEntry("budget_rejections", 1L);
    }

    @Test
    void aZeroBudgetRetainsNothingAndBadArgumentsAreRefused() {
        RetentionLedger r = ledger(0);
        assertThat(r.retain(keys(0, 2), sizes(2, 1), HOUR)).isZero();
        assertThat(r.retain(keys(0, 2), sizes(2, 1), Duration.ZERO)).isZero();
        assertThatThrownBy(() -> r.retain(keys(0, 1), sizes(1, 1), Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT-1S");
        assertThatThrownBy(() -> r.retain(keys(0, 2), sizes(1, 1), HOUR)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RetentionLedger(-1, now::get)).hasMessageContaining("-1");
    }

    // ------------------------------------------------------------------ eviction with retention, on raw_block

    /**
     * 128 slots, above 50 % evict down to 25 %, a budget of 25 % (32 slots). The 16 oldest keys are retained:
     * the round passes over them and takes the next 32. Their expiry deletes nothing; only the next round that
     * needs room takes them, oldest first.
     */
    @Test
    void aRoundPassesOverRetainedKeysAndTheirExpiryDeletesNothing() throws Exception {
        L2Adapter a = closer.add(Fixtures.open(Fixtures.Kind.RAW_BLOCK, dir, "a"));
        Recorder rec = new Recorder();
        a.registerListener(rec);
        RetentionLedger r = ledger(32 * SLOT);
        EvictionController ec = closer.add(new EvictionController(a, new LruEvictionPolicy(), 0.5, 0.25, null, r));
        List<ObjectKey> k = keys(0, 96);
        assertThat(r.retain(k.subList(0, 16), sizes(16, CHUNK), HOUR)).isEqualTo(16); // as a store retains: first
        putDirect(a, k.subList(0, 64));
        assertThat(r.retainedBytes()).as("charged as the adapter charges").isEqualTo(16 * SLOT);

        EvictionRound round = ec.evictIfNeeded();
        assertThat(round.keys()).isEqualTo(32);
        assertThat(round.skippedRetained()).isEqualTo(16);
        assertThat(held(a, k.subList(0, 64))).containsExactlyElementsOf(concat(k.subList(0, 16), k.subList(48, 64)));
        assertThat(rec.deleted.stream().flatMap(List::stream).toList()).containsExactlyElementsOf(k.subList(16, 48));

        now.addAndGet(HOUR.toNanos());
        assertThat(ec.evictIfNeeded()).as("25 %: nothing to do").isEqualTo(EvictionRound.NONE);
        assertThat(r.retainedKeys()).as("swept").isZero();
        assertThat(held(a, k.subList(0, 16))).as("expiry deletes nothing").containsExactlyElementsOf(k.subList(0, 16));
        assertThat(rec.deleted.stream().mapToInt(List::size).sum()).isEqualTo(32);

        putDirect(a, k.subList(64, 96)); // 50 % again: now the expired ones are the oldest
        EvictionRound next = ec.evictIfNeeded();
        assertThat(next.keys()).isEqualTo(32);
        assertThat(next.skippedRetained()).isZero();
        assertThat(held(a, k)).containsExactlyElementsOf(k.subList(64, 96));
        assertThat(ec.status()).containsEntry("skipped_retained", 16L);
        assertThat(ec.status().get("retention").toString()).contains("expirations=16");
    }

    /** 40 keys asked to be retained with room for 32: the 8 past the budget go like any key. */
    @Test
    void theBudgetBoundsWhatIsShieldedAndKeysPastItAreEvicted() throws Exception {
        L2Adapter a = closer.add(Fixtures.open(Fixtures.Kind.RAW_BLOCK, dir, "a"));
        RetentionLedger r = ledger(32 * SLOT);
        EvictionController ec = closer.add(new EvictionController(a, new LruEvictionPolicy(), 0.5, 0.25, null, r));
        List<ObjectKey> k = keys(0, 64);
        assertThat(r.retain(k.subList(0, 40), sizes(40, SLOT), HOUR)).isEqualTo(32);
        putDirect(a, k);
        assertThat(r.retainedBytes()).isLessThanOrEqualTo(r.budgetBytes());

        EvictionRound round = ec.evictIfNeeded(); // 64 -> 32 slots
        assertThat(round.keys()).isEqualTo(32);
        assertThat(round.skippedRetained()).isEqualTo(32);
        assertThat(held(a, k)).containsExactlyElementsOf(k.subList(0, 32));
    }

    @Test
    void retentionIsRefusedWhereEvictionCouldNotKeepItsPromise() throws Exception {
        L2Adapter a = closer.add(Fixtures.open(Fixtures.Kind.RAW_BLOCK, dir, "a"));
        long capacity = a.usage().totalCapacityBytes();
        assertThatThrownBy(() -> new EvictionController(a, new LruEvictionPolicy(), 0.5, 0.25, null,
                ledger(capacity / 2))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("below the high watermark 0.5");
        assertThatThrownBy(() -> new EvictionController(a, new ReclaimUnitEvictionPolicy(), 0.5, 0.25, null,
                ledger(SLOT))).hasMessageContaining("can keep retained keys");

        MockL2Adapter m = closer.add(new MockL2Adapter(64L * CHUNK, 0));
        MockL2Adapter m2 = closer.add(new MockL2Adapter(64L * CHUNK, 0));
        assertThatThrownBy(() -> StorageManager.builder().l1(CHUNK, 8).adapter(m).retention(0.2, HOUR).build())
                .hasMessageContaining("there is none");
        assertThatThrownBy(() -> StorageManager.builder().l1(CHUNK, 8).adapter(m).adapter(m2)
                .eviction("lru", 0.5, 0.25).retention(0.2, HOUR).build()).hasMessageContaining("has 2 adapters");
        assertThatThrownBy(() -> StorageManager.builder().l1(CHUNK, 8).adapter(m).eviction("lru", 0.5, 0.25)
                .retention(0.5, HOUR).build()).hasMessageContaining("below the eviction's high watermark 0.5");
        assertThatThrownBy(() -> StorageManager.builder().retention(1.0, HOUR)).hasMessageContaining("[0, 1)");
    }

    // ------------------------------------------------------------------ through the manager

    /**
     * A store with a TTL retains its keys, a store without does not; the round that brings L2 from 50 % to
     * 25 % takes only unretained keys.
     */
    @Test
    void aStoreWithATtlIsKeptByTheRoundThatTakesTheOthers() throws Exception {
        MockL2Adapter m = closer.add(new MockL2Adapter(32L * CHUNK, 0));
        StorageManager sm = closer.add(StorageManager.builder().l1(CHUNK, 64).adapter(m).eviction("lru", 0.5, 0.25)
                .retention(0.25, Duration.ZERO).build());
        List<ObjectKey> k = keys(0, 16);
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> data = new ArrayList<>();
            for (ObjectKey key : k) {
                data.add(payload(arena, key));
            }
            sm.store(k.subList(0, 4), data.subList(0, 4), HOUR);
            // The controller's thread also looks every 100 ms, and may do so while a store's keys are
            // counted in usage but not all heard by the policy yet: only a last store of one key, the
            // newest (never taken), brings L2 to 50 %.
            sm.store(k.subList(4, 15), data.subList(4, 15));
            assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
            sm.store(k.subList(15, 16), data.subList(15, 16));
            assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
        }
        assertThat(sm.retention().retainedKeys()).isEqualTo(4);
        EvictionController ec = sm.evictionControllers().get(0);
        ec.evictIfNeeded(); // or its thread did the round already: the outcome is the same
        List<ObjectKey> left = held(m, k);
        assertThat(left).hasSize(8).containsAll(k.subList(0, 4));
        assertThat(ec.status()).containsEntry("skipped_retained", 4L).containsEntry("evicted_keys", 8L);
        assertThat(sm.status()).containsKey("retention");
    }

    /** The zero-copy store retains what it finishes, charged its objects' sizes; a default TTL covers the rest. */
    @Test
    void aZeroCopyStoreIsRetainedAtItsObjectsSizeAndTheDefaultTtlCoversStoresThatNameNone() throws Exception {
        MockL2Adapter m = closer.add(new MockL2Adapter(32L * CHUNK, 0));
        StorageManager sm = closer.add(StorageManager.builder().l1(CHUNK, 64).adapter(m).eviction("lru", 0.5, 0.25)
                .retention(0.25, HOUR).build());
        List<ObjectKey> k = keys(0, 3);
        List<MemoryObj> objs = sm.reserveWrite(k.subList(0, 2), KvLayout.ofBytes(1000));
        assertThat(objs).doesNotContainNull();
        sm.finishWrite(k.subList(0, 2), Duration.ofMinutes(1));
        assertThat(sm.retention().retainedKeys()).isEqualTo(2);
        assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
        assertThat(sm.retention().retainedBytes()).as("as the mock charges: the object's bytes").isEqualTo(2000);
        try (Arena arena = Arena.ofShared()) {
            sm.store(k.subList(2, 3), List.of(payload(arena, k.get(2)))); // no TTL named: the default hour
        }
        assertThat(sm.retention().retainedKeys()).isEqualTo(3);
        assertThat(sm.retention().status()).containsEntry("stamps", 3L);
    }

    private static List<ObjectKey> concat(List<ObjectKey> a, List<ObjectKey> b) {
        List<ObjectKey> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }
}
