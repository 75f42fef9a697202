package io.fdpblock.core;

import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.l2.KeyCodec;
import java.lang.foreign.MemorySegment;

/**
 * One key to store.
 *
 * @param key the encoded key ({@link KeyCodec#encode})
 * @param payload the bytes to store (length = {@code byteSize()}); zero-copy when its address and
 *        length are multiples of {@code block_align}, otherwise copied once into an aligned buffer
 * @param meta what LMCache keeps with the entry (shape, dtype, format, cached positions); may be null
 * @param placementId FDP placement id 1..65535 for the slot's header and payload, or null for none
 */
public record PutRequest(String key, MemorySegment payload, ObjectMeta meta, Integer placementId) {
    public PutRequest {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("put: key must be a non-empty encoded key");
        }
        if (payload == null) {
            throw new IllegalArgumentException("put " + key + ": payload is null");
        }
    }

    public static PutRequest of(String key, MemorySegment payload) {
        return new PutRequest(key, payload, null, null);
    }

    public PutRequest withPlacement(int id) {
        return new PutRequest(key, payload, meta, id);
    }

    public PutRequest withMeta(ObjectMeta m) {
        return new PutRequest(key, payload, m, placementId);
    }
}
