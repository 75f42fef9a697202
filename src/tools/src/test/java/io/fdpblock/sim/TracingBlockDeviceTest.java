package io.fdpblock.sim;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.nvme.PlacementId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the tracing wrapper records, and what it leaves out, over a device that can be made to fail. */
@Tag("unit")
class TracingBlockDeviceTest {
    @TempDir
    Path dir;

    /** (op, offset, length, placement id) of every record. */
    static List<long[]> read(Path trace) throws IOException {
        List<long[]> out = new ArrayList<>();
        try (TraceReader r = TraceReader.open(trace)) {
            while (r.next()) {
                out.add(new long[] {r.op(), r.offset(), r.length(), r.placementId()});
            }
        }
        return out;
    }

    @Test
    void completedWritesFlushesAndDeallocationsAreRecordedAndNothingElse() throws Exception {
        Path f = dir.resolve("t.trace");
        FaultInjectingDevice fi = new FaultInjectingDevice(BlockDevices.memory(16L << 20, 4096))
                .emulatePlacement(List.of(0, 1, 2, 3), 1L << 20);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(8192, 4096);
            try (TracingBlockDevice dev = TracingBlockDevice.wrap(fi, f)) {
                assertThat(dev.supportsPlacement()).isTrue();
                assertThat(dev.placementIds()).containsExactly(0, 1, 2, 3);
                assertThat(dev.sizeBytes()).isEqualTo(16L << 20);

                IoBatch b = new IoBatch();
                b.write(0, buf, PlacementId.of(1));
                b.read(8192, buf); // reads are not recorded
                b.write(16384, buf.asSlice(0, 4096), PlacementId.of(2));
                dev.execute(b);

                fi.failNextCompletion(); // the last op of the next batch fails: it never reached the media
                b.reset();
                b.write(32768, buf, PlacementId.of(3));
                b.write(65536, buf, PlacementId.of(3));
                assertThatThrownBy(() -> dev.execute(b)).hasMessageContaining("injected completion failure");

                fi.failNextSubmit(); // refused at submit: nothing of it is recorded
                b.reset();
                b.write(131072, buf, PlacementId.of(1));
                assertThatThrownBy(() -> dev.execute(b)).hasMessageContaining("injected submission failure");

                deallocate(dev, 1L << 20, 2L << 20);
                dev.flush();
                assertThat(dev.trace().records()).isEqualTo(5);
            }
        }
        assertThat(read(f)).containsExactly(
                new long[] {TraceFormat.OP_WRITE, 0, 8192, 1},
                new long[] {TraceFormat.OP_WRITE, 16384, 4096, 2},
                new long[] {TraceFormat.OP_WRITE, 32768, 8192, 3},
                new long[] {TraceFormat.OP_DEALLOCATE, 1L << 20, 2L << 20, 0},
                new long[] {TraceFormat.OP_FLUSH, 0, 0, 0});
        TraceFormat.Header h = TraceReader.readHeader(f);
        assertThat(h.reclaimUnitBytes()).isEqualTo(1L << 20);
        assertThat(h.placementIdCount()).isEqualTo(4);
    }

    @Test
    void aDeallocationTheDeviceCannotDoIsNotRecordedAndADeviceWithoutFdpLeavesTheHeaderEmpty() throws Exception {
        Path f = dir.resolve("plain.trace");
        BlockDevice mem = BlockDevices.memory(1L << 20, 512);
        try (TracingBlockDevice dev = TracingBlockDevice.wrap(mem, f)) {
            assertThat(dev.supportsDeallocate()).isFalse();
            deallocate(dev, 0, 4096); // completes as a no-op: the data stays, so nothing is recorded
            assertThat(dev.toString()).contains(f.toString());
        }
        assertThat(read(f)).isEmpty();
        TraceFormat.Header h = TraceReader.readHeader(f);
        assertThat(h.deviceBytes()).isEqualTo(1L << 20);
        assertThat(h.lbaBytes()).isEqualTo(512);
        assertThat(h.reclaimUnitBytes()).isZero();
        assertThat(h.placementIdCount()).isZero();
    }

    @Test
    void closingTheWrapperClosesTheDeviceThenTheTrace() throws Exception {
        Path f = dir.resolve("c.trace");
        BlockDevice mem = BlockDevices.memory(1L << 20, 4096);
        TracingBlockDevice dev = TracingBlockDevice.wrap(mem, f);
        dev.close();
        assertThatThrownBy(() -> mem.submit(new IoBatch(), b -> { })).isInstanceOf(IOException.class);
        dev.trace().flush(); // after close: counted as lost, never written
        assertThat(dev.trace().lostRecords()).isEqualTo(1);
        assertThat(read(f)).isEmpty();
    }

    /** Deallocates through a batch, as the store does, and waits. */
    private static void deallocate(BlockDevice dev, long offset, long length) throws IOException {
        IoBatch d = new IoBatch(1);
        d.deallocate(offset, length);
        dev.execute(d);
    }
}
