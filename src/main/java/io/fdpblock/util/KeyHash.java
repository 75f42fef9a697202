package io.fdpblock.util;

import com.dynatrace.hash4j.hashing.HashValue128;
import com.dynatrace.hash4j.hashing.Hasher128;
import com.dynatrace.hash4j.hashing.Hashing;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.LongAdder;

/**
 * The 128-bit hash of a key (XXH3-128 of its chars), its identity in the fdpblock_v2 index, log and
 * snapshots: the value must never change. Here, not in the store's package, because a key computes it
 * where it lives: an {@code ObjectKey} keeps its own, which the L2 adapter hands to the store with it.
 *
 * <p>Computed over the chars' UTF-16LE bytes, which hash4j hashes to the same value as the chars
 * ({@code KeyHashTest} checks it on every XXH3 size class). Its char path reads each 8-byte word
 * through four {@code charAt}s in a 2.5 KB method, and some JVM runs compiled it 3-4x slower
 * (most of a 1,000-key lookup's CPU); the byte path is steady and, with the copy, faster. The
 * copy goes through a per-thread scratch buffer so a lookup allocates nothing for it.
 */
public final class KeyHash {
    /** Keys up to this many chars are copied to the scratch buffer; longer ones (rare) take the char path. */
    static final int SCRATCH_CHARS = 512;
    private static final Hasher128 XXH3_128 = Hashing.xxh3_128();
    private static final ValueLayout.OfChar UTF16LE = ValueLayout.JAVA_CHAR_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);
    /** Set (to true) to count hashes for tests ({@link #computedCount()}); read once. */
    public static final String COUNT_PROPERTY = "fdpblock.test.countKeyHashes";
    /** Hashes computed, when counted; null otherwise, and the JIT drops the check as a constant. */
    private static final LongAdder COMPUTED = Boolean.getBoolean(COUNT_PROPERTY) ? new LongAdder() : null;

    private static final class Scratch {
        final char[] chars = new char[SCRATCH_CHARS];
        final byte[] bytes = new byte[2 * SCRATCH_CHARS];
        final MemorySegment bytesSegment = MemorySegment.ofArray(bytes);
    }

    private KeyHash() {}

    /** The XXH3-128 hash of {@code key}'s chars (as UTF-16LE bytes). */
    public static HashValue128 of(String key) {
        if (COMPUTED != null) {
            COMPUTED.increment();
        }
        int n = key.length();
        if (n > SCRATCH_CHARS) {
            return XXH3_128.hashCharsTo128Bits(key);
        }
        Scratch s = SCRATCH.get();
        key.getChars(0, n, s.chars, 0);
        MemorySegment.copy(s.chars, 0, s.bytesSegment, UTF16LE, 0, n);
        return XXH3_128.hashBytesTo128Bits(s.bytes, 0, 2 * n);
    }

    /**
     * How many hashes this JVM computed, for the tests that check a key is hashed once; -1 unless the
     * JVM started with {@value #COUNT_PROPERTY}=true (the library's test run sets it).
     */
    public static long computedCount() {
        return COMPUTED == null ? -1 : COMPUTED.sum();
    }
}
