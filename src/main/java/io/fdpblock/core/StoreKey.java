package io.fdpblock.core;

import com.dynatrace.hash4j.hashing.HashValue128;
import io.fdpblock.util.KeyHash;

import java.util.Objects;

/**
 * A key as one operation carries it: its text, and its 128-bit hash (XXH3-128 of its chars, the key's
 * identity in a fdpblock_v2 store). The hash is either handed over with it, by a caller that keeps its
 * keys' hashes (the L2 adapter's keys do), or computed at most once, by the first index or metadata writer
 * that asks for it (an index that keeps the keys themselves never does). A put, a load or a delete hands
 * the same instance to every step, so a key is hashed at most once per operation, and not at all when
 * its hash came with it.
 *
 * <p>Thread-safe: the computed hash is one immutable object in a field read without a lock (two threads
 * may both compute it, to the same value), so a request that holds a key may be shared.
 */
public final class StoreKey {
    private final String text;
    /** The hash handed over with the key (when {@link #carried}). */
    private final long carriedH1;
    private final long carriedH2;
    private final boolean carried;
    /** The hash computed from the text on first use (null: not yet), when none was handed over. */
    private HashValue128 computed;

    /** @param text the encoded key; its hash is computed when the store needs it */
    public StoreKey(String text) {
        this.text = text;
        this.carriedH1 = 0;
        this.carriedH2 = 0;
        this.carried = false;
    }

    /**
     * A key with its hash, which the store takes as it is: it must be the XXH3-128 hash of {@code text}'s
     * chars, as an {@code ObjectKey} computes it ({@code encodedHashHigh()}, {@code encodedHashLow()}).
     *
     * @param text the encoded key
     * @param h1 the high 64 bits of its hash
     * @param h2 the low 64 bits of its hash
     */
    public StoreKey(String text, long h1, long h2) {
        this.text = text;
        this.carriedH1 = h1;
        this.carriedH2 = h2;
        this.carried = true;
    }

    /** The encoded key. */
    public String text() {
        return text;
    }

    /** The high 64 bits of the key's hash. */
    public long h1() {
        return carried ? carriedH1 : computed().getMostSignificantBits();
    }

    /** The low 64 bits of the key's hash. */
    public long h2() {
        return carried ? carriedH2 : computed().getLeastSignificantBits();
    }

    private HashValue128 computed() {
        HashValue128 h = computed;
        if (h == null) {
            h = KeyHash.of(text);
            computed = h;
        }
        return h;
    }

    /** Keys are equal when their texts are (the hash is the text's). */
    @Override
    public boolean equals(Object o) {
        return o instanceof StoreKey k && Objects.equals(text, k.text);
    }

    @Override
    public int hashCode() {
        return Objects.hashCode(text);
    }

    @Override
    public String toString() {
        return text;
    }
}
