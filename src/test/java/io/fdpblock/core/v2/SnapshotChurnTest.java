package io.fdpblock.core.v2;

import io.fdpblock.core.v2.CompactIndex;
import io.fdpblock.core.v2.Snapshots;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.nvme.PlacementId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

import static org.assertj.core.api.Assertions.assertThat;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;

/**
 * A full fdpblock_v2 store whose index churns while a snapshot copies it (eviction on every put: a key
 * deleted, its slot given to a new key). The copy is fuzzy, so a key deleted after its step was copied
 * and the new key on its slot placed in a later step would both be written: more entries than slots,
 * which the next open refused as an implausible header (found by the fuzz work on a full store of 14,000
 * slots). The snapshot keeps one entry per slot; the log after its start replays the rest.
 */
@Tag("unit")
class SnapshotChurnTest {
    private static final long NEW_H1 = 0xF800000000000000L; // placed at 31/32 of the table: after the first step
    private static final long NEW_H2 = 7;

    @Test
    void aSlotReusedBetweenCopyStepsIsWrittenOnceAndTheSnapshotOpens() throws Exception {
        int slots = 14_000;
        long slotBytes = 8192;
        long meta = V2Layout.requiredMetaBytes(4096, slots, 4096);
        V2Layout layout = V2Layout.create(4096, 4096, slotBytes, meta + slots * slotBytes, meta, 4096, 42);
        CompactIndex index = new CompactIndex(layout.maxSlots());
        SplittableRandom random = new SplittableRandom(1);
        long victimH1 = 0;
        long victimH2 = 0;
        int victimSlot = -1;
        for (int s = 0; s < layout.maxSlots(); s++) {
            long h1 = random.nextLong();
            long h2 = random.nextLong();
            index.put(h1, h2, s, 100, 0, 0);
            if (victimSlot < 0 && Long.compareUnsigned(h1, Long.MAX_VALUE / 8) < 0) { // in the first step
                victimH1 = h1;
                victimH2 = h2;
                victimSlot = s;
            }
        }
        assertThat(victimSlot).isNotNegative();
        long vh1 = victimH1;
        long vh2 = victimH2;
        int vs = victimSlot;
        boolean[] churned = {false};
        try (BlockDevice device = BlockDevices.memory(meta, 4096)) {
            Snapshots.Header written = Snapshots.write(device, layout, 0, 1, 0, new Snapshots.Source() {
                @Override
                public Map<Integer, String> salts() {
                    return Map.of(0, "");
                }

                @Override
                public long nextSlot() {
                    return layout.maxSlots();
                }

                @Override
                public int copy(long from, long count, MemorySegment out) {
                    if (from > 0 && !churned[0]) { // between the first and the second step: evict and put
                        churned[0] = true;
                        assertThat(index.removeIfAt(vh1, vh2, vs)).isNotNegative();
                        index.put(NEW_H1, NEW_H2, vs, 100, 0, 0);
                    }
                    return index.copyLive(from, count, out, slot -> 0);
                }

                @Override
                public long capacity() {
                    return index.capacity();
                }

                @Override
                public void beginCopy() {
                    index.beginCopy();
                }

                @Override
                public void endCopy() {
                    index.endCopy();
                }
            }, new ReentrantLock(), PlacementId.NONE, new AtomicLong(), Snapshots.Pacer.NONE);

            assertThat(churned[0]).isTrue();
            assertThat(written.entries()).as("one entry per slot").isEqualTo(layout.maxSlots());
            assertThat(Snapshots.headers(device, layout)).as("the next open accepts it").containsExactly(written);

            Map<Integer, long[]> bySlot = new HashMap<>();
            List<Integer> repeated = new ArrayList<>();
            assertThat(Snapshots.load(device, layout, written, new Snapshots.Visitor() {
                @Override
                public void salt(int id, String salt) {}

                @Override
                public void entry(long h1, long h2, int slot, int size, int crc, int group, int saltId) {
                    if (bySlot.put(slot, new long[] {h1, h2}) != null) {
                        repeated.add(slot);
                    }
                }
            })).isTrue();
            assertThat(repeated).isEmpty();
            assertThat(bySlot).hasSize((int) layout.maxSlots());
            // The earlier copy (the evicted key) is what the snapshot holds; the log after its start has the
            // delete of it and the put of the new key, which replay applies.
            assertThat(bySlot.get(vs)).containsExactly(vh1, vh2);
        }
    }

    @Test
    void dropSlotsTakenKeepsTheFirstEntryOfEachSlotInOrder() {
        try (var arena = Arena.ofConfined()) {
            MemorySegment step = arena.allocate(5L * V2Layout.SNAPSHOT_ENTRY_BYTES, 8);
            int[] slots = {3, 64, 3, 129, 64};
            for (int i = 0; i < slots.length; i++) {
                step.set(ValueLayout.JAVA_LONG_UNALIGNED, (long) i * 32, 100 + i); // h1: the order
                step.set(ValueLayout.JAVA_INT_UNALIGNED, (long) i * 32 + 16, slots[i]);
            }
            MemorySegment taken = arena.allocate(3 * 8, 8);
            assertThat(Snapshots.dropSlotsTaken(step, 5, taken, 130)).isEqualTo(3);
            List<Long> kept = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                kept.add(step.get(ValueLayout.JAVA_LONG_UNALIGNED, (long) i * 32));
            }
            assertThat(kept).containsExactly(100L, 101L, 103L);
            // a later step sees the slots taken by this one
            step.set(ValueLayout.JAVA_INT_UNALIGNED, 16, 129);
            assertThat(Snapshots.dropSlotsTaken(step, 1, taken, 130)).isZero();
        }
    }
}
