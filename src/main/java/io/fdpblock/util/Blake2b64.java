package io.fdpblock.util;

import org.bouncycastle.crypto.digests.Blake2bDigest;

/**
 * BLAKE2b with the digest-length parameter set to 8 bytes (not a truncated 64-byte digest), as Python's
 * {@code hashlib.blake2b(data, digest_size=8)}.
 */
public final class Blake2b64 {
    private Blake2b64() {}

    /** The 8 digest bytes of {@code in}; how to read them as a number is the caller's format. */
    public static byte[] digest(byte[] in) {
        Blake2bDigest d = new Blake2bDigest(64);
        d.update(in, 0, in.length);
        byte[] out = new byte[8];
        d.doFinal(out, 0);
        return out;
    }
}
