package io.fdpblock.core.v1;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.core.LayoutMismatch;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.v1.CheckpointCodec;
import io.fdpblock.fuzz.Fuzzing;
import io.fdpblock.l2.ObjectMeta;

import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The checkpoint payload (compact JSON) as recovery reads it: {@link CheckpointCodec#decode}, then
 * {@link CheckpointCodec#layoutMismatch} against a configured layout. Input: the payload bytes.
 *
 * <p>Documented: {@code decode} throws IOException (with a message) for bytes that are not a JSON object;
 * {@code layoutMismatch} throws nothing. Checked against the JSON itself: every number the store uses
 * (next_slot, offset, size, shape, cached_positions) is the one written or absent, never a truncated or
 * rounded one, and a layout is accepted only when every field present equals the configured value exactly.
 */
public class CheckpointPayloadFuzzTest {
    /** A store's layout: 4 KiB blocks and headers, 68 KiB slots, an 8 MiB meta area. */
    static final CheckpointCodec.Layout LAYOUT = new CheckpointCodec.Layout("/var/tmp/fuzz.img", 1L << 30, 4096,
            4096, 69632, 8L << 20, 8L << 20);

    @FuzzTest
    void payload(byte[] input) {
        check(input);
    }

    public static void check(byte[] payload) {
        CheckpointCodec.Decoded d;
        try {
            d = CheckpointCodec.decode(payload);
        } catch (IOException e) {
            Fuzzing.requireMessage(e);
            return;
        }
        JsonNode root = d.root();
        if (root == null || !root.isObject()) {
            throw Fuzzing.wrong("root", root, "a JSON object (else decode must throw)");
        }
        Long next = exactLong(root.get("next_slot"));
        if (!Objects.equals(d.nextSlot(), next)) {
            throw Fuzzing.wrong("next_slot", d.nextSlot(), root.get("next_slot"));
        }
        checkEntries(root.get("entries"), d.entries());
        LayoutMismatch mismatch = CheckpointCodec.layoutMismatch(root, LAYOUT);
        if (mismatch == null) {
            checkLayoutAccepted(root);
        } else if (mismatch.field().isBlank() || mismatch.configured().isBlank()) {
            throw new AssertionError("layout mismatch without saying which field and values: " + mismatch);
        }
    }

    /** One entry per object-valued member of "entries", in order, with its numbers as written. */
    private static void checkEntries(JsonNode es, List<CheckpointCodec.RawEntry> decoded) {
        List<Map.Entry<String, JsonNode>> expected = new ArrayList<>();
        if (es != null && es.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = es.properties().iterator(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (e.getValue().isObject()) {
                    expected.add(e);
                }
            }
        }
        if (decoded.size() != expected.size()) {
            throw Fuzzing.wrong("entry count", decoded.size(), expected.size());
        }
        for (int i = 0; i < expected.size(); i++) {
            CheckpointCodec.RawEntry re = decoded.get(i);
            String key = expected.get(i).getKey();
            JsonNode v = expected.get(i).getValue();
            if (!re.key().equals(key)) {
                throw Fuzzing.wrong("entry " + i + " key", re.key(), key);
            }
            // An offset or size that is not an exact 64-bit integer reads as 0, which recovery skips.
            long offset = Objects.requireNonNullElse(exactLong(v.get("offset")), 0L);
            long size = Objects.requireNonNullElse(exactLong(v.get("size")), 0L);
            if (re.offset() != offset || re.size() != size) {
                throw Fuzzing.wrong("entry '" + key + "' offset/size", re.offset() + "/" + re.size(),
                        v.get("offset") + "/" + v.get("size"));
            }
            ObjectMeta m = re.meta();
            if (m == null || !Objects.equals(m.shape(), exactInts(v.get("shape")))
                    || !Objects.equals(m.cachedPositions(), exactInts(v.get("cached_positions")))) {
                throw Fuzzing.wrong("entry '" + key + "' shape/cached_positions", m,
                        v.get("shape") + "/" + v.get("cached_positions"));
            }
        }
    }

    /** The layout was accepted: the version is 1 and every layout field present is the configured value. */
    private static void checkLayoutAccepted(JsonNode root) {
        if (!exactly(root.get("version"), 1)) {
            throw Fuzzing.wrong("accepted version", root.get("version"), "1");
        }
        Object[][] fields = {
                {"block_align", (long) LAYOUT.blockAlign()}, {"header_bytes", (long) LAYOUT.headerBytes()},
                {"slot_bytes", LAYOUT.slotBytes()}, {"meta_total_bytes", LAYOUT.metaTotalBytes()},
                {"meta_version", (long) RawBlockCoreConfig.META_VERSION}, {"data_base_offset", LAYOUT.dataBaseOffset()}};
        for (Object[] f : fields) {
            JsonNode n = root.get((String) f[0]);
            if (n != null && !n.isNull() && !exactly(n, (Long) f[1])) {
                throw Fuzzing.wrong("accepted " + f[0], n, f[1]);
            }
        }
        JsonNode magic = root.get("meta_magic");
        if (magic != null && !(magic.isTextual() && magic.textValue().equals(RawBlockCoreConfig.META_MAGIC))) {
            throw Fuzzing.wrong("accepted meta_magic", magic, RawBlockCoreConfig.META_MAGIC);
        }
    }

    private static boolean exactly(JsonNode n, long value) {
        return n != null && n.isIntegralNumber() && n.bigIntegerValue().equals(BigInteger.valueOf(value));
    }

    private static Long exactLong(JsonNode n) {
        return n != null && n.isIntegralNumber() && n.canConvertToLong() ? n.longValue() : null;
    }

    /** The list when every element is an exact 32-bit integer, else null (absent). */
    private static List<Integer> exactInts(JsonNode n) {
        if (n == null || !n.isArray()) {
            return null;
        }
        List<Integer> out = new ArrayList<>();
        for (JsonNode x : n) {
            if (!x.isIntegralNumber() || !x.canConvertToInt()) {
                return null;
            }
            out.add(x.intValue());
        }
        return out;
    }
}
