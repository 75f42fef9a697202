package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Interrupts never abandon I/O, close never interrupts it, waits with a bound, and
 * never acknowledges a put it then loses.
 */
@Tag("host")
class CloseSemanticsTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    @Test
    void anInterruptedCallerStillWaitsForItsIoAndKeepsItsInterruptStatus() throws Exception {
        Path file = BlockDevices.createFile(dir.resolve("dev.img"), 1 << 20);
        try (BlockDevice dev = BlockDevices.open(file, DeviceOptions.of(IoEngine.IO_URING).withBuffers(4096, 2));
             Arena arena = Arena.ofShared()) {
            MemorySegment out = arena.allocate(4096, 4096).fill((byte) 7);
            MemorySegment in = arena.allocate(4096, 4096);
            IoBatch b = new IoBatch(2);
            b.write(8192, out);
            Thread.currentThread().interrupt();
            dev.execute(b); // an interrupt must not make it give up on a write the kernel is still reading
            assertThat(Thread.interrupted()).as("the interrupt status is kept").isTrue();
            b.reset();
            b.read(8192, in);
            dev.execute(b);
            assertThat(in.mismatch(out)).isEqualTo(-1);
        }
    }

    @Test
    void closeDuringACheckpointLetsItFinishEvenWhenTheClosingThreadIsInterrupted() throws Exception {
        Path file = dir.resolve("store.img");
        RawBlockCoreConfig config = DeviceOwnershipTest.config(file, IoEngine.IO_URING);
        List<String> keys = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            RawBlockCore core = RawBlockCore.open(config);
            for (int i = 0; i < 10; i++) {
                String k = "m@0x00000000@" + String.format("%02x", i);
                keys.add(k);
                core.put(List.of(PutRequest.of(k, arena.allocate(4096, 4096).fill((byte) i))));
            }
            CompletableFuture<Void> checkpoint = CompletableFuture.runAsync(() -> {
                try {
                    core.checkpointNow();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            Thread closer = Thread.ofPlatform().start(() -> {
                Thread.currentThread().interrupt();
                try {
                    core.close();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            closer.join();
            checkpoint.exceptionally(e -> null).get(30, TimeUnit.SECONDS);
        }
        try (RawBlockCore again = RawBlockCore.open(config)) {
            assertThat(again.exists(keys, false)).as("every key made it into a checkpoint").containsOnly(true);
        }
    }

    /** Puts race close from several threads: each is refused, or stored and recovered, or reported failed. */
    @Test
    void aPutRacingCloseIsRefusedOrDurableNeverAcknowledgedAndLost() throws Exception {
        for (int round = 0; round < 5; round++) {
            Path file = dir.resolve("race-" + round + ".img");
            RawBlockCoreConfig config = RawBlockCoreConfig.builder(file.toString(), 16 << 10)
                    .capacityBytes(RawBlockCoreConfig.v2MetaBytesFor(4096, 512) + 512 * (16 << 10))
                    .metaTotalBytes(RawBlockCoreConfig.v2MetaBytesFor(4096, 512)).ioEngine(IoEngine.IO_URING)
                    .metaEnablePeriodic(false).build();
            Map<String, PutOutcome> acknowledged = new ConcurrentHashMap<>();
            AtomicBoolean refused = new AtomicBoolean();
            try (Arena arena = Arena.ofShared()) {
                RawBlockCore core = RawBlockCore.open(config);
                int threads = 4;
                CountDownLatch go = new CountDownLatch(1);
                CountDownLatch putting = new CountDownLatch(threads); // each putter has submitted a put
                List<Thread> putters = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int id = t;
                    putters.add(Thread.ofPlatform().start(() -> {
                        MemorySegment data = arena.allocate(4096, 4096).fill((byte) id);
                        boolean started = false;
                        try {
                            go.await();
                            for (int i = 0; i < 100; i++) {
                                String k = "m@0x0000000" + id + "@" + String.format("%04x", i);
                                List<PutRequest> one = List.of(PutRequest.of(k, data));
                                core.putOutcomesAsync(one, o -> acknowledged.put(k, o[0]));
                                if (!started) {
                                    started = true;
                                    putting.countDown();
                                }
                            }
                        } catch (IllegalStateException e) {
                            refused.set(true); // closed: refused at submit, nothing was acknowledged
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        } finally {
                            if (!started) {
                                putting.countDown(); // a putter that ended early does not hold close back
                            }
                        }
                    }));
                }
                go.countDown();
                putting.await(); // close while every putter is under way
                core.close();
                for (Thread p : putters) {
                    p.join();
                }
            }
            try (RawBlockCore again = RawBlockCore.open(config)) {
                for (Map.Entry<String, PutOutcome> e : acknowledged.entrySet()) {
                    if (e.getValue().success()) {
                        assertThat(again.exists(List.of(e.getKey()), false)).as("round %d: %s was acknowledged (%s)",
                                round, e.getKey(), e.getValue()).containsExactly(true);
                    }
                }
            }
        }
    }

    /**
     * A write the device holds past close's bound: close returns (saying so in the log), and when the
     * write completes later its put is reported failed, since the final checkpoint was already taken.
     */
    @Test
    void closeWaitsWithABoundAndAPutCompletingAfterItIsReportedFailed() throws Exception {
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, 16);
        Path file = BlockDevices.createFile(dir.resolve("held.img"), meta + 16 * (16 << 10));
        FaultInjectingDevice dev = new FaultInjectingDevice(BlockDevices.open(file,
                DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 20, 0)));
        RawBlockCoreConfig config = RawBlockCoreConfig.builder(file.toString(), 16 << 10).metaTotalBytes(meta)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).closeTimeoutMs(300).build();
        try (Arena arena = Arena.ofShared()) {
            RawBlockCore core = RawBlockCore.open(config, dev);
            dev.hold();
            CompletableFuture<PutOutcome[]> outcome = new CompletableFuture<>();
            core.putOutcomesAsync(List.of(PutRequest.of("m@0x00000000@aa", arena.allocate(4096, 4096))),
                    outcome::complete);
            assertThat(dev.heldCount()).as("its payload, then its header").isEqualTo(2);
            core.close(); // gives up on the held writes after 300 ms
            assertThat(outcome).isNotDone();
            assertThatThrownBy(() -> core.put(List.of(PutRequest.of("m@0x00000000@bb", arena.allocate(4096, 4096)))))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            dev.release();
            assertThat(outcome.get(30, TimeUnit.SECONDS)).containsExactly(PutOutcome.CLOSED);
        } finally {
            dev.close();
        }
        try (RawBlockCore again = RawBlockCore.open(config)) {
            assertThat(again.exists(List.of("m@0x00000000@aa"), false)).containsExactly(false);
        }
    }
}
