package io.fdpblock.core;

import io.fdpblock.l2.KeyCodec;
import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.nvme.PlacementId;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/**
 * One key to store.
 *
 * @param storeKey the encoded key ({@link KeyCodec#encode}), with its hash when the caller keeps it
 *        ({@link StoreKey}): well-formed Unicode (no unpaired surrogate) of at most {@value #MAX_KEY_BYTES}
 *        UTF-8 bytes, so that every checkpoint can hold it
 * @param payload the bytes to store (length = {@code byteSize()}); zero-copy when its address and
 *        length are multiples of {@code block_align}, otherwise copied once into an aligned buffer
 * @param meta what LMCache keeps with the entry (shape, dtype, format, cached positions); may be null
 * @param placement the FDP placement id for the slot's header and payload ({@link PlacementId#NONE}: none)
 */
public record PutRequest(StoreKey storeKey, MemorySegment payload, ObjectMeta meta, PlacementId placement) {
    /** The longest key the store takes, in UTF-8 bytes (LMCache's keys are a few hundred at most). */
    public static final int MAX_KEY_BYTES = 1024;

    /** @throws IllegalArgumentException for a key the store cannot hold, naming why and the limit */
    public PutRequest {
        String key = storeKey == null ? null : storeKey.text();
        checkKey(key);
        if (payload == null) {
            throw new IllegalArgumentException("put " + key + ": payload is null");
        }
        if (placement == null) {
            throw new IllegalArgumentException("put " + key + ": placement is null (use PlacementId.NONE for none)");
        }
    }

    /** @param key the encoded key, whose hash the store computes when it needs it */
    public PutRequest(String key, MemorySegment payload, ObjectMeta meta, PlacementId placement) {
        this(key == null ? null : new StoreKey(key), payload, meta, placement);
    }

    public static PutRequest of(String key, MemorySegment payload) {
        return new PutRequest(key, payload, null, PlacementId.NONE);
    }

    /** The encoded key. */
    public String key() {
        return storeKey.text();
    }

    /** @throws IllegalArgumentException for an id outside 0..65535 */
    public PutRequest withPlacement(int id) {
        return withPlacement(PlacementId.of(id));
    }

    public PutRequest withPlacement(PlacementId p) {
        return new PutRequest(storeKey, payload, meta, p);
    }

    public PutRequest withMeta(ObjectMeta m) {
        return new PutRequest(storeKey, payload, m, placement);
    }

    /**
     * The store's rule for keys: non-empty, well-formed UTF-16 (an unpaired surrogate has no UTF-8 form,
     * so its slot identity and checkpoint entry would not match), at most {@value #MAX_KEY_BYTES} UTF-8
     * bytes.
     */
    public static void checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("put: key must be a non-empty encoded key");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("put " + abbreviate(key) + ": the key has an unpaired surrogate"
                        + " (U+" + Integer.toHexString(c).toUpperCase() + " at index " + i + "), which UTF-8 cannot"
                        + " encode; keys must be well-formed Unicode");
            }
        }
        int bytes = key.length() <= MAX_KEY_BYTES / 3 ? key.length() : key.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("put " + abbreviate(key) + ": the key is " + bytes + " UTF-8 bytes,"
                    + " more than the " + MAX_KEY_BYTES + " the store takes; use a shorter model name or salt");
        }
    }

    private static String abbreviate(String key) {
        return key.length() <= 80 ? key : key.substring(0, 60) + "...(" + key.length() + " chars)";
    }
}
