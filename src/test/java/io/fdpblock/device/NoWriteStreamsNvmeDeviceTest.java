package io.fdpblock.device;

import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.devicetier.DeviceGuest;
import io.fdpblock.nvme.WriteStreams;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * Where the kernel has no write streams (the base guest's 6.12, whose kernel accepts the SQE byte and
 * ignores it), the io_uring engine on the FDP namespace's block device says so, and a store that asks for
 * placement is refused at open with that reason instead of writing unplaced. Skips where the kernel has
 * write streams (the streams guest runs the tests that use them).
 */
@Tag("device")
class NoWriteStreamsNvmeDeviceTest {

    @Test
    void aPlacementRequestOnABlockDeviceWithoutWriteStreamsFailsAtOpenSayingWhich() throws Exception {
        Path block = Path.of("/dev", DeviceGuest.blockName(DeviceGuest.device()));
        WriteStreams.Probe probe = WriteStreams.probe(block);
        assumeFalse(probe.available(), "the kernel offers write streams here (" + probe.describe() + ")");
        System.out.println("no write streams: " + probe.unavailable());
        if (!WriteStreams.kernelAtLeast(6, 16)) {
            assertThat(probe.unavailable()).contains("has no block-layer write streams").contains("Linux >= 6.16");
        }

        try (BlockDevice dev = BlockDevices.open(block, DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 20, 2))) {
            assertThat(dev.supportsPlacement()).isFalse();
            assertThat(dev.placementIds()).isEmpty();
            assertThat(dev.placementUnsupportedReason()).contains(probe.unavailable());
        }
        RawBlockCoreConfig config = DeviceGuest.storeConfig(block.toString()).ioEngine(IoEngine.IO_URING).build();
        assertThatThrownBy(() -> RawBlockCore.open(config).close()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fdp_enabled = true").hasMessageContaining(probe.unavailable());
    }
}
