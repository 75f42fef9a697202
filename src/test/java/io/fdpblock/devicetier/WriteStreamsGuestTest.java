package io.fdpblock.devicetier;

import io.fdpblock.nvme.FdpRecords;
import io.fdpblock.nvme.NvmeNamespace;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The write-stream guest is what it claims: its kernel offers the FDP namespace's placement handles as
 * block-layer write streams (Linux >= 6.16), one stream per handle of RUH Status, each of the reclaim
 * unit's size (the emulated device: 8 streams of 8388608 bytes). Skips where the kernel has no write
 * streams (the 6.12 guest); fails in the streams guest if they are missing.
 */
@Tag("device")
@Tag(DeviceGuest.WRITE_STREAMS_TAG)
class WriteStreamsGuestTest {

    @Test
    void theKernelOffersOneWriteStreamPerPlacementHandleOfTheReclaimUnitsSize() throws Exception {
        DeviceGuest.WriteStreams ws = DeviceGuest.requireWriteStreams();
        try (NvmeNamespace ns = NvmeNamespace.open(DeviceGuest.device().toString())) {
            FdpRecords.FdpConfiguration fdp = ns.activeFdpConfiguration();
            FdpRecords.RuhStatus ruhs = ns.ruhStatus();
            System.out.printf("write streams of %s on kernel %s (guest %s): %d streams, granularity %d bytes;"
                    + " FDP: %d handles in RUH Status, reclaim units of %d bytes%n", ws.blockName(), DeviceGuest.kernel(),
                    DeviceGuest.name(), ws.maxStreams(), ws.granularityBytes(), ruhs.entries().size(),
                    fdp.reclaimUnitBytes());
            assertThat(ws.maxStreams()).as("queue/max_write_streams of %s vs the placement handles of RUH Status",
                    ws.blockName()).isEqualTo(ruhs.entries().size());
            assertThat(ws.granularityBytes()).as("queue/write_stream_granularity of %s vs the reclaim unit size (RUNS)",
                    ws.blockName()).isEqualTo(fdp.reclaimUnitBytes());
        }
    }
}
