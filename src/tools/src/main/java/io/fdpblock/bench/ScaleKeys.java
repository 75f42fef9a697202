package io.fdpblock.bench;

import io.fdpblock.l2.KeyCodec;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The keys and payloads of the scale benchmark, made from an entry number: LMCache-style keys
 * ({@link KeyCodec}: a model name, kv rank 0, a 32-byte chunk hash in hex, one of eight cache salts;
 * 112 characters) and payloads whose every 8-byte word derives from the entry number, so that a load
 * after the reopen can tell another entry's bytes from its own. Nothing is kept per entry.
 */
final class ScaleKeys {
    static final String MODEL = "Qwen/Qwen2.5-7B-Instruct";
    private static final String[] SALTS = {"tenant-00", "tenant-01", "tenant-02", "tenant-03", "tenant-04",
            "tenant-05", "tenant-06", "tenant-07"};

    private ScaleKeys() {}

    /** SplitMix64's finalizer: a bijection of the longs, so distinct entries get distinct hashes. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The 32-byte chunk hash of entry {@code i}: its first 8 bytes alone are unique per entry. */
    static byte[] chunkHash(long i) {
        byte[] h = new byte[32];
        for (int w = 0; w < 4; w++) {
            long v = mix(i + w * 0x9E3779B97F4A7C15L);
            for (int b = 0; b < 8; b++) {
                h[w * 8 + b] = (byte) (v >>> (56 - 8 * b));
            }
        }
        return h;
    }

    static String key(long i) {
        return KeyCodec.encode(MODEL, 0, chunkHash(i), SALTS[(int) (i % SALTS.length)], 0);
    }

    /** Fills {@code payload} with entry {@code i}'s bytes. */
    static void fill(MemorySegment payload, long i) {
        long seed = mix(i ^ 0x5DEECE66DL);
        for (long off = 0; off + 8 <= payload.byteSize(); off += 8) {
            payload.set(ValueLayout.JAVA_LONG_UNALIGNED, off, seed + off);
        }
    }

    /** Whether {@code payload} holds entry {@code i}'s bytes. */
    static boolean holds(MemorySegment payload, long i) {
        long seed = mix(i ^ 0x5DEECE66DL);
        for (long off = 0; off + 8 <= payload.byteSize(); off += 8) {
            if (payload.get(ValueLayout.JAVA_LONG_UNALIGNED, off) != seed + off) {
                return false;
            }
        }
        return true;
    }
}
