package io.fdpblock.core;

import org.bouncycastle.crypto.digests.Blake2bDigest;

import java.nio.charset.StandardCharsets;

/** The identity a slot header carries for the key it holds (LMCache raw_block state v1). */
public final class SlotIdentity {
    private SlotIdentity() {}

    /**
     * BLAKE2b with the digest-length parameter set to 8 (not a truncated 64-byte digest) over the UTF-8
     * bytes of the encoded key, read little-endian.
     */
    public static long of(String encodedKey) {
        byte[] in = encodedKey.getBytes(StandardCharsets.UTF_8);
        Blake2bDigest d = new Blake2bDigest(64);
        d.update(in, 0, in.length);
        byte[] out = new byte[8];
        d.doFinal(out, 0);
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (out[i] & 0xFF);
        }
        return v;
    }
}
