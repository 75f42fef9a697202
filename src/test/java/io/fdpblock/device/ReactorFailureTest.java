package io.fdpblock.device;

import io.fdpblock.linux.Errno;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * When the io_uring reactor fails, memory the kernel may still touch is released only after the kernel
 * let go of it, every accepted batch completes (failed), and nothing hangs.
 */
@Tag("host")
class ReactorFailureTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    /**
     * A read that the kernel holds until data arrives (a FIFO): when the reactor fails, the read is
     * cancelled and reaped before its batch completes, so afterwards the kernel no longer writes into
     * its buffer: bytes written to the FIFO later stay in the FIFO, and the buffer stays as it was.
     */
    @Test
    void aFailingReactorReapsTheReadTheKernelHoldsBeforeItsBatchCompletes() throws Exception {
        Path fifo = dir.resolve("fifo");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
        NativeFile f = NativeFile.open(fifo, true, false, false); // O_RDWR: a FIFO opens without a peer
        IoUringBlockDevice dev = IoUringBlockDevice.start(new IoUringBlockDevice(fifo.toString(), f.fd(), f, 1 << 20,
                4096, 1 << 20, DeviceOptions.of(IoEngine.IO_URING).withBuffers(4096, 1)));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            IoBatch read = new IoBatch(1);
            read.read(0, buf);
            CompletableFuture<IoBatch> done = new CompletableFuture<>();
            dev.submit(read, done::complete);
            // The kernel takes SQEs in order: once a later batch of the same reactor came back (a flush,
            // which a FIFO refuses at once), the read is in the kernel, waiting for data.
            IoBatch flush = new IoBatch(1);
            flush.flush();
            CompletableFuture<IoBatch> flushed = new CompletableFuture<>();
            dev.submit(flush, flushed::complete);
            assertThat(flushed.get(30, TimeUnit.SECONDS).failed(0)).as("fsync of a FIFO: EINVAL").isTrue();
            assertThat(done).isNotDone();

            dev.runOnReactor("test", () -> {
                throw new IllegalStateException("injected reactor failure");
            });
            IoBatch failed = done.get(30, TimeUnit.SECONDS);
            assertThat(failed.failed(0)).isTrue();
            assertThat(failed.failure(0)).hasMessageContaining(Errno.name(Errno.ECANCELED));
            assertThat(failed.buffersMayBeInUse()).as("the kernel let go of the buffer").isFalse();

            byte[] data = new byte[4096];
            Arrays.fill(data, (byte) 0x5A);
            try (FileOutputStream out = new FileOutputStream(fifo.toFile())) {
                out.write(data);
            }
            byte[] back = new byte[4096];
            try (FileInputStream in = new FileInputStream(fifo.toFile())) {
                assertThat(in.readNBytes(back, 0, 4096)).isEqualTo(4096);
            }
            assertThat(back).as("the cancelled read consumed nothing").isEqualTo(data);
            assertThat(buf.mismatch(arena.allocate(4096))).as("nothing was written into the buffer").isEqualTo(-1);

            IoBatch later = new IoBatch(1);
            later.read(0, buf);
            assertThatThrownBy(() -> dev.submit(later, b -> { })).isInstanceOf(IOException.class)
                    .hasMessageContaining("reactor").hasMessageContaining("injected reactor failure");
        } finally {
            dev.close();
        }
        assertThat(dev.buffers().region().scope().isAlive()).as("memory released once nothing was in the kernel")
                .isFalse();
    }

    /** Batches offered while the reactor dies complete, failed or not; none is left waiting. */
    @Test
    void everyBatchAcceptedAroundAReactorFailureCompletes() throws Exception {
        Path file = BlockDevices.createFile(dir.resolve("dev.img"), 8 << 20);
        IoUringBlockDevice dev = (IoUringBlockDevice) BlockDevices.open(file,
                DeviceOptions.of(IoEngine.IO_URING).withQueueDepth(8).withBuffers(4096, 64));
        try {
            assertThat(submitAroundAReactorFailure(dev)).as("batches caught by the failure completed failed")
                    .isPositive();
        } finally {
            dev.close();
        }
    }

    /**
     * Four threads submit batches of two reads (at most 32 of each outstanding, so the queue stays short)
     * while the reactors fail: the failure is injected once I/O went through the kernel and back, and
     * the threads stop once a submit was refused. Asserts that every accepted batch completed.
     *
     * <p>The injected task holds the first reactor it runs on until more batches are outstanding than
     * all rings could have in the kernel, so with one ring some are certainly still queued when it
     * fails, whatever the scheduler does: those must complete failed.
     *
     * @return how many operations completed failed
     */
    static long submitAroundAReactorFailure(IoUringBlockDevice dev) throws Exception {
        AtomicLong accepted = new AtomicLong();
        Semaphore completed = new Semaphore(0);
        AtomicLong completedBatches = new AtomicLong();
        long inKernelAtMost = (long) dev.options().queueDepth() * dev.reactorCount();
        AtomicLong failedOps = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch running = new CountDownLatch(64); // batches that went through the kernel and back
        CountDownLatch refused = new CountDownLatch(1); // a submit a failed reactor turned away
        Thread[] submitters = new Thread[4];
        try {
            for (int t = 0; t < submitters.length; t++) {
                int id = t;
                submitters[t] = Thread.ofPlatform().start(() -> {
                    MemorySegment buf = dev.buffers().acquire();
                    Semaphore window = new Semaphore(32);
                    long n = 0;
                    while (!stop.get()) {
                        try {
                            if (!window.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                                continue; // all 32 outstanding: look at stop again
                            }
                        } catch (InterruptedException e) {
                            return;
                        }
                        IoBatch b = new IoBatch(2);
                        b.read((id * 16L + n++ % 16) * 4096, buf);
                        b.read(0, buf);
                        try {
                            dev.submit(b, done -> {
                                for (int i = 0; i < done.size(); i++) {
                                    if (done.failed(i)) {
                                        failedOps.incrementAndGet();
                                    }
                                }
                                running.countDown();
                                completedBatches.incrementAndGet();
                                window.release();
                                completed.release();
                            });
                            accepted.incrementAndGet();
                        } catch (IOException e) {
                            window.release();
                            refused.countDown(); // the reactor is gone: never accepted, nothing to wait for
                        }
                    }
                });
            }
            assertThat(running.await(30, TimeUnit.SECONDS)).as("I/O running before the failure").isTrue();
            dev.runOnReactor("test", () -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (dev.fatal() == null // another reactor failed first: fail at once, as this one would
                        && accepted.get() - completedBatches.get() <= inKernelAtMost && System.nanoTime() < deadline) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                }
                throw new IllegalStateException("injected reactor failure");
            });
            assertThat(refused.await(30, TimeUnit.SECONDS)).as("submitters met the failed reactor").isTrue();
        } finally {
            stop.set(true);
            for (Thread s : submitters) {
                if (s != null) {
                    s.join();
                }
            }
        }
        assertThat(completed.tryAcquire(Math.toIntExact(accepted.get()), 30, TimeUnit.SECONDS))
                .as("every accepted batch completed").isTrue();
        return failedOps.get();
    }
}
