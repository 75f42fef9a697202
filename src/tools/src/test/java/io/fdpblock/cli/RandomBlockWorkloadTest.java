package io.fdpblock.cli;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The engine check's workload (`fdpblock engines`) on the bench's shared pipeline, on a memory device. */
@Tag("unit")
class RandomBlockWorkloadTest {
    @Test
    void writesDistinctBlocksAndReadsEveryOneBackIntact() throws Exception {
        try (BlockDevice dev = BlockDevices.memory(64L << 20, 4096,
                DeviceOptions.of(IoEngine.MEMORY).withBuffers(1 << 20, 8))) {
            RandomBlockWorkload w = new RandomBlockWorkload(dev, 8, 7);
            RandomBlockWorkload.Result sparse = w.run(4096, 0, 32L << 20, 500); // few of 8192 blocks
            assertThat(sparse.blocks()).isEqualTo(500);
            assertThat(sparse.mismatches()).isZero();
            RandomBlockWorkload.Result dense = w.run(1 << 20, 32L << 20, 32L << 20, 32); // every 1 MiB block
            assertThat(dense.mismatches()).isZero();
            assertThat(dev.buffers().available()).isEqualTo(8);
        }
    }

    @Test
    void moreBlocksThanTheRegionHoldsAreRefusedNamingTheLimit() throws Exception {
        try (BlockDevice dev = BlockDevices.memory(16L << 20, 4096,
                DeviceOptions.of(IoEngine.MEMORY).withBuffers(1 << 20, 2))) {
            assertThatThrownBy(() -> new RandomBlockWorkload(dev, 2, 1).run(1 << 20, 0, 16L << 20, 17))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must be 0..16");
        }
    }
}
