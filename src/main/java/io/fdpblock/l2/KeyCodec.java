package io.fdpblock.l2;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * The encoded form of an {@link ObjectKey}, byte-compatible with LMCache's raw_block (state v1).
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

    /** The parts of an encoded key. */
    public record Parts(String modelName, int kvRank, byte[] chunkHash, String cacheSalt, int objectGroupId) {}

    /**
     * Splits an encoded key (ours or LMCache's K2 form) back into its parts.
     *
     * @throws IllegalArgumentException when {@code encoded} is not of that form
     */
    public static Parts decode(String encoded) {
        int group = 0;
        String s = encoded;
        int slash = s.lastIndexOf("/g");
        if (slash >= 0) {
            try {
                group = Integer.parseInt(s.substring(slash + 2));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("encoded key '" + encoded + "': bad group suffix");
            }
            s = s.substring(0, slash);
        }
        int a = s.indexOf('@');
        int b = a < 0 ? -1 : s.indexOf('@', a + 1);
        if (a < 0 || b < 0 || !s.startsWith("0x", a + 1) || b - a - 3 != 8) {
            throw new IllegalArgumentException("encoded key '" + encoded + "' is not <model>@0x<8 hex>@<hash>[@<salt>]");
        }
        int c = s.indexOf('@', b + 1);
        String hash = c < 0 ? s.substring(b + 1) : s.substring(b + 1, c);
        String salt = c < 0 ? "" : s.substring(c + 1);
        try {
            int rank = Integer.parseUnsignedInt(s.substring(a + 3, b), 16);
            return new Parts(percentDecode(s.substring(0, a)), rank, HEX.parseHex(hash), salt, group);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("encoded key '" + encoded + "': " + e.getMessage(), e);
        }
    }

    private static String percentDecode(String s) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == '%' && i + 2 < s.length()) {
                out.write(Integer.parseInt(s, i + 1, i + 3, 16));
                i += 2;
            } else {
                out.write(ch);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private static void percentEncode(String s, StringBuilder out) {
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
}
