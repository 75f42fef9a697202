package io.fdpblock.sim;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/** The model's rules one at a time, on devices small enough to follow by hand. */
@Tag("unit")
class FdpSsdModelTest {
    private static final int B = 4096;

    /** 32 blocks of namespace, reclaim units of 4 blocks, 50 % over-provisioning: 12 units. */
    private static ModelConfig tiny(int handles, HandleType type, GcPolicy gc) {
        return new ModelConfig(32L * B, B, 4L * B, 1, Collections.nCopies(handles, type), 0,
                IntStream.range(0, handles).boxed().toList(), 0.5, gc);
    }

    private static void write(FdpSsdModel m, int block, int pid) {
        m.write((long) block * B, B, pid);
    }

    @Test
    void anOverwriteInvalidatesTheOldCopyAndAUnitWithNothingValidIsErasedWithoutCopies() {
        FdpSsdModel m = new FdpSsdModel(tiny(2, HandleType.INITIALLY_ISOLATED, GcPolicy.GREEDY));
        assertThat(m.reclaimUnitsPerGroup()).isEqualTo(12);
        for (int b = 0; b < 4; b++) {
            write(m, b, 1);
        }
        int first = m.reclaimUnitOf(0);
        assertThat(m.validIn(first)).isEqualTo(4);
        assertThat(m.hostHandleOf(first)).isEqualTo(1);

        write(m, 0, 1);
        assertThat(m.reclaimUnitOf(0)).isNotEqualTo(first);
        assertThat(m.validIn(first)).isEqualTo(3);
        assertThat(m.validUnits()).isEqualTo(4);

        int free = m.freeUnits(0);
        for (int b = 1; b < 4; b++) {
            write(m, b, 1);
        }
        assertThat(m.erases()).isEqualTo(1); // the first unit, now empty, is erased at once
        assertThat(m.freeUnits(0)).isEqualTo(free + 1); // the new copies fit the unit already open
        assertThat(m.gcUnits()).isZero();
        assertThat(m.hostUnits()).isEqualTo(8);
        assertThat(m.waf()).isEqualTo(1.0);
    }

    @Test
    void aDeallocationInvalidatesWholeMappingUnitsOnly() {
        FdpSsdModel m = new FdpSsdModel(tiny(2, HandleType.INITIALLY_ISOLATED, GcPolicy.GREEDY));
        for (int b = 0; b < 8; b++) {
            write(m, b, 1);
        }
        int first = m.reclaimUnitOf(0);
        m.deallocate(0, 4L * B);
        assertThat(m.reclaimUnitOf(0)).isEqualTo(-1);
        assertThat(m.validUnits()).isEqualTo(4);
        assertThat(m.deallocatedUnits()).isEqualTo(4);
        assertThat(m.erases()).isEqualTo(1);
        assertThat(m.validIn(first)).isZero();
        m.deallocate(0, 8L * B); // half of it held nothing any more: only what held data counts
        assertThat(m.deallocatedUnits()).isEqualTo(8);
        assertThat(m.validUnits()).isZero();

        // 8 KiB mapping units: a 4 KiB deallocation covers no unit whole, so the unit keeps its data
        FdpSsdModel coarse = new FdpSsdModel(tiny(2, HandleType.INITIALLY_ISOLATED, GcPolicy.GREEDY)
                .withUnitBytes(2 * B));
        coarse.write(0, 2L * B, 1);
        coarse.deallocate(B, B);
        assertThat(coarse.validUnits()).isEqualTo(1);
        coarse.deallocate(0, 2L * B);
        assertThat(coarse.validUnits()).isZero();
    }

    /**
     * Handles 1 and 2 each leave one valid block in a unit; filling the device makes garbage collection
     * move both. Initially isolated handles share the relocation stream: the two blocks end up in one
     * unit. Persistently isolated ones do not.
     */
    @Test
    void relocatedDataOfInitiallyIsolatedHandlesIsMixedAndOfPersistentlyIsolatedOnesIsNot() {
        for (HandleType type : HandleType.values()) {
            FdpSsdModel m = new FdpSsdModel(tiny(4, type, GcPolicy.GREEDY));
            for (int b = 0; b < 4; b++) {
                write(m, b, 1);
                write(m, 4 + b, 2);
            }
            for (int b = 0; b < 3; b++) { // units of handles 1 and 2 keep one valid block each: 3 and 7
                write(m, b, 1);
                write(m, 4 + b, 2);
            }
            for (int b = 8; b < 32; b++) {
                write(m, b, 3);
            }
            assertThat(m.gcUnits()).isZero();
            for (int b : new int[] {8, 12, 16, 20, 24, 28}) { // one block out of each of handle 3's units
                write(m, b, 3);
            }
            assertThat(m.gcUnitsByHandle(1)).as(type.label()).isEqualTo(1);
            assertThat(m.gcUnitsByHandle(2)).as(type.label()).isEqualTo(1);
            int ru3 = m.reclaimUnitOf(3L * B);
            int ru7 = m.reclaimUnitOf(7L * B);
            assertThat(m.hostHandleOf(ru3)).isEqualTo(-1); // a relocation unit, not a host one
            assertThat(m.hostHandleOf(ru7)).isEqualTo(-1);
            if (type == HandleType.INITIALLY_ISOLATED) {
                assertThat(ru3).isEqualTo(ru7);
            } else {
                assertThat(ru3).isNotEqualTo(ru7);
            }
            assertThat(m.validUnits()).isEqualTo(32);
            assertThat(m.mediaUnits()).isEqualTo(m.hostUnits() + m.gcUnits());
        }
    }

    @Test
    void aPlacementIdWithNoHandleIsCountedAndWrittenAsIdZero() {
        FdpSsdModel m = new FdpSsdModel(tiny(4, HandleType.INITIALLY_ISOLATED, GcPolicy.GREEDY));
        write(m, 0, 9);
        assertThat(m.invalidPlacementWrites()).isEqualTo(1);
        assertThat(m.hostUnitsByHandle(0)).isEqualTo(1);
        assertThat(m.hostHandleOf(m.reclaimUnitOf(0))).isEqualTo(0);
        write(m, 1, 3);
        assertThat(m.invalidPlacementWrites()).isEqualTo(1);
        assertThat(m.hostUnitsByHandle(3)).isEqualTo(1);
    }

    @Test
    void theTopBitsOfAPlacementIdChooseTheReclaimGroupAndAFullGroupSaysSo() {
        ModelConfig c = tiny(2, HandleType.INITIALLY_ISOLATED, GcPolicy.GREEDY).withReclaimGroups(2);
        assertThat(c.rgif()).isEqualTo(1);
        FdpSsdModel m = new FdpSsdModel(c);
        assertThat(m.reclaimUnitsPerGroup()).isEqualTo(6); // 48 blocks of media, 2 groups of 6 units of 4
        int group1 = 1 << 15;
        write(m, 0, group1 | 1);
        write(m, 1, 1);
        assertThat(m.groupOf(m.reclaimUnitOf(0))).isEqualTo(1);
        assertThat(m.groupOf(m.reclaimUnitOf(B))).isEqualTo(0);
        write(m, 2, 2 << 15 | 1); // group 2 does not exist
        assertThat(m.invalidPlacementWrites()).isEqualTo(1);
        assertThat(m.groupOf(m.reclaimUnitOf(2L * B))).isEqualTo(0);

        // group 1 has 24 blocks of media: 28 distinct blocks cannot fit, whatever GC does
        assertThatThrownBy(() -> {
            for (int b = 0; b < 28; b++) {
                write(m, b, group1 | 1);
            }
        }).isInstanceOf(IllegalStateException.class).hasMessageContaining("reclaim group 1")
                .hasMessageContaining("raise the over-provisioning");
    }

    @Test
    void withoutOverProvisioningAFullDeviceCannotBeCollected() {
        ModelConfig c = tiny(1, HandleType.INITIALLY_ISOLATED, GcPolicy.GREEDY).withOverProvisioning(0);
        FdpSsdModel m = new FdpSsdModel(c);
        assertThatThrownBy(() -> {
            for (int b = 0; b < 32; b++) {
                write(m, b, 0);
            }
        }).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("every full reclaim unit holds only valid data")
                .hasMessageContaining("over-provisioning 0.0");
    }

    @Test
    void preconditionFillsTheNamespaceAndCountsNothing() {
        FdpSsdModel m = new FdpSsdModel(tiny(2, HandleType.INITIALLY_ISOLATED, GcPolicy.FIFO).withReclaimGroups(2));
        m.precondition();
        assertThat(m.validUnits()).isEqualTo(32);
        assertThat(m.hostUnits()).isZero();
        assertThat(m.mediaUnits()).isZero();
        assertThat(m.groupOf(m.reclaimUnitOf(0))).isEqualTo(0);
        assertThat(m.groupOf(m.reclaimUnitOf(31L * B))).isEqualTo(1);
    }

    /** Garbage collection copies are charged to the handle that wrote the data, hot or cold. */
    @Test
    void gcCopiesAreChargedToTheHandleThatWroteTheData() {
        FdpSsdModel m = new FdpSsdModel(tiny(3, HandleType.INITIALLY_ISOLATED, GcPolicy.GREEDY));
        for (int b = 0; b < 32; b++) {
            write(m, b, b < 8 ? 1 : 2);
        }
        SplittableRandom r = new SplittableRandom(3);
        for (int i = 0; i < 2000; i++) {
            write(m, r.nextInt(8), 1); // handle 1 rewrites its 8 blocks; handle 2's 24 never change
        }
        assertThat(m.gcUnits()).isPositive();
        assertThat(m.gcUnitsByHandle(1) + m.gcUnitsByHandle(2)).isEqualTo(m.gcUnits());
        assertThat(m.hostUnitsByHandle(1)).isEqualTo(2008);
        assertThat(m.hostUnitsByHandle(2)).isEqualTo(24);
    }

    @Test
    void parametersThatCannotWorkAreRefusedWithTheValueAndTheLimit() {
        ModelConfig c = ModelConfig.emulated();
        assertThatThrownBy(() -> c.withReclaimUnitBytes(6000)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("6000").hasMessageContaining("4096");
        assertThatThrownBy(() -> c.withOverProvisioning(-0.1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-0.1");
        assertThatThrownBy(() -> new FdpSsdModel(c.withReclaimUnitBytes(256L << 20)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("5 reclaim units")
                .hasMessageContaining("need at least 11");
        assertThatThrownBy(() -> new FdpSsdModel(c.withLogicalBytes(1L << 40)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("use a mapping unit of 16384 bytes");
        assertThat(c.withLogicalBytes(1L << 40).withUnitFittingMaps().unitBytes()).isEqualTo(16384);
        assertThatThrownBy(() -> HandleType.parse("sometimes")).hasMessageContaining("initially");
        assertThatThrownBy(() -> GcPolicy.parse("random")).hasMessageContaining("cost-benefit");
    }
}
