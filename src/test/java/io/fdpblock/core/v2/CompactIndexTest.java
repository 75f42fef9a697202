package io.fdpblock.core.v2;

import io.fdpblock.core.KeyBatch;
import io.fdpblock.core.StoreIndex;
import io.fdpblock.core.StoreKey;
import io.fdpblock.core.v2.CompactIndex;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("unit")
class CompactIndexTest {
    private static String key(int i) {
        return "org%2Fmodel@0x00000007@" + Integer.toHexString(i * 2654435761L > 0 ? i : -i) + "@salt" + (i % 5);
    }

    @Test
    void behavesLikeAMapThroughChurnRemovalsAndRebuilds() {
        int slots = 10_000;
        try (CompactIndex idx = new CompactIndex(slots)) {
            Map<String, Integer> model = new HashMap<>();
            SplittableRandom r = new SplittableRandom(1);
            for (int step = 0; step < 200_000; step++) {
                String k = key(r.nextInt(20_000));
                if (r.nextInt(3) == 0 || model.size() >= slots) {
                    Integer had = model.remove(k);
                    assertThat(idx.remove(new StoreKey(k), false)).isEqualTo(had == null ? StoreIndex.MISSING : had);
                } else {
                    int slot = r.nextInt(slots);
                    model.put(k, slot);
                    idx.put(new StoreKey(k), slot, 100 + slot, slot * 7, true, null, 3);
                }
                if (step % 10_000 == 0) {
                    assertThat(idx.size()).isEqualTo(model.size());
                }
            }
            assertThat(idx.size()).isEqualTo(model.size());
            for (Map.Entry<String, Integer> e : model.entrySet()) {
                StoreIndex.Found f = idx.get(new StoreKey(e.getKey()));
                assertThat(f).isNotNull();
                assertThat(f.slot()).isEqualTo(e.getValue());
                assertThat(f.size()).isEqualTo(100 + e.getValue());
                assertThat(f.crc()).isEqualTo(e.getValue() * 7);
            }
            for (int i = 0; i < 20_000; i++) {
                assertThat(idx.contains(new StoreKey(key(i)))).isEqualTo(model.containsKey(key(i)));
            }
            assertThat(idx.memoryBytes() / slots).as("bytes per slot").isLessThanOrEqualTo(41);
        }
    }

    @Test
    void aPutByHashSaysWhichEntryItReplaced() {
        try (CompactIndex idx = new CompactIndex(100)) {
            assertThat(idx.put(1, 2, 7, 10, 0, 3)).as("new").isEqualTo(-1);
            assertThat(idx.put(1, 2, 9, 10, 0, 4)).as("replaced: slot 7, salt 3").isEqualTo(7L | 3L << 32);
            assertThat(idx.saltIdOf(1, 2)).isEqualTo(4);
            assertThat(idx.removeIfAt(1, 2, 9)).isEqualTo(9);
            assertThat(idx.put(1, 2, 11, 10, 0, 5)).as("new again, in the removed entry's place").isEqualTo(-1);
            assertThat(idx.size()).isEqualTo(1);
            assertThat(idx.put(1, 3, 12, 10, 0, 0)).as("same h1, other h2: another key").isEqualTo(-1);
            assertThat(idx.size()).isEqualTo(2);
        }
    }

    @Test
    void locksCountPerKeyAndALockedKeyIsKeptUnlessForced() {
        try (CompactIndex idx = new CompactIndex(100)) {
            idx.put(new StoreKey("a"), 1, 10, 0, true, null, 0);
            idx.put(new StoreKey("b"), 2, 10, 0, true, null, 0);
            assertThat(idx.lookup(KeyBatch.of(List.of("a", "x", "a")), true)).containsExactly(true, false, true);
            assertThat(idx.lockCount(new StoreKey("a"))).isEqualTo(2);
            assertThat(idx.lockedCount()).isEqualTo(1);
            assertThat(idx.remove(new StoreKey("a"), false)).isEqualTo(StoreIndex.LOCKED);
            idx.unlock(KeyBatch.of(List.of("a", "a", "a", "zzz"))); // underflow and unknown keys are no-ops
            assertThat(idx.lockCount(new StoreKey("a"))).isZero();
            assertThat(idx.lockedCount()).isZero();
            idx.lookup(KeyBatch.of(List.of("b")), true);
            assertThat(idx.remove(new StoreKey("b"), true)).isEqualTo(2);
            assertThat(idx.lockedCount()).isZero();
            assertThat(idx.contains(new StoreKey("b"))).isFalse();
        }
    }

    @Test
    void aTableFilledToItsDeviceRefusesMoreSayingWhy() {
        try (CompactIndex idx = new CompactIndex(50)) {
            int added = 0;
            assertThatThrownBy(() -> {
                for (int i = 0; i < 1000; i++) {
                    idx.put(new StoreKey(key(i)), i, 1, 0, true, null, 0);
                }
            }).isInstanceOf(IllegalStateException.class).hasMessageContaining("compact index full");
            assertThat(idx.size()).isGreaterThanOrEqualTo(50);
        }
    }

    /** Entries never move while they live: a copy in steps, with puts and removes between, sees each live one. */
    @Test
    void aCopyInStepsSeesEveryEntryThatLivedThroughout() {
        try (CompactIndex idx = new CompactIndex(5_000); Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < 3_000; i++) {
                idx.put(new StoreKey(key(i)), i, 1, 0, true, null, 0);
            }
            Set<Integer> survivors = new HashSet<>();
            for (int i = 0; i < 3_000; i += 2) {
                survivors.add(i);
            }
            MemorySegment out = arena.allocate(64L * CompactIndex.ENTRY_BYTES);
            Set<Integer> copied = new HashSet<>();
            SplittableRandom r = new SplittableRandom(2);
            idx.beginCopy();
            int next = 3_000;
            for (long pos = 0; pos < idx.capacity(); pos += 64) {
                int n = idx.copyLive(pos, 64, out, slot -> slot % 7);
                for (int j = 0; j < n; j++) {
                    int slot = out.get(ValueLayout.JAVA_INT_UNALIGNED, (long) j * CompactIndex.ENTRY_BYTES + 16);
                    copied.add(slot);
                    assertThat(out.get(ValueLayout.JAVA_SHORT_UNALIGNED, (long) j * CompactIndex.ENTRY_BYTES + 28))
                            .isEqualTo((short) (slot % 7));
                }
                // churn between steps: odd keys go, new keys come (and reuse removed places)
                for (int k = 0; k < 20; k++) {
                    int victim = 1 + 2 * r.nextInt(1_500);
                    idx.remove(new StoreKey(key(victim)), false);
                    idx.put(new StoreKey(key(next)), next, 1, 0, true, null, 0);
                    next++;
                }
            }
            idx.endCopy();
            List<Integer> missing = new ArrayList<>(survivors);
            missing.removeAll(copied);
            assertThat(missing).isEmpty();
        }
    }
}
