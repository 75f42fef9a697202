package io.fdpblock.core;

import java.util.List;

/**
 * The keys of one call (a lookup, an unlock, a delete), read by position: each key's text and, when the
 * caller keeps them, each key's 128-bit hash ({@link StoreKey}), which the store then takes instead of
 * computing it. A caller that holds its keys in objects of its own hands them over as they are, with no
 * copy and no object per key (the L2 adapter passes its {@code ObjectKey}s, which keep their hashes). A
 * batch is read only while the call it was given to runs.
 */
public interface KeyBatch {
    /** How many keys. */
    int size();

    /** The encoded key at {@code i}. */
    String text(int i);

    /**
     * Whether {@link #h1}/{@link #h2} give each key's hash (the XXH3-128 of its text's chars); when not,
     * the store computes the hashes it needs from the texts.
     */
    boolean carriesHashes();

    /** The high 64 bits of the hash of key {@code i} (only when {@link #carriesHashes()}). */
    long h1(int i);

    /** The low 64 bits of the hash of key {@code i} (only when {@link #carriesHashes()}). */
    long h2(int i);

    /** The key at {@code i} as one operation carries it, with its hash when this batch carries hashes. */
    default StoreKey key(int i) {
        return carriesHashes() ? new StoreKey(text(i), h1(i), h2(i)) : new StoreKey(text(i));
    }

    /** Keys without their hashes: the store computes those it needs. */
    static KeyBatch of(List<String> keys) {
        return new KeyBatch() {
            @Override
            public int size() {
                return keys.size();
            }

            @Override
            public String text(int i) {
                return keys.get(i);
            }

            @Override
            public boolean carriesHashes() {
                return false;
            }

            @Override
            public long h1(int i) {
                throw new UnsupportedOperationException("a batch of texts carries no hashes");
            }

            @Override
            public long h2(int i) {
                throw new UnsupportedOperationException("a batch of texts carries no hashes");
            }
        };
    }
}
