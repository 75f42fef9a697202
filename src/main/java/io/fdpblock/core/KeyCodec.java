package io.fdpblock.core;

import org.bouncycastle.crypto.digests.Blake2bDigest;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * The store's key format and slot identity, byte-compatible with LMCache's raw_block (state v1).
 *
 * <p>Encoded key: {@code <model>@0x<kvRank, 8 lowercase hex>@<chunkHash lowercase hex>}, then
 * {@code @<cacheSalt>} when the salt is not empty. The model name is percent-encoded with only
 * {@code A-Z a-z 0-9 _ . - ~} left as they are (Python's {@code quote(s, safe="")}; not URLEncoder,
 * which turns a space into '+'). LMCache leaves the object group out, so keys that differ only by
 * group would collide there; here a non-zero group adds {@code /g<id>}, a suffix no LMCache key can
 * have ('/' is neither in a percent-encoded model, a hex hash, nor an allowed salt). Group-0 keys are
 * byte-identical to LMCache's.
 */
public final class KeyCodec {
    private KeyCodec() {}

    private static final HexFormat HEX = HexFormat.of();
    private static final char[] UPPER_HEX = "0123456789ABCDEF".toCharArray();

    public static String encode(String modelName, int kvRank, byte[] chunkHash, String cacheSalt, int objectGroupId) {
        if (objectGroupId < 0) {
            throw new IllegalArgumentException("object group id " + objectGroupId + " must be >= 0");
        }
        StringBuilder sb = new StringBuilder(modelName.length() + 2 * chunkHash.length + 32);
        percentEncode(modelName, sb);
        sb.append("@0x");
        String rank = Integer.toHexString(kvRank);
        sb.append("0".repeat(8 - rank.length())).append(rank);
        sb.append('@').append(HEX.formatHex(chunkHash));
        if (cacheSalt != null && !cacheSalt.isEmpty()) {
            sb.append('@').append(cacheSalt);
        }
        if (objectGroupId != 0) {
            sb.append("/g").append(objectGroupId);
        }
        return sb.toString();
    }

    static void percentEncode(String s, StringBuilder out) {
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xFF;
            if (c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.'
                    || c == '-' || c == '~') {
                out.append((char) c);
            } else {
                out.append('%').append(UPPER_HEX[c >> 4]).append(UPPER_HEX[c & 0xF]);
            }
        }
    }

    /**
     * BLAKE2b with the digest-length parameter set to 8 (not a truncated 64-byte digest) over the UTF-8
     * bytes of the encoded key, read little-endian: what slot headers carry.
     */
    public static long slotIdentity(String encodedKey) {
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
