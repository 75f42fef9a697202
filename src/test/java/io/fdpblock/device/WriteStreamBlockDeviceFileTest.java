package io.fdpblock.device;

import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.nvme.WriteStreams;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The write-stream engine's own logic on a file, on the host (the kernel's side needs an FDP namespace:
 * {@link WriteStreamBlockDeviceNvmeDeviceTest} and {@link NoWriteStreamsNvmeDeviceTest} check it in the
 * emulated NVMe guest): which SQE byte a write gets, which writes are refused before any I/O, and what a
 * device without streams tells the store that asks for placement.
 */
@Tag("host")
class WriteStreamBlockDeviceFileTest {
    private static final long SIZE = 16L << 20;
    private static final String NO_STREAMS = "kernel 6.12.48+deb12-amd64 has no block-layer write streams: they need"
            + " Linux >= 6.16";

    @TempDir
    Path dir;

    /** Stream 1 -> id 10, 2 -> 20, 3 -> 30: not the identity, as a real RUH Status need not be. */
    private static WriteStreams streams() throws IOException {
        return WriteStreams.of(new WriteStreams.Probe(Path.of("/dev/nvme7n1"), "7.3.4", "nvme7n1", 3, 8L << 20, null),
                Path.of("/dev/ng7n1"), List.of(10, 20, 30));
    }

    private WriteStreamBlockDevice device(WriteStreams streams, String why, boolean start) throws IOException {
        NativeFile f = NativeFile.open(BlockDevices.createFile(dir.resolve("dev"), SIZE), true, false, true);
        WriteStreamBlockDevice d = new WriteStreamBlockDevice(f, DeviceOptions.of(IoEngine.IO_URING)
                .withBuffers(1 << 20, 2), streams, why);
        return start ? IoUringBlockDevice.start(d) : d;
    }

    @Test
    void aWriteWithAPlacementIdGetsItsStreamInByte44AndNothingElseDoes() throws Exception {
        try (WriteStreamBlockDevice dev = device(streams(), null, false);
                Ring ring = Ring.open(RingOptions.of(8)); Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            long w20 = dev.prepareReadWrite(ring, false, buf, 4096, -1, 20, 0);
            long w30fixed = dev.prepareReadWrite(ring, false, buf, 8192, 0, 30, 1);
            long none = dev.prepareReadWrite(ring, false, buf, 0, -1, PlacementId.NONE_VALUE, 2);
            long read = dev.prepareReadWrite(ring, true, buf, 0, -1, 20, 3);
            MemorySegment sqes = ring.sqeArea();
            assertThat(sqes.get(ValueLayout.JAVA_BYTE, w20 + 44)).as("id 20 = stream 2").isEqualTo((byte) 2);
            assertThat(sqes.get(ValueLayout.JAVA_BYTE, w30fixed + 44)).as("id 30 = stream 3 (WRITE_FIXED)")
                    .isEqualTo((byte) 3);
            assertThat(sqes.get(ValueLayout.JAVA_BYTE, w30fixed)).isEqualTo((byte) Ring.OP_WRITE_FIXED);
            assertThat(sqes.get(ValueLayout.JAVA_BYTE, none + 44)).as("no placement id: no stream").isZero();
            assertThat(sqes.get(ValueLayout.JAVA_BYTE, read + 44)).as("reads carry no stream").isZero();
            assertThat(sqes.get(ValueLayout.JAVA_LONG, w20 + 8)).as("offset").isEqualTo(4096);
        }
    }

    @Test
    void itReportsTheStreamsIdsInStreamOrderAndTheGranularityAsReclaimUnit() throws Exception {
        try (WriteStreamBlockDevice dev = device(streams(), null, false)) {
            assertThat(dev.engine()).isEqualTo(IoEngine.IO_URING);
            assertThat(dev.supportsPlacement()).isTrue();
            assertThat(dev.placementUnsupportedReason()).isNull();
            assertThat(dev.placementIds()).containsExactly(10, 20, 30);
            assertThat(dev.reclaimUnitBytes()).isEqualTo(8L << 20);
            assertThat(dev.toString()).contains("stream 1 -> placement id 10");
        }
    }

    @Test
    void aPlacementIdNoStreamReachesIsRefusedBeforeAnyIo() throws Exception {
        try (WriteStreamBlockDevice dev = device(streams(), null, true); Arena arena = Arena.ofShared()) {
            MemorySegment first = arena.allocate(4096, 4096);
            first.fill((byte) 1);
            IoBatch b = new IoBatch();
            b.write(0, first); // valid, but its batch must not go either
            b.write(4096, first, PlacementId.of(11));
            assertThatThrownBy(() -> dev.execute(b)).isInstanceOf(IOException.class)
                    .hasMessageContaining("placement id 11 is not reached by any of its write streams")
                    .hasMessageContaining("stream 1 -> placement id 10, stream 2 -> placement id 20")
                    .hasMessageContaining("offset 4096").hasMessageContaining("nothing of the batch was submitted");

            MemorySegment back = arena.allocate(8192, 4096);
            back.fill((byte) 9);
            IoBatch r = new IoBatch();
            r.read(0, back);
            dev.execute(r);
            assertThat(back.asSlice(0, 8192).mismatch(arena.allocate(8192))).as("the file still holds zeroes")
                    .isEqualTo(-1);
            // the check runs for execute too, which takes the caller's own ring (no thread hop), as on the plain engine
            assertThat(dev.ioStats().callerRunBatches()).as("the read ran on the caller's ring, the refused batch nowhere")
                    .isEqualTo(1);
        }
    }

    @Test
    void withoutStreamsItSaysWhyAndWritesPlacementIdsUnplacedAsOnAFile() throws Exception {
        try (WriteStreamBlockDevice dev = device(null, NO_STREAMS, true); Arena arena = Arena.ofShared()) {
            assertThat(dev.supportsPlacement()).isFalse();
            assertThat(dev.placementIds()).isEmpty();
            assertThat(dev.reclaimUnitBytes()).isZero();
            assertThat(dev.placementUnsupportedReason()).isEqualTo("io_engine io_uring on " + dev.path()
                    + " cannot carry placement ids: " + NO_STREAMS);
            MemorySegment buf = arena.allocate(4096, 4096);
            Patterns.fill(buf, 5);
            IoBatch b = new IoBatch();
            b.write(4096, buf, PlacementId.of(3));
            dev.execute(b);
            MemorySegment back = arena.allocate(4096, 4096);
            IoBatch r = new IoBatch();
            r.read(4096, back);
            dev.execute(r);
            assertThat(Patterns.mismatch(back, 5)).isEqualTo(-1);
        }
    }

    @Test
    void aStoreThatAsksForPlacementIsRefusedAtOpenWithTheReason() throws Exception {
        try (WriteStreamBlockDevice dev = device(null, NO_STREAMS, true)) {
            RawBlockCoreConfig config = RawBlockCoreConfig.builder(dev.path(), 1 << 20).capacityBytes(SIZE)
                    .metaTotalBytes(4 << 20).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).fdpEnabled(true)
                    .build();
            assertThatThrownBy(() -> RawBlockCore.open(config, dev)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("fdp_enabled = true").hasMessageContaining(NO_STREAMS);
            // nothing was written: the file is still all zeroes where the store would have put its metadata
            try (Arena arena = Arena.ofShared()) {
                MemorySegment back = arena.allocate(1 << 20, 4096);
                IoBatch r = new IoBatch();
                r.read(0, back);
                dev.execute(r);
                assertThat(back.mismatch(arena.allocate(1 << 20))).isEqualTo(-1);
            }
        }
    }
}
