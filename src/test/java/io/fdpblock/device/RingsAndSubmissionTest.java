package io.fdpblock.device;

import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Where the io_uring engine's I/O runs and how it reaches the kernel: blocking calls on the
 * caller's own ring, a callback's submission straight into the ring, the submission policies, several
 * rings per device. Counted with the engine's {@link IoStats} (system calls and SQEs, not timings).
 */
@Tag("host")
class RingsAndSubmissionTest {
    private static final int BLOCK = 4096;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private IoUringBlockDevice open(DeviceOptions options) throws IOException {
        Path file = BlockDevices.createFile(dir.resolve("dev-" + System.nanoTime()), 16L << 20);
        return (IoUringBlockDevice) BlockDevices.open(file, options);
    }

    private static DeviceOptions options() {
        return DeviceOptions.of(IoEngine.IO_URING).withQueueDepth(64).withBuffers(1 << 20, 4);
    }

    @Test
    void aBlockingCallRunsOnTheCallersRingInOneSystemCall() throws Exception {
        try (IoUringBlockDevice dev = open(options())) {
            MemorySegment buf = dev.buffers().acquire().asSlice(0, BLOCK);
            Patterns.fill(buf, 5);
            IoBatch w = new IoBatch(1);
            w.write(8 * BLOCK, buf);
            dev.execute(w); // the thread's ring is made here
            buf.fill((byte) 0);

            IoStats before = dev.ioStats();
            IoBatch r = new IoBatch(1);
            r.read(8 * BLOCK, buf);
            dev.execute(r);
            IoStats d = dev.ioStats().minus(before);
            assertThat(Patterns.mismatch(buf, 5)).isEqualTo(-1);
            assertThat(d.callerRunBatches()).isEqualTo(1);
            assertThat(d.enters()).as("submit and wait in one io_uring_enter").isEqualTo(1);
            assertThat(d.sqes()).isEqualTo(1);
            assertThat(d.wakeups()).as("no reactor woken").isZero();
            assertThat(dev.fixedOps()).as("the pool is registered on the caller's ring too").isEqualTo(2);
        }
    }

    @Test
    void aCallbackSubmissionGoesStraightIntoTheRingWithoutWakingAnyone() throws Exception {
        try (IoUringBlockDevice dev = open(options())) {
            MemorySegment buf = dev.buffers().acquire().asSlice(0, BLOCK);
            int chain = 200;
            AtomicInteger left = new AtomicInteger(chain);
            CountDownLatch done = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Set<String> threads = ConcurrentHashMap.newKeySet();
            IoBatch b = new IoBatch(1);
            IoBatch.Callback[] next = new IoBatch.Callback[1];
            next[0] = x -> {
                threads.add(Thread.currentThread().getName());
                if (left.decrementAndGet() == 0 || !x.isComplete(0)) {
                    done.countDown();
                    return;
                }
                x.reset();
                x.read((left.get() % 64) * (long) BLOCK, buf);
                try {
                    dev.submit(x, next[0]);
                } catch (IOException e) {
                    failure.set(e);
                    done.countDown();
                }
            };
            IoStats before = dev.ioStats();
            b.read(0, buf);
            dev.submit(b, next[0]);
            assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
            IoStats d = dev.ioStats().minus(before);
            assertThat(failure.get()).isNull();
            assertThat(left.get()).isZero();
            assertThat(threads).singleElement().asString().startsWith("fdpblock-io_uring-");
            assertThat(d.wakeups()).as("only the first submission, from another thread, may wake the reactor")
                    .isLessThanOrEqualTo(1);
            assertThat(d.completions()).isGreaterThanOrEqualTo(chain);
            // each read is prepared by the last (only) completion of its reap: the reactor's next wait hands
            // it over, one io_uring_enter per read (a call of its own before that wait made two)
            assertThat(d.enters()).as("io_uring_enter calls for a chain of %d reads", chain)
                    .isBetween((long) chain - 1, chain + 3L);
        }
    }

    @Test
    void aBatchQueuedWhileTheReactorRunsACallbackIsTakenWithoutWakingIt() throws Exception {
        try (IoUringBlockDevice dev = open(options())) {
            MemorySegment buf = dev.buffers().acquire();
            Patterns.fill(buf.asSlice(0, BLOCK), 8);
            Patterns.fill(buf.asSlice(BLOCK, BLOCK), 9);
            IoBatch w = new IoBatch(1);
            w.write(0, buf.asSlice(0, 2 * BLOCK));
            dev.execute(w);
            buf.fill((byte) 0);

            CountDownLatch inCallback = new CountDownLatch(1);
            CountDownLatch queued = new CountDownLatch(1);
            CompletableFuture<IoBatch> second = new CompletableFuture<>();
            IoBatch first = new IoBatch(1);
            first.read(0, buf.asSlice(0, BLOCK));
            dev.submit(first, b -> { // a long callback, as a load's CRC32Cs: another thread queues meanwhile
                inCallback.countDown();
                try {
                    queued.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            assertThat(inCallback.await(30, TimeUnit.SECONDS)).isTrue();
            IoStats before = dev.ioStats();
            IoBatch next = new IoBatch(1);
            next.read(BLOCK, buf.asSlice(BLOCK, BLOCK));
            dev.submit(next, second::complete);
            IoStats d = dev.ioStats().minus(before);
            queued.countDown();
            second.get(30, TimeUnit.SECONDS).throwIfFailed();
            assertThat(d.wakeups()).as("the reactor is awake, handing out completions: no eventfd write").isZero();
            assertThat(Patterns.mismatch(buf.asSlice(0, BLOCK), 8)).isEqualTo(-1);
            assertThat(Patterns.mismatch(buf.asSlice(BLOCK, BLOCK), 9)).isEqualTo(-1);
        }
    }

    /** 64 reads in one batch from another thread: how many io_uring_enter calls hand them over. */
    private long submitCallsFor64Reads(SubmitPolicy policy) throws Exception {
        try (IoUringBlockDevice dev = open(options().withSubmitPolicy(policy))) {
            MemorySegment buf = dev.buffers().acquire();
            IoBatch b = new IoBatch(64);
            for (int i = 0; i < 64; i++) {
                b.read(i * (long) BLOCK, buf.asSlice(i * (long) BLOCK, BLOCK));
            }
            IoStats before = dev.ioStats();
            CompletableFuture<IoBatch> done = new CompletableFuture<>();
            dev.submit(b, done::complete);
            done.get(30, TimeUnit.SECONDS).throwIfFailed();
            IoStats d = dev.ioStats().minus(before);
            assertThat(d.sqes()).as(policy + ": every read, and the re-armed wake-up read").isBetween(64L, 66L);
            return d.submits();
        }
    }

    @Test
    void thePoliciesDifferInSystemCallsPerSqe() throws Exception {
        long immediate = submitCallsFor64Reads(SubmitPolicy.IMMEDIATE);
        long adaptive = submitCallsFor64Reads(SubmitPolicy.ADAPTIVE);
        long perCycle = submitCallsFor64Reads(SubmitPolicy.PER_CYCLE);
        assertThat(immediate).as("one call per SQE").isGreaterThanOrEqualTo(64);
        // the batch in one call, but the SQ (64 entries) also holds the re-armed wake-up read: one more call
        // for the last read; and the idle reactor's first wait may fall in the window
        assertThat(perCycle).as("the whole batch in one or two calls").isLessThanOrEqualTo(3);
        // adaptive: the SQEs of one batch in groups of 8 (of 1/8 of the depth in the kernel, once that is more)
        assertThat(adaptive).isBetween(8L, 12L);
    }

    @Test
    void theAdaptiveRuleHoldsBackAtMostAnEighthOfTheDepthInTheKernel() {
        assertThat(SubmitPolicy.ADAPTIVE.submitNow(1, 0)).isTrue();
        assertThat(SubmitPolicy.ADAPTIVE.submitNow(1, 15)).isTrue();
        assertThat(SubmitPolicy.ADAPTIVE.submitNow(1, 16)).isFalse();
        assertThat(SubmitPolicy.ADAPTIVE.submitNow(2, 16)).isTrue();
        assertThat(SubmitPolicy.ADAPTIVE.submitNow(3, 31)).isTrue();
        assertThat(SubmitPolicy.ADAPTIVE.submitNow(31, 256)).isFalse();
        assertThat(SubmitPolicy.ADAPTIVE.submitNow(0, 0)).isFalse();
        // within a batch whose next SQE follows at once: 8 at a time, or 1/8 of the depth when that is more
        assertThat(SubmitPolicy.ADAPTIVE.submitWithinBatch(7, 0)).isFalse();
        assertThat(SubmitPolicy.ADAPTIVE.submitWithinBatch(8, 0)).isTrue();
        assertThat(SubmitPolicy.ADAPTIVE.submitWithinBatch(8, 63)).isTrue();
        assertThat(SubmitPolicy.ADAPTIVE.submitWithinBatch(15, 128)).isFalse();
        assertThat(SubmitPolicy.ADAPTIVE.submitWithinBatch(16, 128)).isTrue();
        assertThat(SubmitPolicy.IMMEDIATE.submitWithinBatch(1, 1000)).isTrue();
        assertThat(SubmitPolicy.PER_CYCLE.submitWithinBatch(1000, 0)).isFalse();
        assertThat(SubmitPolicy.IMMEDIATE.submitNow(1, 1000)).isTrue();
        assertThat(SubmitPolicy.PER_CYCLE.submitNow(1000, 0)).isFalse();
        assertThat(SubmitPolicy.parse("per-cycle")).isEqualTo(SubmitPolicy.PER_CYCLE);
        assertThatThrownBy(() -> SubmitPolicy.parse("eager")).hasMessageContaining("'eager'")
                .hasMessageContaining("immediate, adaptive, per_cycle");
    }

    @Test
    void ioRingsAreBoundedByTheCores() {
        int cores = Runtime.getRuntime().availableProcessors();
        assertThatThrownBy(() -> DeviceOptions.of(IoEngine.IO_URING).withIoRings(cores + 1))
                .hasMessageContaining("io_rings " + (cores + 1)).hasMessageContaining("1.." + cores);
        assertThatThrownBy(() -> DeviceOptions.of(IoEngine.IO_URING).withIoRings(0)).hasMessageContaining("io_rings 0");
        assertThat(DeviceOptions.of(IoEngine.IO_URING).ioRings()).isEqualTo(1);
    }

    @Test
    void twoRingsServeTwoSubmittingThreadsEachOnItsOwnReactor() throws Exception {
        assumeTrue(Runtime.getRuntime().availableProcessors() >= 2, "two rings need two cores");
        try (IoUringBlockDevice dev = open(options().withIoRings(2).withBuffers(1 << 20, 8))) {
            assertThat(dev.reactorCount()).isEqualTo(2);
            assertThat(dev.ioStats().rings()).isEqualTo(2);
            Map<Integer, Set<String>> callbackThreads = new ConcurrentHashMap<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread[] submitters = new Thread[2];
            for (int t = 0; t < 2; t++) {
                int id = t;
                MemorySegment buf = dev.buffers().acquire();
                submitters[t] = Thread.ofPlatform().start(() -> {
                    try {
                        for (int round = 0; round < 20; round++) {
                            MemorySegment piece = buf.asSlice(0, BLOCK);
                            Patterns.fill(piece, id * 100 + round);
                            long at = (id * 64L + round) * BLOCK;
                            IoBatch w = new IoBatch(1);
                            w.write(at, piece);
                            CompletableFuture<IoBatch> done = new CompletableFuture<>();
                            dev.submit(w, x -> {
                                callbackThreads.computeIfAbsent(id, k -> ConcurrentHashMap.newKeySet())
                                        .add(Thread.currentThread().getName());
                                done.complete(x);
                            });
                            done.join().throwIfFailed();
                            piece.fill((byte) 0);
                            IoBatch r = new IoBatch(1);
                            r.read(at, piece);
                            CompletableFuture<IoBatch> back = new CompletableFuture<>();
                            dev.submit(r, back::complete);
                            back.join().throwIfFailed();
                            if (Patterns.mismatch(piece, id * 100 + round) != -1) {
                                throw new AssertionError("thread " + id + " read back other bytes at " + at);
                            }
                        }
                    } catch (Throwable e) {
                        failure.set(e);
                    }
                });
            }
            for (Thread s : submitters) {
                s.join();
            }
            assertThat(failure.get()).isNull();
            assertThat(callbackThreads.get(0)).as("a thread keeps to one reactor").hasSize(1);
            assertThat(callbackThreads.get(1)).hasSize(1);
            assertThat(callbackThreads.get(0)).doesNotContainAnyElementsOf(callbackThreads.get(1));
            assertThat(callbackThreads.get(0).iterator().next()).matches("fdpblock-io_uring-.*-r[01]");
        }
    }

    /** The rule of {@link ReactorFailureTest}, with two rings: every batch accepted around a failure completes. */
    @Test
    void withTwoRingsEveryBatchAcceptedAroundAReactorFailureCompletes() throws Exception {
        assumeTrue(Runtime.getRuntime().availableProcessors() >= 2, "two rings need two cores");
        IoUringBlockDevice dev = open(options().withQueueDepth(8).withIoRings(2).withBuffers(4096, 64));
        try {
            ReactorFailureTest.submitAroundAReactorFailure(dev);
        } finally {
            dev.close();
        }
        assertThat(dev.buffers().region().scope().isAlive()).as("memory released once nothing was in the kernel")
                .isFalse();
    }

    @Test
    void aCallersRingFollowsRegistrationsAndTheirUndoing() throws Exception {
        try (IoUringBlockDevice dev = open(options()); Arena arena = Arena.ofShared()) {
            MemorySegment own = arena.allocate(1 << 20, 4096);
            Patterns.fill(own, 9);
            IoBatch b = new IoBatch(1);
            b.write(0, own.asSlice(0, BLOCK));
            dev.execute(b); // makes this thread's ring; own is not registered
            assertThat(dev.plainOps()).isEqualTo(1);
            assertThat(dev.registerBuffers(own)).isTrue();
            b.reset();
            b.write(BLOCK, own.asSlice(0, BLOCK));
            dev.execute(b);
            assertThat(dev.fixedOps()).as("the caller's ring took up the registration").isEqualTo(1);
            dev.unregisterBuffers(own);
            b.reset();
            b.read(BLOCK, own.asSlice(BLOCK, BLOCK));
            dev.execute(b);
            assertThat(dev.plainOps()).as("and let go of it").isEqualTo(2);
            assertThat(own.asSlice(BLOCK, BLOCK).mismatch(own.asSlice(0, BLOCK))).as("the bytes written").isEqualTo(-1);
        }
    }
}
