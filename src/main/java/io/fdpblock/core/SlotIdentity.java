package io.fdpblock.core;

import io.fdpblock.util.Blake2b64;

import java.nio.charset.StandardCharsets;

/** The identity a slot header carries for the key it holds (LMCache raw_block state v1). */
public final class SlotIdentity {
    private SlotIdentity() {}

    /**
     * BLAKE2b with the digest-length parameter set to 8 (not a truncated 64-byte digest) over the UTF-8
     * bytes of the encoded key, read little-endian.
     */
    public static long of(String encodedKey) {
        byte[] out = Blake2b64.digest(encodedKey.getBytes(StandardCharsets.UTF_8));
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (out[i] & 0xFF);
        }
        return v;
    }
}
