package io.fdpblock.docs;

import io.fdpblock.l2.ObjectKey;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * What every README example is compiled into: the example is the body of {@link #run()} of a subclass
 * (see {@link ReadmeExamples}). The names an example may use without declaring them are the fields
 * below; an example that declares a local variable of the same name simply shadows the field.
 */
public abstract class ReadmeExample {
    /** Bytes of each placeholder buffer: one 64 KiB chunk, as in the README's L1 configuration. */
    public static final int CHUNK_BYTES = 64 << 10;
    /** How many keys (and chunks) {@link #keys} holds. */
    public static final int KEY_COUNT = 4;

    /** A model's kv rank, as an engine passes it. */
    protected int kvRank;
    /** One chunk's hash (32 bytes). */
    protected byte[] chunkHash;
    /** {@link #KEY_COUNT} keys of one model with distinct chunk hashes, in prefix order. */
    protected List<ObjectKey> keys;
    /** One {@link #CHUNK_BYTES} chunk per key, each filled with its own pattern. */
    protected List<MemorySegment> chunks;
    /** A {@link #CHUNK_BYTES} payload to store, filled with a pattern. */
    protected MemorySegment payload;
    /** A {@link #CHUNK_BYTES} buffer to load into (zeros). */
    protected MemorySegment destination;

    /** The example's code. */
    public abstract void run() throws Exception;

    /** Fills the placeholders; buffers come from {@code arena} (shared: I/O completes on other threads). */
    final void prepare(Arena arena) {
        kvRank = 0;
        chunkHash = hash(0);
        keys = new ArrayList<>();
        chunks = new ArrayList<>();
        for (int k = 0; k < KEY_COUNT; k++) {
            keys.add(ObjectKey.of("readme/model", kvRank, hash(k)));
            chunks.add(pattern(arena, k + 1));
        }
        payload = pattern(arena, 99);
        destination = arena.allocate(CHUNK_BYTES, 4096);
    }

    private static byte[] hash(int k) {
        byte[] h = new byte[32];
        for (int i = 0; i < h.length; i++) {
            h[i] = (byte) (k * 131 + i * 7 + 1);
        }
        return h;
    }

    private static MemorySegment pattern(Arena arena, int seed) {
        MemorySegment s = arena.allocate(CHUNK_BYTES, 4096);
        for (long i = 0; i < CHUNK_BYTES; i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, (i + 1) * 0x9E3779B97F4A7C15L * seed);
        }
        return s;
    }
}
