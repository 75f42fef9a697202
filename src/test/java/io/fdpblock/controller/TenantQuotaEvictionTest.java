package io.fdpblock.controller;

import io.fdpblock.controller.Fixtures.Kind;
import io.fdpblock.controller.Fixtures.Recorder;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.fdpblock.controller.Fixtures.CHUNK;
import static io.fdpblock.controller.Fixtures.SLOT;
import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.held;
import static io.fdpblock.controller.Fixtures.lock;
import static io.fdpblock.controller.Fixtures.payload;
import static io.fdpblock.controller.Fixtures.putDirect;
import static io.fdpblock.controller.Fixtures.salted;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Per-tenant quotas (docs/contract.md section 7): the {@code tenant_quota} policy with {@link TenantQuotas},
 * above 90 % of a quota down to 50 % of it; a salt without a quota is evicted first and whole; quotas change
 * at run time. Rounds run on the test's thread.
 */
@Tag("host")
class TenantQuotaEvictionTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private final Closer closer = new Closer();

    @AfterEach
    void closeAll() throws Exception {
        closer.close();
    }

    /** What the adapter charges per key: the mock its payload, raw_block a whole slot. */
    private static long perKey(Kind kind) {
        return kind == Kind.MOCK ? CHUNK : SLOT;
    }

    private static List<ObjectKey> flat(Recorder rec) {
        return rec.deleted.stream().flatMap(List::stream).toList();
    }

    private static List<ObjectKey> concat(List<ObjectKey> a, List<ObjectKey> b) {
        List<ObjectKey> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void saltsWithoutAQuotaGoFirstAndWholeAndATenantOverItsQuotaLosesItsOwnOldestKeysOnly(Kind kind)
            throws Exception {
        L2Adapter a = closer.add(Fixtures.open(kind, dir, "a"));
        Recorder rec = new Recorder();
        a.registerListener(rec);
        long c = perKey(kind);
        TenantQuotas quotas = new TenantQuotas();
        quotas.set("alice", 10 * c);
        quotas.set("bob", 10 * c);
        EvictionController ec = closer.add(new EvictionController(a, Policies.EVICTION.create("tenant_quota"), 0.9,
                0.5, quotas, null));
        List<ObjectKey> alice = salted("alice", 0, 8);
        List<ObjectKey> bob = salted("bob", 100, 112);
        List<ObjectKey> eve = salted("eve", 200, 203);
        List<ObjectKey> none = salted("", 300, 302);
        putDirect(a, alice);
        putDirect(a, bob);
        putDirect(a, eve);
        putDirect(a, none);

        // the adapter is far from full (25 keys): only the quotas make this round
        EvictionRound r = ec.evictIfNeeded();
        assertThat(r.keys()).isEqualTo(2 + 3 + 7);
        assertThat(flat(rec)).as("no salt first, then eve (no quota), then bob's 7 oldest (12 -> 5 of 10)")
                .containsExactlyElementsOf(concat(concat(none, eve), bob.subList(0, 7)));
        assertThat(held(a, alice)).as("8 of 10: under 90 %").containsExactlyElementsOf(alice);
        assertThat(held(a, bob)).containsExactlyElementsOf(bob.subList(7, 12));
        assertThat(a.usage().bytesByCacheSalt()).isEqualTo(Map.of("alice", 8 * c, "bob", 5 * c));
        assertThat(ec.status()).containsEntry("evicted_unquotaed_keys", 5L).containsEntry("policy", "tenant_quota")
                .containsEntry("tracked_salts", 2);
        assertThat(ec.evictIfNeeded()).as("every tenant within its quota").isEqualTo(EvictionRound.NONE);

        // at run time: eve gets a quota, alice loses hers, bob's shrinks to 4 keys (5 >= 3.6: down to 2)
        quotas.set("eve", 10 * c);
        List<ObjectKey> eve2 = salted("eve", 210, 213);
        putDirect(a, eve2);
        quotas.remove("alice");
        quotas.set("bob", 4 * c);
        rec.deleted.clear();
        EvictionRound next = ec.evictIfNeeded();
        assertThat(flat(rec)).containsExactlyElementsOf(concat(alice, bob.subList(7, 10)));
        assertThat(next.keys()).isEqualTo(11);
        assertThat(held(a, eve2)).containsExactlyElementsOf(eve2);
        assertThat(held(a, bob)).containsExactlyElementsOf(bob.subList(10, 12));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aLockedOrRetainedKeyOfASaltWithoutAQuotaStays(Kind kind) throws Exception {
        // retention takes a share of a known capacity: a mock with one
        L2Adapter a = closer.add(kind == Kind.MOCK ? new MockL2Adapter(64L * CHUNK, 0) : Fixtures.open(kind, dir, "a"));
        List<ObjectKey> eve = salted("eve", 0, 4);
        RetentionLedger retention = new RetentionLedger(perKey(kind), System::nanoTime);
        assertThat(retention.retain(eve.subList(3, 4), List.of(perKey(kind)), Duration.ofHours(1))).isEqualTo(1);
        EvictionController ec = closer.add(new EvictionController(a, new TenantQuotaEvictionPolicy(), 0.9, 0.5,
                new TenantQuotas(), retention));
        putDirect(a, eve);
        lock(a, eve.subList(0, 1));

        EvictionRound r = ec.evictIfNeeded();
        assertThat(r).isEqualTo(new EvictionRound(2, 2 * perKey(kind), 0, 1, 0, 0, 1));
        assertThat(held(a, eve)).as("locked and retained: the retention promise outranks the allowlist")
                .containsExactly(eve.get(0), eve.get(3));
    }

    /** The manager's quotas: set at build and changed at run time through {@link StorageManager#tenantQuotas()}. */
    @Test
    void theManagersQuotasAreSetAtBuildAndChangedAtRunTime() throws Exception {
        MockL2Adapter m = closer.add(new MockL2Adapter());
        StorageManager sm = closer.add(StorageManager.builder().l1(CHUNK, 64).adapter(m)
                .eviction("tenant_quota", 0.9, 0.5).tenantQuota("alice", 10L * CHUNK).build());
        List<ObjectKey> alice = salted("alice", 0, 4);
        List<ObjectKey> bob = salted("bob", 100, 104);
        store(sm, alice);
        store(sm, bob);
        EvictionController ec = sm.evictionControllers().get(0);
        ec.evictIfNeeded(); // or its thread did the round already: the outcome is the same
        assertThat(held(m, alice)).containsExactlyElementsOf(alice);
        assertThat(held(m, bob)).as("bob has no quota").isEmpty();
        assertThat(sm.status()).containsEntry("tenant_quotas", Map.of("alice", 10L * CHUNK))
                .containsEntry("l2_bytes_by_cache_salt", Map.of("alice", 4L * CHUNK));

        sm.tenantQuotas().set("bob", 10L * CHUNK);
        sm.tenantQuotas().set("alice", 2L * CHUNK); // 4 >= 1.8: down to 1
        List<ObjectKey> bob2 = salted("bob", 110, 114);
        store(sm, bob2);
        ec.evictIfNeeded();
        assertThat(held(m, bob2)).containsExactlyElementsOf(bob2);
        assertThat(held(m, alice)).containsExactly(alice.get(3));
        assertThat(sm.tenantQuotas().snapshot()).containsExactly(Map.entry("alice", 2L * CHUNK),
                Map.entry("bob", 10L * CHUNK));
    }

    @Test
    void quotasAreCheckedAndThePolicyNeedsThem() throws Exception {
        TenantQuotas q = new TenantQuotas();
        assertThatThrownBy(() -> q.set("alice", -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1 bytes");
        assertThatThrownBy(() -> q.set("a@b", 1)).hasMessageContaining("'a@b'");
        assertThatThrownBy(() -> q.set(null, 1)).hasMessageContaining("null");
        q.set("", 5);
        assertThat(q.limitOf("")).isEqualTo(5);
        assertThat(q.limitOf("nobody")).isZero();
        assertThat(q.has("nobody")).isFalse();
        assertThat(q.remove("")).isTrue();
        assertThat(q.remove("")).isFalse();
        try (MockL2Adapter m = new MockL2Adapter()) {
            assertThatThrownBy(() -> new EvictionController(m, new TenantQuotaEvictionPolicy(), 0.9, 0.5))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("TenantQuotas");
            assertThatThrownBy(() -> new TenantQuotaEvictionPolicy().evict(1))
                    .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("per cache salt");
        }
    }

    private static void store(StorageManager sm, List<ObjectKey> keys) throws Exception {
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> data = new ArrayList<>();
            for (ObjectKey k : keys) {
                data.add(payload(arena, k));
            }
            sm.store(keys, data);
            assertThat(sm.awaitStoresIdle(WAIT)).isTrue();
        }
    }
}
