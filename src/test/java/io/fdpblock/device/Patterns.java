package io.fdpblock.device;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/** Deterministic contents, so a read can be checked without keeping what was written. */
final class Patterns {
    private Patterns() {}

    static void fill(MemorySegment seg, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = seg.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        for (; i < n; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    /** @return -1 when {@code seg} holds the pattern of {@code seed}, else the first differing byte offset */
    static long mismatch(MemorySegment seg, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = seg.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            long expected = r.nextLong();
            if (seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != expected) {
                for (int b = 0; b < 8; b++) {
                    if (seg.get(ValueLayout.JAVA_BYTE, i + b) != (byte) (expected >>> (8 * b))) {
                        return i + b;
                    }
                }
            }
        }
        for (; i < n; i++) {
            if (seg.get(ValueLayout.JAVA_BYTE, i) != (byte) r.nextInt()) {
                return i;
            }
        }
        return -1;
    }
}
