package io.fdpblock.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * The CPU that the CRC32C of a chunk costs on its own, the way the store computes it at every put and
 * (with {@code verify_payload} "always") every load: {@link CRC32C} over a native buffer's
 * {@code ByteBuffer} view. One thread, its own CPU time (a shared machine's other work does not count),
 * after a warm-up that lets the JIT compile the loop and its intrinsic. Set beside the adapter's
 * figures, it says how much of the adapter's CPU per byte is the checksum.
 */
final class Crc32cAlone {
    private Crc32cAlone() {}

    /** Checksums a {@code chunkBytes} buffer over and over for about {@code nanos}: ops = chunks, bytes, CPU. */
    static Measurement measure(int chunkBytes, long nanos) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(chunkBytes, 4096);
            SplittableRandom r = new SplittableRandom(7);
            for (long o = 0; o + 8 <= chunkBytes; o += 8) {
                buf.set(ValueLayout.JAVA_LONG, o, r.nextLong());
            }
            int sink = run(buf, 200_000_000L)[0]; // warm-up, not counted
            long cpu0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            int[] done = run(buf, nanos);
            long t1 = System.nanoTime();
            long cpu1 = threads.getCurrentThreadCpuTime();
            Measurement m = new Measurement(done[1], (long) done[1] * chunkBytes, (t1 - t0) / 1e9,
                    cpu0 < 0 || cpu1 < 0 ? Double.NaN : (cpu1 - cpu0) / 1e9);
            m.extra().put("what", "java.util.zip.CRC32C over a native " + chunkBytes + "-byte buffer, one thread, its"
                    + " own CPU time");
            m.extra().put("checksum", sink ^ done[0]); // kept, so that the loop is not optimised away
            return m;
        }
    }

    /** @return {xor of the checksums, chunks done} */
    private static int[] run(MemorySegment buf, long nanos) {
        long end = System.nanoTime() + nanos;
        int x = 0;
        int n = 0;
        do {
            for (int i = 0; i < 16; i++) {
                CRC32C c = new CRC32C();
                c.update(buf.asByteBuffer());
                x ^= (int) c.getValue();
                n++;
            }
        } while (System.nanoTime() < end);
        return new int[] {x, n};
    }
}
