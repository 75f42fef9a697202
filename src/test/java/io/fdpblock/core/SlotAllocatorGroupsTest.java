package io.fdpblock.core;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Slot groups of the allocator: a group freed whole goes back whole, to the next id that opens one. */
@Tag("unit")
class SlotAllocatorGroupsTest {
    private static List<Integer> allocate(SlotAllocator a, int pid, int n) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int s = a.allocate(pid);
            a.markUsed(s);
            out.add(s);
        }
        return out;
    }

    private static int[] ints(List<Integer> l) {
        return l.stream().mapToInt(Integer::intValue).toArray();
    }

    @Test
    void aGroupFreedWholeIsReopenedWholeForTheNextIdOnceTheHighWaterMarkIsUsedUp() {
        SlotAllocator a = new SlotAllocator(16, false, 4);
        assertThat(allocate(a, 1, 4)).containsExactly(0, 1, 2, 3);
        assertThat(allocate(a, 2, 4)).containsExactly(4, 5, 6, 7);
        assertThat(allocate(a, 1, 4)).containsExactly(8, 9, 10, 11);
        assertThat(allocate(a, 2, 4)).containsExactly(12, 13, 14, 15);
        assertThat(a.freeSlots()).isZero();
        assertThat(a.groupOpened(0)).isLessThan(a.groupOpened(1));

        a.freeAll(new int[] {4, 5, 6, 7}, 4); // group 1 freed whole
        assertThat(a.freeSlots()).isEqualTo(4);
        assertThat(a.groupUsed(1)).isZero();
        assertThat(a.state(4)).isEqualTo(SlotAllocator.HELD);
        // id 1 needs a new group: it gets group 1 whole, in order; nothing of it went to the free stack
        assertThat(allocate(a, 1, 4)).containsExactly(4, 5, 6, 7);
        assertThat(a.groupOwner(1)).isEqualTo(1);
        assertThat(a.groupOpened(1)).isGreaterThan(a.groupOpened(3));
        assertThat(a.allocate(2)).as("full").isEqualTo(-1);
    }

    @Test
    void aSlotFreedAloneGoesToTheFreeStackAndIsSkippedThereOnceItsGroupIsHeldWhole() {
        SlotAllocator a = new SlotAllocator(8, false, 4);
        allocate(a, 1, 4);
        allocate(a, 1, 4);
        a.free(1); // alone: group 0 still has 3 in use
        assertThat(a.state(1)).isEqualTo(SlotAllocator.FREE);
        a.freeAll(new int[] {0, 2, 3}, 3); // now group 0 is free whole
        assertThat(a.state(1)).isEqualTo(SlotAllocator.HELD);
        assertThat(a.freeSlots()).isEqualTo(4);
        // id 2 opens group 0; the stale free-stack entry of slot 1 is never handed out twice
        assertThat(allocate(a, 2, 4)).containsExactly(0, 1, 2, 3);
        assertThat(a.allocate(3)).isEqualTo(-1);
        assertThat(a.usedSlots()).isEqualTo(8);
    }

    @Test
    void theOpenGroupIsNeverHandedBackWholeAndTheLastFreeGroupIsBrokenUpForUngroupedSlots() {
        SlotAllocator a = new SlotAllocator(8, false, 4);
        allocate(a, 1, 2); // group 0 open for id 1, two fresh slots left
        a.freeAll(new int[] {0, 1}, 2);
        assertThat(a.isOpen(0)).isTrue();
        assertThat(a.state(2)).as("still held for id 1").isEqualTo(SlotAllocator.HELD);
        assertThat(allocate(a, 1, 2)).containsExactly(2, 3);
        allocate(a, 2, 4); // group 1
        a.freeAll(new int[] {4, 5, 6, 7}, 4);
        // id 1's group is exhausted, the device has no never-used room: id 1 opens group 1
        assertThat(a.allocate(1)).isEqualTo(4);
        // the rest of the device is slots 0, 1 (free alone) and 5..7 (id 1's open group): 5 free in all
        assertThat(a.freeSlots()).isEqualTo(5);
    }

    @Test
    void rebuildHoldsWholeFreeGroupsAndCountsTheUsedOnes() {
        SlotAllocator a = new SlotAllocator(12, false, 4);
        boolean[] used = new boolean[12];
        used[0] = true;
        used[9] = true;
        a.rebuild(12, used, null);
        assertThat(a.groupUsed(0)).isEqualTo(1);
        assertThat(a.groupUsed(1)).isZero();
        assertThat(a.state(5)).isEqualTo(SlotAllocator.HELD);
        assertThat(a.freeSlots()).isEqualTo(10);
        assertThat(allocate(a, 3, 4)).as("a recovered free group opened whole").containsExactly(4, 5, 6, 7);
    }

    @Test
    void staleFreeStackEntriesAreDroppedBeforeTheStackOutgrowsTheDevice() {
        SlotAllocator a = new SlotAllocator(8, false, 4);
        allocate(a, 1, 4);
        allocate(a, 2, 4);
        for (int round = 0; round < 100; round++) {
            // slot 0 freed alone (an entry on the stack), then the rest: group 0 is held whole, the entry stale
            a.free(0);
            a.freeAll(new int[] {1, 2, 3}, 3);
            assertThat(allocate(a, 1, 4)).containsExactly(0, 1, 2, 3);
            assertThat(a.sharedStackEntries()).isLessThanOrEqualTo(2 * 8 + 1);
        }
        assertThat(a.freeSlots()).isZero();
    }

    @Test
    void whileAGroupEvictedWholeIsComingBackAnIdWaitsForItInsteadOfSpillingOutOfItsGroups() {
        // 4 groups of 4 and 2 slots past the last whole group; id 1 has groups 0 and 2, id 2 groups 1 and 3
        SlotAllocator a = new SlotAllocator(18, false, 4);
        allocate(a, 1, 4);
        allocate(a, 2, 4);
        allocate(a, 1, 4);
        allocate(a, 2, 3); // group 3 open for id 2, one fresh slot left
        a.groupComing(0); // group 0 evicted whole, its slots not yet released
        assertThat(a.groupsComing()).isEqualTo(1);
        assertThat(a.allocate(1)).as("no slot past the groups, none of id 2's open group").isEqualTo(-1);
        assertThat(a.allocate(2)).as("an id with room in its own group still gets it").isEqualTo(15);
        a.freeAll(new int[] {0, 1, 2, 3}, 4);
        assertThat(a.groupsComing()).isZero();
        assertThat(allocate(a, 1, 4)).as("id 1 opens the group that came back, whole").containsExactly(0, 1, 2, 3);

        // nothing coming: a full id spills as before, to the slots past the last whole group
        assertThat(a.allocate(1)).isEqualTo(16);
    }
}
