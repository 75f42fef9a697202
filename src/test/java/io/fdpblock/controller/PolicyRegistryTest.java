package io.fdpblock.controller;

import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.Map;

import static io.fdpblock.controller.Fixtures.keys;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PolicyRegistryTest {
    @Test
    void builtInPoliciesAreFoundByName() {
        assertThat(Policies.STORE.names()).contains("default", "skip_l1");
        assertThat(Policies.PREFETCH.names()).contains("default");
        assertThat(Policies.STORE.create("default")).isInstanceOf(DefaultStorePolicy.class);
        assertThat(Policies.STORE.create("skip_l1")).isInstanceOf(SkipL1StorePolicy.class);
        assertThat(Policies.PREFETCH.create("default")).isInstanceOf(DefaultPrefetchPolicy.class);
    }

    @Test
    void anUnknownNameFailsListingTheKnownOnes() {
        assertThatThrownBy(() -> Policies.STORE.create("tiered")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown store policy 'tiered'").hasMessageContaining("default")
                .hasMessageContaining("skip_l1");
        assertThatThrownBy(() -> Policies.PREFETCH.create("nearest")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown prefetch policy 'nearest'").hasMessageContaining("[default");
    }

    @Test
    void aNewPolicyRegistersWithoutEditingAnythingAndADuplicateNameFails() {
        Policies.STORE.register("registry_test_first_only", () -> new DefaultStorePolicy() {
            @Override
            public Map<Integer, List<ObjectKey>> selectStoreTargets(List<ObjectKey> keys, List<AdapterDescriptor> adapters) {
                return Map.of(0, keys);
            }
        });
        assertThat(Policies.STORE.names()).contains("registry_test_first_only");
        assertThat(Policies.STORE.create("registry_test_first_only")).isNotNull();
        assertThatThrownBy(() -> Policies.STORE.register("registry_test_first_only", DefaultStorePolicy::new))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("already registered");
        assertThatThrownBy(() -> Policies.STORE.register("default", DefaultStorePolicy::new))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("'default'");

        Policies.PREFETCH.register("registry_test_none", () -> (keys, lookups, adapters) -> Map.of());
        assertThat(Policies.PREFETCH.create("registry_test_none").selectLoadPlan(keys(0, 2), List.of(), List.of()))
                .isEmpty();
        assertThatThrownBy(() -> Policies.PREFETCH.register("default", DefaultPrefetchPolicy::new))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("already registered");
    }

    @Test
    void defaultStoreSendsEveryKeyEverywhereAndSkipL1DeletesAfterwards() throws Exception {
        try (L2Adapter a = new MockL2Adapter(); L2Adapter b = new MockL2Adapter()) {
            List<AdapterDescriptor> ds = AdapterDescriptor.of(List.of(a, b));
            List<ObjectKey> ks = keys(0, 3);
            for (String name : List.of("default", "skip_l1")) {
                StorePolicy p = Policies.STORE.create(name);
                assertThat(p.selectStoreTargets(ks, ds)).containsOnlyKeys(0, 1).containsEntry(0, ks).containsEntry(1, ks);
            }
            assertThat(Policies.STORE.create("default").selectL1Deletions(ks)).isEmpty();
            assertThat(Policies.STORE.create("skip_l1").selectL1Deletions(ks)).containsExactlyElementsOf(ks);
        }
    }

    @Test
    void defaultPrefetchTakesEachKeyFromTheLowestIndexThatHasItWithoutOverlap() throws Exception {
        try (L2Adapter a = new MockL2Adapter(); L2Adapter b = new MockL2Adapter(); L2Adapter c = new MockL2Adapter()) {
            List<AdapterDescriptor> ds = AdapterDescriptor.of(List.of(a, b, c));
            Map<Integer, Bitmap> plan = Policies.PREFETCH.create("default").selectLoadPlan(keys(0, 5),
                    List.of(Bitmap.parse("10100"), Bitmap.parse("11010"), Bitmap.parse("01111")), ds);
            assertThat(plan.get(0)).hasToString("10100");
            assertThat(plan.get(1)).hasToString("01010");
            assertThat(plan.get(2)).hasToString("00001");
        }
    }
}
