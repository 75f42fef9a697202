package io.fdpblock.sim;

import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import io.fdpblock.device.BlockDevice;
import java.io.IOException;

/**
 * From a real device to a WAF: a 64 MiB file on the io_uring engine, made to look like an FDP device
 * (placement ids 0..4, 1 MiB reclaim units, deallocation taken) and traced, gets a workload with
 * concurrent writers, a deallocation, sequential and random writes through several placement ids.
 * The trace must hold exactly what completed, and replaying it must give exactly what the model gives
 * for the same operations fed to it directly: the trace loses nothing the model needs.
 */
@Tag("host")
class TraceToWafTest {
    private static final long DEVICE = 64L << 20;
    private static final long RU = 1L << 20;
    private static final long REGION = DEVICE / 4;
    private static final int CHUNK = 256 << 10;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    /** An operation as the test issued it: 0 write, 1 deallocate; length; placement id. */
    private record Op(int kind, long offset, long length, int pid) {}

    @Test
    void aTraceFromAnIoUringDeviceReplaysToTheModelsExactFigures() throws Exception {
        Path file = BlockDevices.createFile(dir.resolve("dev.img"), DEVICE);
        Path trace = dir.resolve("dev.trace");
        List<Op> expected = new ArrayList<>(); // in an order the model result does not depend on (see phase A)
        try (Arena arena = Arena.ofShared();
                TracingBlockDevice dev = TracingBlockDevice.wrap(new FaultInjectingDevice(BlockDevices.open(file,
                        DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 20, 0))).emulatePlacement(
                        List.of(0, 1, 2, 3, 4), RU), trace)) {
            assertThat(dev.engine()).isEqualTo(IoEngine.IO_URING);
            MemorySegment buf = arena.allocate(RU, 4096);
            buf.fill((byte) 0x5A);

            // Phase A: four threads at once, each filling its quarter through its own id. Each quarter is
            // whole reclaim units of one stream, so the interleaving cannot change the model's result.
            CountDownLatch go = new CountDownLatch(1);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            List<Thread> writers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int id = t;
                writers.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                        IoBatch b = new IoBatch();
                        for (long at = 0; at < REGION; at += 4L * CHUNK) {
                            b.reset();
                            for (int i = 0; i < 4; i++) {
                                b.write(id * REGION + at + (long) i * CHUNK, buf.asSlice(0, CHUNK), PlacementId.of(id + 1));
                            }
                            dev.execute(b);
                        }
                    } catch (Throwable e) {
                        failed.compareAndSet(null, e);
                    }
                }));
            }
            for (int t = 0; t < 4; t++) {
                for (long at = 0; at < REGION; at += CHUNK) {
                    expected.add(new Op(0, t * REGION + at, CHUNK, t + 1));
                }
            }
            go.countDown();
            for (Thread w : writers) {
                w.join();
            }
            assertThat(failed.get()).isNull();

            // Phase B: everything deallocated: every unit of phase A is erased, whatever its order was.
            deallocate(dev, 0, DEVICE);
            expected.add(new Op(1, 0, DEVICE, 0));

            // Phase C, one thread: a sequential fill through id 1, then random 4 KiB writes, hot ones
            // (first quarter) through id 2 and cold ones through id 3, a deallocation now and then.
            IoBatch b = new IoBatch();
            for (long at = 0; at < DEVICE; at += RU) {
                b.reset();
                b.write(at, buf, PlacementId.of(1));
                dev.execute(b);
                expected.add(new Op(0, at, RU, 1));
            }
            SplittableRandom rnd = new SplittableRandom(13);
            for (int round = 0; round < 1500; round++) {
                b.reset();
                for (int i = 0; i < 8; i++) {
                    boolean hot = rnd.nextInt(10) < 8;
                    long block = hot ? rnd.nextLong(REGION / 4096) : REGION / 4096 + rnd.nextLong((DEVICE - REGION) / 4096);
                    b.write(block * 4096, buf.asSlice(0, 4096), PlacementId.of(hot ? 2 : 3));
                    expected.add(new Op(0, block * 4096, 4096, hot ? 2 : 3));
                }
                dev.execute(b);
                if (round % 250 == 249) {
                    long at = rnd.nextLong(DEVICE / RU) * RU;
                    deallocate(dev, at, RU);
                    expected.add(new Op(1, at, RU, 0));
                    dev.flush();
                }
            }
        }

        // The trace holds exactly the operations that completed (as a multiset: phase A interleaves).
        Map<Op, Integer> want = count(expected);
        Map<Op, Integer> got = new HashMap<>();
        int flushes = 0;
        try (TraceReader r = TraceReader.open(trace)) {
            while (r.next()) {
                if (r.op() == TraceFormat.OP_FLUSH) {
                    flushes++;
                } else {
                    got.merge(new Op(r.op() == TraceFormat.OP_WRITE ? 0 : 1, r.offset(), r.length(), r.placementId()), 1,
                            Integer::sum);
                }
            }
            assertThat(r.trailingBytes()).isZero();
        }
        assertThat(got).isEqualTo(want);
        assertThat(flushes).isEqualTo(6);

        // Replayed, it gives what the model gives for the same operations, to the byte.
        ModelConfig config = ModelConfig.emulated().withLogicalBytes(DEVICE).withReclaimUnitBytes(RU)
                .withHandles(5, HandleType.INITIALLY_ISOLATED);
        SimulationResult sim = Simulation.run(trace, config, false, 50);
        FdpSsdModel direct = new FdpSsdModel(config);
        for (Op op : expected) {
            if (op.kind() == 0) {
                direct.write(op.offset(), op.length(), op.pid());
            } else {
                direct.deallocate(op.offset(), op.length());
            }
        }
        assertThat(sim.records()).isEqualTo(expected.size() + flushes);
        assertThat(sim.traceWriteBytes()).isEqualTo(2 * DEVICE + 1500L * 8 * 4096);
        assertThat(sim.hostBytes()).isEqualTo(direct.hostBytes());
        assertThat(sim.mediaBytes()).isEqualTo(direct.mediaBytes());
        assertThat(sim.gcCopiedBytes()).isEqualTo(direct.gcUnits() * 4096);
        assertThat(sim.erases()).isEqualTo(direct.erases());
        for (int h = 0; h < 5; h++) {
            assertThat(sim.handles().get(h).hostBytes()).isEqualTo(direct.hostUnitsByHandle(h) * 4096);
            assertThat(sim.handles().get(h).gcCopiedBytes()).isEqualTo(direct.gcUnitsByHandle(h) * 4096);
        }
        // and the workload made garbage collection work: random writes over a full device
        assertThat(sim.gcCopiedBytes()).isPositive();
        assertThat(sim.waf()).isGreaterThan(1.05);
        assertThat(sim.samples().getLast().hostBytes()).isEqualTo(sim.hostBytes());
        System.out.printf("trace of %d records from io_uring -> WAF %.4f (%d bytes copied by GC)%n", sim.records(),
                sim.waf(), sim.gcCopiedBytes());
    }

    private static Map<Op, Integer> count(List<Op> ops) {
        Map<Op, Integer> m = new HashMap<>();
        for (Op o : ops) {
            m.merge(o, 1, Integer::sum);
        }
        return m;
    }

    /** Deallocates through a batch, as the store does, and waits. */
    private static void deallocate(BlockDevice dev, long offset, long length) throws IOException {
        IoBatch d = new IoBatch(1);
        d.deallocate(offset, length);
        dev.execute(d);
    }
}
