package io.fdpblock.device;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every engine against the same rules, on real files (O_DIRECT) in a temp dir, and on memory. */
@Tag("host")
class BlockDeviceTest {
    private static final long SIZE = 64L << 20;
    private static final int BLOCK = 4096;

    @TempDir
    Path dir;
    private final Arena arena = Arena.ofShared();
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
        arena.close();
    }

    private BlockDevice open(IoEngine engine) throws IOException {
        return open(engine, DeviceOptions.of(engine).withBuffers(1 << 20, 8));
    }

    private BlockDevice open(IoEngine engine, DeviceOptions options) throws IOException {
        BlockDevice d = engine == IoEngine.MEMORY
                ? BlockDevices.memory(SIZE, BLOCK, options)
                : BlockDevices.open(BlockDevices.createFile(dir.resolve("dev-" + engine), SIZE), options);
        toClose.add(d);
        return d;
    }

    private MemorySegment aligned(long size) {
        return arena.allocate(size, BLOCK);
    }

    private static void await(CountDownLatch latch) throws InterruptedException {
        assertThat(latch.await(60, TimeUnit.SECONDS)).as("completions arrived").isTrue();
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void randomAlignedRoundTripWith256InFlight(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        SplittableRandom rnd = new SplittableRandom(42);
        int ops = 256;
        // Distinct 64 KiB extents, each written with 4..64 KiB at a random block inside it.
        int extents = (int) (SIZE / (64 << 10));
        BitSet used = new BitSet(extents);
        long[] offsets = new long[ops];
        MemorySegment[] written = new MemorySegment[ops];
        for (int i = 0; i < ops; i++) {
            int e;
            do {
                e = rnd.nextInt(extents);
            } while (used.get(e));
            used.set(e);
            int blocks = 1 + rnd.nextInt(16);
            offsets[i] = (long) e * (64 << 10) + (long) rnd.nextInt(16 - blocks + 1) * BLOCK;
            written[i] = aligned((long) blocks * BLOCK);
            Patterns.fill(written[i], 1000 + i);
        }
        // Four batches of 64 submitted back to back: all 256 writes are in flight together.
        CountDownLatch writes = new CountDownLatch(4);
        List<IoBatch> batches = new ArrayList<>();
        for (int b = 0; b < 4; b++) {
            IoBatch batch = new IoBatch();
            for (int i = b * 64; i < (b + 1) * 64; i++) {
                batch.write(offsets[i], written[i]);
            }
            batches.add(batch);
            dev.submit(batch, x -> writes.countDown());
        }
        await(writes);
        for (IoBatch b : batches) {
            b.throwIfFailed();
        }
        IoBatch reads = new IoBatch(ops);
        MemorySegment[] back = new MemorySegment[ops];
        for (int i = 0; i < ops; i++) {
            back[i] = aligned(written[i].byteSize());
            reads.read(offsets[i], back[i]);
        }
        dev.execute(reads);
        for (int i = 0; i < ops; i++) {
            assertThat(reads.result(i)).isEqualTo(written[i].byteSize());
            assertThat(Patterns.mismatch(back[i], 1000 + i)).as("op %d at %d", i, offsets[i]).isEqualTo(-1);
        }
    }

    @Test
    void thePosixEngineRefusesABufferConfinedToTheSubmitterAndStaysUsable() throws Exception {
        // Its I/O threads cannot pass a confined segment to pwrite: before, the batch never completed.
        BlockDevice dev = open(IoEngine.POSIX);
        try (Arena confined = Arena.ofConfined()) {
            MemorySegment mine = confined.allocate(BLOCK, BLOCK);
            IoBatch w = new IoBatch();
            w.write(0, mine);
            assertThatThrownBy(() -> dev.execute(w)).isInstanceOf(IOException.class)
                    .hasMessageContaining("confined to one thread").hasMessageContaining("Arena.ofShared()");
        }
        MemorySegment shared = aligned(BLOCK);
        Patterns.fill(shared, 5);
        IoBatch w = new IoBatch();
        w.write(0, shared);
        dev.execute(w);
        shared.fill((byte) 0);
        IoBatch r = new IoBatch();
        r.read(0, shared);
        dev.execute(r);
        assertThat(Patterns.mismatch(shared, 5)).isEqualTo(-1);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void poolBuffersAndOtherBuffersBothRoundTrip(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        MemorySegment pooled = dev.buffers().acquire();
        MemorySegment other = aligned(1 << 20);
        Patterns.fill(pooled, 7);
        Patterns.fill(other, 8);
        IoBatch w = new IoBatch();
        w.write(0, pooled);
        w.write(8L << 20, other);
        dev.execute(w);
        pooled.fill((byte) 0);
        other.fill((byte) 0);
        IoBatch r = new IoBatch();
        r.read(0, pooled);
        r.read(8L << 20, other);
        dev.execute(r);
        assertThat(Patterns.mismatch(pooled, 7)).isEqualTo(-1);
        assertThat(Patterns.mismatch(other, 8)).isEqualTo(-1);
        dev.buffers().release(pooled);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void shortReadAtEndOfDevice(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        MemorySegment last = aligned(BLOCK);
        Patterns.fill(last, 99);
        IoBatch w = new IoBatch();
        w.write(SIZE - BLOCK, last);
        dev.execute(w);
        MemorySegment twoBlocks = aligned(2 * BLOCK);
        IoBatch r = new IoBatch();
        r.read(SIZE - BLOCK, twoBlocks);
        CountDownLatch done = new CountDownLatch(1);
        dev.submit(r, b -> done.countDown());
        await(done);
        assertThat(r.failed(0)).isFalse();
        assertThat(r.result(0)).isEqualTo(BLOCK);
        assertThat(r.isComplete(0)).isFalse();
        assertThat(Patterns.mismatch(twoBlocks.asSlice(0, BLOCK), 99)).isEqualTo(-1);
        assertThatThrownBy(r::throwIfFailed).isInstanceOf(IOException.class)
                .hasMessageContaining("transferred only 4096 of 8192");
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING"})
    void misalignedBufferOrOffsetFailsClearlyAndSubmitsNothing(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        MemorySegment buf = aligned(2 * BLOCK);
        Patterns.fill(buf, 5);
        IoBatch good = new IoBatch();
        good.write(0, buf.asSlice(0, BLOCK));
        dev.execute(good);

        IoBatch misalignedBuffer = new IoBatch();
        misalignedBuffer.write(BLOCK, buf.asSlice(0, BLOCK)); // fine
        misalignedBuffer.write(2 * BLOCK, buf.asSlice(512, BLOCK)); // address not aligned to 4096
        assertThatThrownBy(() -> dev.submit(misalignedBuffer, b -> {}))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("not aligned to 4096")
                .hasMessageContaining("O_DIRECT");

        IoBatch misalignedOffset = new IoBatch();
        misalignedOffset.read(100, buf.asSlice(0, BLOCK));
        assertThatThrownBy(() -> dev.submit(misalignedOffset, b -> {}))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("offset 100 is not a non-negative multiple of the logical block size 4096");

        IoBatch oddLength = new IoBatch();
        oddLength.read(0, buf.asSlice(0, 1000));
        assertThatThrownBy(() -> dev.submit(oddLength, b -> {}))
                .isInstanceOf(IOException.class).hasMessageContaining("length 1000");

        // Nothing of the rejected batch was written: the block at 4096 still reads as zeros.
        MemorySegment check = aligned(BLOCK);
        IoBatch r = new IoBatch();
        r.read(BLOCK, check);
        r.read(0, buf.asSlice(BLOCK, BLOCK));
        dev.execute(r);
        assertThat(check.mismatch(aligned(BLOCK))).isEqualTo(-1);
        assertThat(Patterns.mismatch(buf.asSlice(BLOCK, BLOCK), 5)).isEqualTo(-1);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void writePastEndAndHeapBuffersAreRejected(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        IoBatch past = new IoBatch();
        past.write(SIZE, aligned(BLOCK));
        assertThatThrownBy(() -> dev.submit(past, b -> {})).isInstanceOf(IOException.class)
                .hasMessageContaining("past the end of the device (" + SIZE + " bytes)");
        IoBatch heap = new IoBatch();
        heap.write(0, MemorySegment.ofArray(new byte[BLOCK]));
        assertThatThrownBy(() -> dev.submit(heap, b -> {})).isInstanceOf(IOException.class)
                .hasMessageContaining("Java heap");
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void severalThreadsSubmitAtOnce(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        int threads = 8;
        int rounds = 100;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(pool.submit(() -> {
                    MemorySegment w = arena.allocate(4L * BLOCK, BLOCK);
                    MemorySegment r = arena.allocate(4L * BLOCK, BLOCK);
                    IoBatch batch = new IoBatch(4);
                    for (int round = 0; round < rounds; round++) {
                        long base = ((long) thread * rounds + round) * 4 * BLOCK;
                        long seed = thread * 100_000L + round;
                        Patterns.fill(w, seed);
                        batch.reset();
                        for (int k = 0; k < 4; k++) {
                            batch.write(base + (long) k * BLOCK, w.asSlice((long) k * BLOCK, BLOCK));
                        }
                        dev.execute(batch);
                        batch.reset();
                        batch.read(base, r);
                        dev.execute(batch);
                        assertThat(Patterns.mismatch(r, seed)).isEqualTo(-1);
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void closeWhileInFlightCompletesOrFailsEveryRequest(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        int batches = 64;
        int perBatch = 16;
        AtomicInteger callbacks = new AtomicInteger();
        ConcurrentLinkedQueue<IoBatch> completed = new ConcurrentLinkedQueue<>();
        CountDownLatch all = new CountDownLatch(batches);
        MemorySegment data = aligned((long) perBatch * BLOCK);
        Patterns.fill(data, 3);
        int accepted = 0;
        for (int b = 0; b < batches; b++) {
            IoBatch batch = new IoBatch(perBatch);
            for (int k = 0; k < perBatch; k++) {
                batch.write(((long) b * perBatch + k) * BLOCK, data.asSlice((long) k * BLOCK, BLOCK));
            }
            dev.submit(batch, x -> {
                callbacks.incrementAndGet();
                completed.add(x);
                all.countDown();
            });
            accepted++;
        }
        dev.close();
        await(all);
        assertThat(accepted).isEqualTo(batches);
        assertThat(callbacks.get()).as("exactly one callback per batch").isEqualTo(batches);
        for (IoBatch b : completed) {
            for (int i = 0; i < b.size(); i++) {
                assertThat(b.isComplete(i) || b.failed(i)).as("op %d settled", i).isTrue();
            }
        }
        IoBatch after = new IoBatch();
        after.read(0, aligned(BLOCK));
        assertThatThrownBy(() -> dev.submit(after, b -> {})).isInstanceOf(IOException.class)
                .hasMessageContaining("closed");
        dev.close(); // twice is harmless
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void flushSucceedsAndEmptyBatchCompletes(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        MemorySegment buf = aligned(BLOCK);
        Patterns.fill(buf, 11);
        IoBatch w = new IoBatch();
        w.write(BLOCK, buf);
        dev.execute(w);
        dev.flush();
        CountDownLatch done = new CountDownLatch(1);
        dev.submit(new IoBatch(), b -> done.countDown());
        await(done);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void negativeOffsetsAndRangesThatOverflowAreRefusedBeforeAnyIo(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        MemorySegment buf = dev.buffers().acquire().asSlice(0, 2 * BLOCK);
        IoBatch negative = new IoBatch();
        negative.read(-BLOCK, buf);
        assertThatThrownBy(() -> dev.submit(negative, b -> { })).isInstanceOf(IOException.class)
                .hasMessageContaining("offset -4096 is not a non-negative multiple");
        IoBatch overflow = new IoBatch(); // offset + length wraps around to a negative long
        overflow.write(Long.MAX_VALUE - (BLOCK - 1), buf);
        assertThatThrownBy(() -> dev.submit(overflow, b -> { })).isInstanceOf(IOException.class)
                .hasMessageContaining("past the end of the device");
        IoBatch dealloc = new IoBatch();
        dealloc.deallocate(SIZE - BLOCK, 2 * BLOCK);
        assertThatThrownBy(() -> dev.submit(dealloc, b -> { })).isInstanceOf(IOException.class)
                .hasMessageContaining("past the end of the device");
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING"})
    void submitNeverRunsTheIoOnTheCallersThread(IoEngine engine) throws Exception {
        BlockDevice dev = open(engine);
        MemorySegment buf = dev.buffers().acquire();
        IoBatch b = new IoBatch();
        b.write(0, buf);
        CompletableFuture<Thread> ranOn = new CompletableFuture<>();
        dev.submit(b, done -> ranOn.complete(Thread.currentThread()));
        assertThat(ranOn.get(10, TimeUnit.SECONDS)).isNotSameAs(Thread.currentThread());
        assertThat(b.isComplete(0)).isTrue();
    }
}
