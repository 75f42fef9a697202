package io.fdpblock.sim;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.FdpRecords;
import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.nvme.PlacementId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import java.io.IOException;

/** The model's parameters read from a real FDP namespace, and a trace of NVMe passthru writes. */
@Tag("device")
class SimDeviceTest {
    @TempDir
    Path dir;

    private static String device() {
        String d = System.getenv("FDPBLOCK_NVME_DEVICE");
        assumeTrue(d != null && !d.isBlank(), "FDPBLOCK_NVME_DEVICE is not set: no NVMe FDP device to read");
        return d;
    }

    @Test
    void theModelTakesTheNamespacesFdpConfigurationAndRuhStatus() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(device())) {
            ModelConfig c = ModelConfig.fromDevice(ns);
            FdpRecords.FdpConfiguration f = ns.activeFdpConfiguration();
            assertThat(c.logicalBytes()).isEqualTo(ns.sizeBytes());
            assertThat(c.unitBytes()).isEqualTo(ns.lbaSize());
            assertThat(c.reclaimUnitBytes()).isEqualTo(f.reclaimUnitBytes());
            assertThat(c.reclaimGroups()).isEqualTo(f.reclaimGroups());
            assertThat(c.rgif()).isEqualTo(f.rgif());
            assertThat(c.handleTypes()).hasSize(f.reclaimUnitHandles());
            for (int h = 0; h < f.reclaimUnitHandles(); h++) {
                assertThat(c.handleTypes().get(h).code()).isEqualTo(f.handleTypes().get(h));
            }
            int mask = (1 << f.placementHandleBits()) - 1;
            for (FdpRecords.RuhStatusEntry e : ns.ruhStatus().entries()) {
                assertThat(c.placementHandles().get(e.placementId() & mask)).isEqualTo(e.ruhId());
            }
            new FdpSsdModel(c); // and the model can be built from it
        }
    }

    @Test
    void aTraceOfPassthruWritesCarriesTheirPlacementIdsAndTheDevicesGeometry() throws Exception {
        Path trace = dir.resolve("ng.trace");
        BlockDevice raw = BlockDevices.open(Path.of(device()), DeviceOptions.of(IoEngine.URING_CMD).withBuffers(1 << 20, 0));
        List<Integer> ids = raw.placementIds();
        int pid = ids.stream().filter(i -> i != 0).findFirst().orElseThrow();
        long ru = raw.reclaimUnitBytes();
        try (Arena arena = Arena.ofShared(); TracingBlockDevice dev = TracingBlockDevice.wrap(raw, trace)) {
            MemorySegment buf = arena.allocate(64 << 10, 4096);
            IoBatch b = new IoBatch();
            b.write(0, buf, PlacementId.of(pid));
            b.write(64 << 10, buf, PlacementId.of(pid));
            dev.execute(b);
            deallocate(dev, 0, 64 << 10);
        }
        TraceFormat.Header h = TraceReader.readHeader(trace);
        assertThat(h.reclaimUnitBytes()).isEqualTo(ru);
        assertThat(h.placementIdCount()).isEqualTo(ids.size());
        assertThat(TracingBlockDeviceTest.read(trace)).containsExactly(
                new long[] {TraceFormat.OP_WRITE, 0, 64 << 10, pid},
                new long[] {TraceFormat.OP_WRITE, 64 << 10, 64 << 10, pid},
                new long[] {TraceFormat.OP_DEALLOCATE, 0, 64 << 10, 0});
    }

    /** Deallocates through a batch, as the store does, and waits. */
    private static void deallocate(BlockDevice dev, long offset, long length) throws IOException {
        IoBatch d = new IoBatch(1);
        d.deallocate(offset, length);
        dev.execute(d);
    }
}
