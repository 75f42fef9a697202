package io.fdpblock.core;

import com.dynatrace.hash4j.hashing.HashValue128;
import io.fdpblock.util.KeyHash;

/**
 * A key as one operation carries it: its text, and its 128-bit hash ({@link KeyHash}) computed at most
 * once, by the first index or metadata writer that asks for it (an index that keeps the keys themselves
 * never does). A put, a load or a delete hands the same instance to every step, so a key is hashed once
 * per operation. Not thread-safe: one operation uses it at a time.
 */
public final class StoreKey {
    private final String text;
    private long h1;
    private long h2;
    private boolean hashed;

    /** @param text the encoded key */
    public StoreKey(String text) {
        this.text = text;
    }

    /** The encoded key. */
    public String text() {
        return text;
    }

    /** The high 64 bits of the key's hash. */
    public long h1() {
        hash();
        return h1;
    }

    /** The low 64 bits of the key's hash. */
    public long h2() {
        hash();
        return h2;
    }

    private void hash() {
        if (!hashed) {
            HashValue128 h = KeyHash.of(text);
            h1 = h.getMostSignificantBits();
            h2 = h.getLeastSignificantBits();
            hashed = true;
        }
    }

    @Override
    public String toString() {
        return text;
    }
}
