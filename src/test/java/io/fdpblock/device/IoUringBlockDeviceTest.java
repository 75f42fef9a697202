package io.fdpblock.device;

import io.fdpblock.uring.Ring;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What only the io_uring engine promises: fixed buffers by default, a reactor that owns the ring. */
@Tag("host")
class IoUringBlockDeviceTest {
    @TempDir
    Path dir;

    private IoUringBlockDevice open(int queueDepth) throws IOException {
        Path file = BlockDevices.createFile(dir.resolve("dev"), 16L << 20);
        return (IoUringBlockDevice) BlockDevices.open(file,
                DeviceOptions.of(IoEngine.IO_URING).withQueueDepth(queueDepth).withBuffers(1 << 20, 4));
    }

    @Test
    void poolBuffersTakeTheFixedPathAndOthersOnlyOnceRegistered() throws Exception {
        try (IoUringBlockDevice dev = open(64); Arena arena = Arena.ofShared()) {
            MemorySegment pooled = dev.buffers().acquire();
            Patterns.fill(pooled, 1);
            IoBatch b = new IoBatch();
            b.write(0, pooled);
            dev.execute(b);
            assertThat(dev.fixedOps()).isEqualTo(1);
            assertThat(dev.plainOps()).isZero();

            MemorySegment own = arena.allocate(1 << 20, 4096);
            Patterns.fill(own, 2);
            b.reset();
            b.write(1 << 20, own);
            dev.execute(b);
            assertThat(dev.plainOps()).isEqualTo(1);

            assertThat(dev.registerBuffers(own)).isTrue();
            own.fill((byte) 0);
            b.reset();
            b.read(1 << 20, own);
            b.read(0, pooled.asSlice(0, 8192)); // a slice inside the registered pool is fixed too
            dev.execute(b);
            assertThat(dev.fixedOps()).isEqualTo(3);
            assertThat(dev.plainOps()).isEqualTo(1);
            assertThat(Patterns.mismatch(own, 2)).isEqualTo(-1);
        }
    }

    @Test
    void moreOperationsThanTheQueueDepthAllComplete() throws Exception {
        try (IoUringBlockDevice dev = open(4); Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(100L * 4096, 4096);
            Patterns.fill(data, 77);
            IoBatch w = new IoBatch();
            for (int i = 0; i < 100; i++) {
                w.write(i * 8192L, data.asSlice(i * 4096L, 4096));
            }
            dev.execute(w);
            MemorySegment back = arena.allocate(100L * 4096, 4096);
            IoBatch r = new IoBatch();
            for (int i = 99; i >= 0; i--) {
                r.read(i * 8192L, back.asSlice(i * 4096L, 4096));
            }
            dev.execute(r);
            assertThat(back.mismatch(data)).isEqualTo(-1);
        }
    }

    @Test
    void theRingIsSetUpOnItsReactorWithTaskrunHints() throws Exception {
        try (IoUringBlockDevice dev = open(8)) {
            assertThat(dev.ringDescription()).startsWith("Ring[").containsAnyOf("DEFER_TASKRUN", "COOP_TASKRUN");
        }
    }

    @Test
    void callbacksRunOnTheReactorAndMayCloseTheDevice() throws Exception {
        IoUringBlockDevice dev = open(8);
        try (Arena arena = Arena.ofShared()) {
            AtomicReference<String> thread = new AtomicReference<>();
            CountDownLatch done = new CountDownLatch(1);
            IoBatch b = new IoBatch();
            b.read(0, arena.allocate(4096, 4096));
            dev.submit(b, x -> {
                thread.set(Thread.currentThread().getName());
                dev.close(); // must not deadlock on its own reactor
                done.countDown();
            });
            assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(thread.get()).startsWith("fdpblock-io_uring-");
            assertThat(b.isComplete(0)).isTrue();
            IoBatch after = new IoBatch();
            after.read(0, arena.allocate(4096, 4096));
            assertThatThrownBy(() -> dev.submit(after, x -> {})).hasMessageContaining("closed");
        }
    }

    @Test
    void missingFileAndDirectoryGiveClearErrors() {
        assertThatThrownBy(() -> BlockDevices.open(dir.resolve("nope"), DeviceOptions.of(IoEngine.IO_URING)))
                .isInstanceOf(IOException.class).hasMessageContaining("ENOENT").hasMessageContaining("nope");
        assertThatThrownBy(() -> BlockDevices.createFile(dir, 4096)).hasMessageContaining("is a directory");
        assertThatThrownBy(() -> IoEngine.parse("spdk")).hasMessageContaining("unknown io_engine 'spdk'")
                .hasMessageContaining("posix, io_uring, uring_cmd, memory");
    }
}
