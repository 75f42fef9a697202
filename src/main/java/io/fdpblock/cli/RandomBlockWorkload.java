package io.fdpblock.cli;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/**
 * Writes {@code count} blocks at distinct random aligned offsets with up to {@code depth} in flight,
 * then reads them back and checks each against a pattern derived from its offset. Buffers come from
 * the device's registered pool; completions only hand the slot back, the checks run on this thread.
 */
final class RandomBlockWorkload {
    record Result(int blockSize, int blocks, long writeNanos, long readNanos, long mismatches) {}

    private final BlockDevice device;
    private final int depth;
    private final long seed;

    RandomBlockWorkload(BlockDevice device, int depth, long seed) {
        this.device = device;
        this.depth = Math.max(1, depth);
        this.seed = seed;
    }

    /** One in-flight slot: a reusable one-op batch and its buffer. */
    private static final class Slot {
        final IoBatch batch = new IoBatch(1);
        MemorySegment buffer;
        long offset = -1;
    }

    Result run(int blockSize, long regionStart, long regionBytes, int count) throws IOException, InterruptedException {
        long[] offsets = distinctOffsets(blockSize, regionStart, regionBytes, count);
        BlockingQueue<Slot> free = new ArrayBlockingQueue<>(depth);
        Slot[] slots = new Slot[depth];
        for (int i = 0; i < depth; i++) {
            slots[i] = new Slot();
            slots[i].buffer = device.buffers().acquire().asSlice(0, blockSize);
            free.add(slots[i]);
        }
        try {
            long t0 = System.nanoTime();
            long[] mismatches = {0};
            pump(free, offsets, true, mismatches);
            long t1 = System.nanoTime();
            pump(free, offsets, false, mismatches);
            long t2 = System.nanoTime();
            return new Result(blockSize, count, t1 - t0, t2 - t1, mismatches[0]);
        } finally {
            for (Slot s : slots) {
                device.buffers().release(s.buffer);
            }
        }
    }

    private void pump(BlockingQueue<Slot> free, long[] offsets, boolean write, long[] mismatches)
            throws IOException, InterruptedException {
        for (long offset : offsets) {
            Slot s = free.take();
            settle(s, write, mismatches);
            s.offset = offset;
            s.batch.reset();
            if (write) {
                fill(s.buffer, offset);
                s.batch.write(offset, s.buffer);
            } else {
                s.batch.read(offset, s.buffer);
            }
            device.submit(s.batch, b -> free.add(s));
        }
        List<Slot> tail = new ArrayList<>(depth); // wait for the last ones, checking as they come back
        for (int i = 0; i < depth; i++) {
            Slot s = free.take();
            settle(s, write, mismatches);
            tail.add(s);
        }
        free.addAll(tail);
    }

    /** Checks the slot's last operation: a failure is thrown, a read is verified. */
    private void settle(Slot s, boolean write, long[] mismatches) throws IOException {
        if (s.offset < 0) {
            return;
        }
        s.batch.throwIfFailed();
        if (!write && !matches(s.buffer, s.offset)) {
            mismatches[0]++;
        }
        s.offset = -1;
    }

    private long[] distinctOffsets(int blockSize, long regionStart, long regionBytes, int count) {
        int slots = (int) (regionBytes / blockSize);
        int[] perm = new int[slots];
        for (int i = 0; i < slots; i++) {
            perm[i] = i;
        }
        SplittableRandom r = new SplittableRandom(seed ^ blockSize);
        long[] out = new long[count];
        for (int i = 0; i < count; i++) { // partial Fisher-Yates: count distinct slots
            int j = i + r.nextInt(slots - i);
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
            out[i] = regionStart + (long) perm[i] * blockSize;
        }
        return out;
    }

    private void fill(MemorySegment buf, long offset) {
        SplittableRandom r = new SplittableRandom(seed + offset);
        for (long i = 0; i < buf.byteSize(); i += 8) {
            buf.set(ValueLayout.JAVA_LONG, i, r.nextLong());
        }
    }

    private boolean matches(MemorySegment buf, long offset) {
        SplittableRandom r = new SplittableRandom(seed + offset);
        for (long i = 0; i < buf.byteSize(); i += 8) {
            if (buf.get(ValueLayout.JAVA_LONG, i) != r.nextLong()) {
                return false;
            }
        }
        return true;
    }
}
