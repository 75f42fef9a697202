package io.fdpblock.l2;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.fuzz.Fuzzing;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Encoded keys as they come back from a checkpoint or an LMCache store: {@link KeyCodec#decode} and
 * {@link ObjectKey#fromEncoded}. Input: the key, read twice: as UTF-8, and as raw UTF-16 code units
 * (JSON escapes can carry any char, unpaired surrogates included). Documented: IllegalArgumentException
 * with a message. A key that decodes is canonical after one round: encoding it and decoding that gives
 * the same key.
 */
public class KeyCodecFuzzTest {
    @FuzzTest
    void key(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        roundTrip(new String(input, StandardCharsets.UTF_8));
        char[] units = new char[input.length / 2];
        for (int i = 0; i < units.length; i++) {
            units[i] = (char) (input[2 * i] & 0xFF | (input[2 * i + 1] & 0xFF) << 8);
        }
        roundTrip(new String(units));
    }

    private static void roundTrip(String encoded) {
        try {
            KeyCodec.decode(encoded);
        } catch (IllegalArgumentException e) {
            Fuzzing.requireMessage(e);
        }
        ObjectKey k;
        try {
            k = ObjectKey.fromEncoded(encoded);
        } catch (IllegalArgumentException e) {
            Fuzzing.requireMessage(e);
            return;
        }
        String canonical = k.encoded();
        ObjectKey again = ObjectKey.fromEncoded(canonical);
        if (!again.equals(k) || !again.encoded().equals(canonical)) {
            throw Fuzzing.wrong("key '" + canonical + "' decoded again", again, k);
        }
        KeyCodec.Parts p = KeyCodec.decode(canonical);
        if (!p.modelName().equals(k.modelName()) || p.kvRank() != k.kvRank()
                || !Arrays.equals(p.chunkHash(), k.chunkHash()) || !p.cacheSalt().equals(k.cacheSalt())
                || p.objectGroupId() != k.objectGroupId()) {
            throw Fuzzing.wrong("parts of '" + canonical + "'", p, k);
        }
    }
}
