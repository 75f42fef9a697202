package io.fdpblock.cli;

import io.fdpblock.bench.Measurement;
import io.fdpblock.bench.PipelinedIo;
import io.fdpblock.device.BlockDevice;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Writes {@code count} blocks at distinct random aligned offsets with up to {@code depth} in flight,
 * then reads them back and checks each against a pattern derived from its offset: two passes of the
 * bench's {@link PipelinedIo} over the same offsets (buffers from the device's registered pool,
 * completions only hand the slot back, fills and checks on this thread).
 */
final class RandomBlockWorkload {
    /** The most blocks one pass takes: their offsets are kept in memory (8 bytes each). */
    static final int MAX_BLOCKS = 1 << 22;

    record Result(int blockSize, int blocks, long writeNanos, long readNanos, long mismatches) {}

    private final BlockDevice device;
    private final int depth;
    private final long seed;

    RandomBlockWorkload(BlockDevice device, int depth, long seed) {
        this.device = device;
        this.depth = Math.max(1, depth);
        this.seed = seed;
    }

    Result run(int blockSize, long regionStart, long regionBytes, int count) throws IOException {
        long[] offsets = distinctOffsets(blockSize, regionStart, regionBytes, count);
        PipelinedIo.Content pattern = new PipelinedIo.Content() {
            @Override
            public void fill(MemorySegment buffer, long offset) {
                pattern(buffer, offset, true);
            }

            @Override
            public boolean matches(MemorySegment buffer, long offset) {
                return pattern(buffer, offset, false);
            }
        };
        PipelinedIo writes = PipelinedIo.overOffsets(device, true, blockSize, depth, offsets, pattern);
        Measurement w = runOnce(writes, count);
        PipelinedIo reads = PipelinedIo.overOffsets(device, false, blockSize, depth, offsets, pattern);
        Measurement r = runOnce(reads, count);
        return new Result(blockSize, count, (long) (w.seconds() * 1e9), (long) (r.seconds() * 1e9),
                reads.mismatches());
    }

    /**
     * A block's pattern, longs drawn from a generator seeded by its offset: written into {@code buffer}
     * ({@code fill}), or compared with what it holds.
     *
     * @return whether {@code buffer} holds the pattern (always true when filling)
     */
    private boolean pattern(MemorySegment buffer, long offset, boolean fill) {
        SplittableRandom r = new SplittableRandom(seed + offset);
        for (long i = 0; i < buffer.byteSize(); i += 8) {
            long expected = r.nextLong();
            if (fill) {
                buffer.set(ValueLayout.JAVA_LONG, i, expected);
            } else if (buffer.get(ValueLayout.JAVA_LONG, i) != expected) {
                return false;
            }
        }
        return true;
    }

    /** One pass of {@code count} operations; its buffers go back to the device's pool after. */
    private static Measurement runOnce(PipelinedIo pass, int count) throws IOException {
        try {
            return pass.runOps(count);
        } finally {
            pass.release();
        }
    }

    /** {@code count} distinct block offsets in the region, in random order; memory in proportion to count. */
    private long[] distinctOffsets(int blockSize, long regionStart, long regionBytes, int count) {
        long slots = regionBytes / blockSize;
        if (count < 0 || count > slots || count > MAX_BLOCKS) {
            throw new IllegalArgumentException(count + " blocks of " + blockSize + " bytes: must be 0.."
                    + Math.min(slots, MAX_BLOCKS) + " for a region of " + regionBytes + " bytes");
        }
        SplittableRandom r = new SplittableRandom(seed ^ blockSize);
        long[] out = new long[count];
        if (count <= slots / 2) { // sparse: draw and reject repeats (fewer than two draws per block)
            Set<Long> taken = new HashSet<>(count * 2);
            for (int i = 0; i < count; ) {
                long slot = r.nextLong(slots);
                if (taken.add(slot)) {
                    out[i++] = regionStart + slot * blockSize;
                }
            }
            return out;
        }
        int[] perm = new int[(int) slots]; // dense: slots < 2 x count, a partial Fisher-Yates shuffle
        for (int i = 0; i < perm.length; i++) {
            perm[i] = i;
        }
        for (int i = 0; i < count; i++) {
            int j = i + r.nextInt(perm.length - i);
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
            out[i] = regionStart + (long) perm[i] * blockSize;
        }
        return out;
    }
}
