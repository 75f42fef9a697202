package io.fdpblock.bench;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.devicetier.DeviceGuest;
import io.fdpblock.nvme.PlacementId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bench's pattern on the namespace's block device and its generic device: a second of pipelined writes
 * at QD 32, close, an exclusive open again at once. close() returns once the kernel let go of the device, so
 * the reopen (O_EXCL on the block device, the flock on either) must not find it still held by the torn-down
 * ring. Needs write streams (the block device's placement ids); skips where the kernel has none.
 */
@Tag("device")
@Tag(DeviceGuest.WRITE_STREAMS_TAG)
class PipelinedIoReopenDeviceTest {
    /** Raw writes of this class go here and above: the range of WriteStreamBlockDeviceNvmeDeviceTest, which runs apart from it. */
    private static final long BASE = DeviceGuest.RAW_BASE + (128L << 20);

    @Test
    void theBlockDeviceAndItsGenericDeviceReopenExclusivelyRightAfterClose() throws Exception {
        Path block = Path.of("/dev", DeviceGuest.requireWriteStreams().blockName());
        Path generic = DeviceGuest.device();
        for (int i = 0; i < 3; i++) {
            for (Path node : List.of(block, block, generic)) {
                IoEngine engine = node.equals(block) ? IoEngine.IO_URING : IoEngine.URING_CMD;
                try (BlockDevice dev = BlockDevices.open(node, DeviceOptions.of(engine).withQueueDepth(64)
                        .withBuffers(1 << 20, 32))) {
                    PipelinedIo p = new PipelinedIo(dev, new PipelinedIo.Spec(true, true, 4096, 32, BASE, 8L << 20,
                            PlacementId.of(dev.placementIds().get(1))), i);
                    try {
                        assertThat(p.run(0, 1_000_000_000L).ops()).isPositive();
                    } finally {
                        p.release();
                    }
                }
            }
        }
    }
}
