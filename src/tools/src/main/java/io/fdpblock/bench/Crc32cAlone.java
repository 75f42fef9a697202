package io.fdpblock.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * The CPU that the CRC32C of a chunk costs on its own, the way the store computes it at every put and
 * (with {@code verify_payload} "always") every load: {@link CRC32C} over a native buffer's
 * {@code ByteBuffer} view. One thread, its own CPU time (a shared machine's other work does not count),
 * after a warm-up that lets the JIT compile the loop and its intrinsic. The chunks cycle through a region
 * larger than the CPU's caches, so each is read from memory, as a chunk the device has just written by
 * DMA would be; the same chunk over and over (from cache) is measured too. Set beside the adapter's
 * figures, it says how much of the adapter's CPU per byte is the checksum. The CPU a shared machine
 * gives one thread changes from minute to minute, so the bench measures it again beside every round of
 * every case ({@link #measure(long)} on one region, allocated once).
 */
final class Crc32cAlone implements AutoCloseable {
    /** Larger than any last-level cache here. */
    static final long REGION_BYTES = 256L << 20;
    /** The first measurement's warm-up: the JIT compiles the loop and its intrinsic. */
    private static final long FIRST_WARMUP_NANOS = 200_000_000L;
    /** Later ones': caches and the core's clock back to the checksum's steady state. */
    private static final long WARMUP_NANOS = 20_000_000L;

    private final Arena arena;
    private final MemorySegment region;
    private final int chunkBytes;
    private final long chunks;
    private boolean warm;

    private Crc32cAlone(int chunkBytes, long regionBytes) {
        this.chunkBytes = chunkBytes;
        this.chunks = Math.max(1, regionBytes / chunkBytes);
        this.arena = Arena.ofConfined();
        this.region = arena.allocate(chunks * chunkBytes, 4096);
        SplittableRandom r = new SplittableRandom(7);
        for (long o = 0; o + 8 <= region.byteSize(); o += 8) {
            region.set(ValueLayout.JAVA_LONG, o, r.nextLong());
        }
    }

    /** A region of {@code regionBytes} of random bytes to checksum in {@code chunkBytes} chunks. */
    static Crc32cAlone open(int chunkBytes, long regionBytes) {
        return new Crc32cAlone(chunkBytes, regionBytes);
    }

    /** One measurement on a region of its own, freed after. */
    static Measurement measure(int chunkBytes, long regionBytes, long nanos) {
        try (Crc32cAlone c = open(chunkBytes, regionBytes)) {
            return c.measure(nanos);
        }
    }

    /**
     * Checksums chunks for about {@code nanos}, cycling through the region: ops = chunks; extra
     * {@code cached_mb_per_cpu_sec}: the same for {@code nanos / 2} with one chunk over and over.
     */
    Measurement measure(long nanos) {
        int sink = run(region, chunkBytes, 1, warm ? WARMUP_NANOS : FIRST_WARMUP_NANOS)[0]; // not counted
        warm = true;
        long cpu0 = CpuClock.threadCpuNanos();
        long t0 = System.nanoTime();
        int[] done = run(region, chunkBytes, chunks, nanos);
        long t1 = System.nanoTime();
        long cpu1 = CpuClock.threadCpuNanos();
        long c0 = CpuClock.threadCpuNanos();
        int[] hot = run(region, chunkBytes, 1, nanos / 2);
        long c1 = CpuClock.threadCpuNanos();
        Measurement m = new Measurement(done[1], (long) done[1] * chunkBytes, (t1 - t0) / 1e9,
                cpu0 < 0 || cpu1 < 0 ? Double.NaN : (cpu1 - cpu0) / 1e9);
        m.extra().put("what", "java.util.zip.CRC32C over " + chunkBytes + "-byte chunks of a native " + (chunks
                * chunkBytes >> 20) + " MiB region, one thread, its own CPU time");
        m.extra().put("mb_per_cpu_sec", Measurement.round(m.mbPerCpuSec(), 0));
        m.extra().put("cached_mb_per_cpu_sec", c0 < 0 || c1 <= c0 ? null
                : Measurement.round((double) hot[1] * chunkBytes / ((c1 - c0) / 1e9) / 1e6, 0));
        m.extra().put("checksum", sink ^ done[0] ^ hot[0]); // kept, so that the loops are not optimised away
        return m;
    }

    @Override
    public void close() {
        arena.close();
    }

    /** @return {xor of the checksums, chunks done}, cycling over the first {@code chunks} chunks */
    private static int[] run(MemorySegment region, int chunkBytes, long chunks, long nanos) {
        long end = System.nanoTime() + nanos;
        int x = 0;
        int n = 0;
        long next = 0;
        do {
            for (int i = 0; i < 16; i++) {
                CRC32C c = new CRC32C();
                c.update(region.asSlice(next * chunkBytes, chunkBytes).asByteBuffer());
                x ^= (int) c.getValue();
                n++;
                next = next + 1 == chunks ? 0 : next + 1;
            }
        } while (System.nanoTime() < end);
        return new int[] {x, n};
    }
}
