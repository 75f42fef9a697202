package io.fdpblock.l2;

import com.dynatrace.hash4j.hashing.HashValue128;
import io.fdpblock.util.KeyHash;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The key of a KV-cache chunk; a value (equality by all fields).
 *
 * <p>{@code kvRank} packs {@code world << 24 | global << 16 | localWorld << 8 | local}. The model name
 * may not contain '@'; the cache salt may not contain '@', '/', '\' or NUL and is at most 128 chars.
 *
 * <p>Immutable, and shared between threads: its encoded form and the store's 128-bit hash of it are
 * computed at most once per instance, on first use, so that a lookup, the load and the unlock of the
 * same key hash it once between them.
 */
public final class ObjectKey {
    public static final int MAX_CACHE_SALT_CHARS = 128;

    private final byte[] chunkHash;
    private final String modelName;
    private final int kvRank;
    private final int objectGroupId;
    private final String cacheSalt;
    private String encoded;
    /**
     * The store's hash of {@link #encoded()}, computed once (null: not yet). One immutable object, so that a
     * thread reading the field without a lock sees either null or both halves (a racy single check, as
     * {@code String.hash}): two threads may both compute it, to the same value.
     */
    private HashValue128 encodedHash;
    /** {@link #hashCode()}, computed once (0: not yet); L1 and the controllers look keys up in maps often. */
    private int hash;

    private ObjectKey(String modelName, int kvRank, byte[] chunkHash, int objectGroupId, String cacheSalt) {
        if (modelName == null || modelName.isEmpty() || modelName.indexOf('@') >= 0) {
            throw new IllegalArgumentException("model name '" + modelName + "' must be non-empty and without '@'");
        }
        if (chunkHash == null) {
            throw new IllegalArgumentException("chunk hash must not be null");
        }
        if (objectGroupId < 0) {
            throw new IllegalArgumentException("object group id " + objectGroupId + " must be >= 0");
        }
        if (cacheSalt == null) {
            throw new IllegalArgumentException("cache salt must not be null (use \"\" for none)");
        }
        if (cacheSalt.length() > MAX_CACHE_SALT_CHARS) {
            throw new IllegalArgumentException("cache salt of " + cacheSalt.length() + " chars exceeds "
                    + MAX_CACHE_SALT_CHARS);
        }
        for (int i = 0; i < cacheSalt.length(); i++) {
            char c = cacheSalt.charAt(i);
            if (c == '@' || c == '/' || c == '\\' || c == 0) {
                throw new IllegalArgumentException("cache salt '" + cacheSalt.replace("\0", "\\0")
                        + "' contains '" + (c == 0 ? "NUL" : String.valueOf(c)) + "', which is not allowed (@ / \\ NUL)");
            }
        }
        this.modelName = modelName;
        this.kvRank = kvRank;
        this.chunkHash = chunkHash.clone();
        this.objectGroupId = objectGroupId;
        this.cacheSalt = cacheSalt;
    }

    public static ObjectKey of(String modelName, int kvRank, byte[] chunkHash) {
        return new ObjectKey(modelName, kvRank, chunkHash, 0, "");
    }

    /** The key a store encoded (see {@link KeyCodec}). */
    public static ObjectKey fromEncoded(String encoded) {
        KeyCodec.Parts p = KeyCodec.decode(encoded);
        return new ObjectKey(p.modelName(), p.kvRank(), p.chunkHash(), p.objectGroupId(), p.cacheSalt());
    }

    public ObjectKey withCacheSalt(String salt) {
        return new ObjectKey(modelName, kvRank, chunkHash, objectGroupId, salt);
    }

    public ObjectKey withObjectGroupId(int group) {
        return new ObjectKey(modelName, kvRank, chunkHash, group, cacheSalt);
    }

    public byte[] chunkHash() {
        return chunkHash.clone();
    }

    public String modelName() {
        return modelName;
    }

    public int kvRank() {
        return kvRank;
    }

    public int objectGroupId() {
        return objectGroupId;
    }

    public String cacheSalt() {
        return cacheSalt;
    }

    /** The store's encoded form (computed once). */
    public String encoded() {
        String e = encoded;
        if (e == null) {
            e = KeyCodec.encode(modelName, kvRank, chunkHash, cacheSalt, objectGroupId);
            encoded = e;
        }
        return e;
    }

    /**
     * The high 64 bits of the 128-bit hash of {@link #encoded()} (XXH3-128 of its chars): the key's identity
     * in a fdpblock_v2 store, computed once per instance; a store that gets it with the key does not compute
     * it again.
     */
    public long encodedHashHigh() {
        return encodedHash().getMostSignificantBits();
    }

    /** The low 64 bits of the hash whose high bits {@link #encodedHashHigh()} gives. */
    public long encodedHashLow() {
        return encodedHash().getLeastSignificantBits();
    }

    private HashValue128 encodedHash() {
        HashValue128 h = encodedHash;
        if (h == null) {
            h = KeyHash.of(encoded());
            encodedHash = h;
        }
        return h;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ObjectKey k && kvRank == k.kvRank && objectGroupId == k.objectGroupId
                && modelName.equals(k.modelName) && cacheSalt.equals(k.cacheSalt) && Arrays.equals(chunkHash, k.chunkHash);
    }

    @Override
    public int hashCode() {
        int h = hash;
        if (h == 0) {
            h = Objects.hash(modelName, kvRank, objectGroupId, cacheSalt) * 31 + Arrays.hashCode(chunkHash);
            hash = h;
        }
        return h;
    }

    @Override
    public String toString() {
        return "ObjectKey[" + modelName + ", rank=0x" + Integer.toHexString(kvRank) + ", hash="
                + HexFormat.of().formatHex(chunkHash) + (cacheSalt.isEmpty() ? "" : ", salt=" + cacheSalt)
                + (objectGroupId == 0 ? "" : ", group=" + objectGroupId) + "]";
    }
}
