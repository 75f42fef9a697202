package io.fdpblock.bench;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Our pipelined loop on a memory device (completions on the submitting thread, so CALLBACK falls back
 * to HANDOFF; BenchHostTest runs both modes on io_uring).
 */
@Tag("unit")
class PipelinedIoTest {
    private static BlockDevice memory() {
        return BlockDevices.memory(16L << 20, 4096, DeviceOptions.of(IoEngine.MEMORY).withBuffers(1 << 20, 8));
    }

    @ParameterizedTest
    @EnumSource(PipelinedIo.Mode.class)
    void countsExactlyTheOperationsAskedFor(PipelinedIo.Mode mode) throws IOException {
        try (BlockDevice dev = memory()) {
            PipelinedIo p = new PipelinedIo(dev, new PipelinedIo.Spec(true, false, 1 << 20, 8, 0, 16L << 20), 1, mode);
            Measurement m = p.runOps(40); // 2.5 passes over the 16 MiB, wrapping
            p.release();
            assertThat(p.mode()).isEqualTo(PipelinedIo.Mode.HANDOFF);
            assertThat(m.ops()).isEqualTo(40);
            assertThat(m.bytes()).isEqualTo(40L << 20);
            assertThat(dev.buffers().available()).isEqualTo(8);
        }
    }

    @ParameterizedTest
    @EnumSource(PipelinedIo.Mode.class)
    void runsForTheWindowAfterTheRamp(PipelinedIo.Mode mode) throws IOException {
        try (BlockDevice dev = memory()) {
            PipelinedIo p = new PipelinedIo(dev, new PipelinedIo.Spec(false, true, 4096, 4, 0, 16L << 20), 2, mode);
            long t0 = System.nanoTime();
            Measurement m = p.run(20_000_000L, 50_000_000L);
            long took = System.nanoTime() - t0;
            p.release();
            assertThat(m.ops()).isPositive();
            // the window is measured from the first completion after the ramp: within the run, which lasts at
            // least the ramp and the window
            assertThat(m.seconds()).isPositive().isLessThanOrEqualTo(took / 1e9);
            assertThat(took).isGreaterThanOrEqualTo(70_000_000L);
            assertThat(m.cpuSeconds()).isGreaterThanOrEqualTo(0);
        }
    }

    @ParameterizedTest
    @EnumSource(PipelinedIo.Mode.class)
    void aFailingOperationIsThrownNamingIt(PipelinedIo.Mode mode) {
        try (BlockDevice dev = memory()) {
            // a region larger than the device: random offsets soon fall past its end
            PipelinedIo p = new PipelinedIo(dev, new PipelinedIo.Spec(true, true, 4096, 4, 0, 1L << 30), 3, mode);
            assertThatThrownBy(() -> p.run(0, 2_000_000_000L)).isInstanceOf(IOException.class)
                    .hasMessageContaining("write(");
            p.release();
            assertThat(dev.buffers().available()).isEqualTo(8);
        }
    }

    /** Fills and checks by offset: the byte at i of the block at o is (o / 4096 + i) mod 251. */
    private static final PipelinedIo.Content BY_OFFSET = new PipelinedIo.Content() {
        @Override
        public void fill(MemorySegment buffer, long offset) {
            for (long i = 0; i < buffer.byteSize(); i++) {
                buffer.set(ValueLayout.JAVA_BYTE, i, (byte) ((offset / 4096 + i) % 251));
            }
        }

        @Override
        public boolean matches(MemorySegment buffer, long offset) {
            for (long i = 0; i < buffer.byteSize(); i++) {
                if (buffer.get(ValueLayout.JAVA_BYTE, i) != (byte) ((offset / 4096 + i) % 251)) {
                    return false;
                }
            }
            return true;
        }
    };

    @Test
    void overOffsetsVisitsEachOffsetOnceFillingWritesAndCheckingReads() throws IOException {
        try (BlockDevice dev = memory()) {
            long[] offsets = {5 * 4096, 0, 4095 * 4096, 17 * 4096, 3 * 4096, 9 * 4096, 1000 * 4096};
            PipelinedIo w = PipelinedIo.overOffsets(dev, true, 4096, 4, offsets, BY_OFFSET);
            assertThat(w.runOps(100).ops()).isEqualTo(offsets.length); // never more than the offsets given
            w.release();
            MemorySegment block = dev.buffers().acquire().asSlice(0, 4096);
            for (long o : offsets) { // what the device holds, read by a plain batch
                IoBatch b = new IoBatch(1);
                b.read(o, block);
                dev.execute(b);
                assertThat(BY_OFFSET.matches(block, o)).as("block at %d", o).isTrue();
            }
            block.fill((byte) 0); // one block overwritten behind the pipeline's back
            IoBatch b = new IoBatch(1);
            b.write(17 * 4096, block);
            dev.execute(b);
            dev.buffers().release(block);

            PipelinedIo r = PipelinedIo.overOffsets(dev, false, 4096, 4, offsets, BY_OFFSET);
            assertThat(r.runOps(offsets.length).ops()).isEqualTo(offsets.length);
            r.release();
            assertThat(r.mismatches()).isEqualTo(1);
            assertThat(r.mode()).isEqualTo(PipelinedIo.Mode.HANDOFF);
            assertThat(dev.buffers().available()).isEqualTo(8);
        }
    }
}
