package io.fdpblock.core.v1;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fdpblock.core.LayoutMismatch;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.l2.ObjectMeta;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The checkpoint payload, v1: compact UTF-8 JSON with the field order and escaping of LMCache's
 * {@code json.dumps(snapshot, separators=(",", ":"), ensure_ascii=True)}.
 */
public final class CheckpointCodec {
    private CheckpointCodec() {}

    private static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();
    /**
     * Reads what any valid checkpoint holds: Jackson's default limit on names (50,000 chars) would let
     * one long key make a whole checkpoint unreadable.
     */
    private static final ObjectMapper MAPPER = new ObjectMapper(JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNameLength(Integer.MAX_VALUE)
                    .maxStringLength(Integer.MAX_VALUE).build())
            .build());

    /** A committed entry as the checkpoint sees it. */
    public record SnapshotEntry(String key, long offset, long size, ObjectMeta meta) {}

    /** The layout a checkpoint was written for. */
    public record Layout(String devicePath, long capacityBytes, int blockAlign, int headerBytes, long slotBytes,
            long metaTotalBytes, long dataBaseOffset) {}

    public static byte[] encode(Layout layout, int nextSlot, List<SnapshotEntry> entries) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256 + entries.size() * 200);
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            g.writeStartObject();
            g.writeNumberField("version", 1);
            g.writeStringField("device_path", layout.devicePath());
            g.writeNumberField("capacity_bytes", layout.capacityBytes());
            g.writeNumberField("block_align", layout.blockAlign());
            g.writeNumberField("header_bytes", layout.headerBytes());
            g.writeNumberField("slot_bytes", layout.slotBytes());
            g.writeNumberField("meta_total_bytes", layout.metaTotalBytes());
            g.writeStringField("meta_magic", RawBlockCoreConfig.META_MAGIC);
            g.writeNumberField("meta_version", RawBlockCoreConfig.META_VERSION);
            g.writeNumberField("data_base_offset", layout.dataBaseOffset());
            g.writeNumberField("next_slot", nextSlot);
            g.writeObjectFieldStart("entries");
            for (SnapshotEntry e : entries) {
                g.writeObjectFieldStart(e.key());
                g.writeNumberField("offset", e.offset());
                g.writeNumberField("size", e.size());
                ObjectMeta m = e.meta();
                writeInts(g, "shape", m == null ? null : m.shape());
                g.writeFieldName("dtype");
                if (m == null || m.dtype() == null) {
                    g.writeNull();
                } else {
                    g.writeString(m.dtype());
                }
                g.writeFieldName("fmt");
                if (m == null || m.fmt() == null) {
                    g.writeNull();
                } else {
                    g.writeString(m.fmt());
                }
                writeInts(g, "cached_positions", m == null ? null : m.cachedPositions());
                g.writeEndObject();
            }
            g.writeEndObject();
            g.writeEndObject();
        }
        return out.toByteArray();
    }

    private static void writeInts(JsonGenerator g, String name, List<Integer> values) throws IOException {
        g.writeFieldName(name);
        if (values == null) {
            g.writeNull();
            return;
        }
        g.writeStartArray();
        for (int v : values) {
            g.writeNumber(v);
        }
        g.writeEndArray();
    }

    /** A decoded payload: layout fields as found (null when absent), next_slot and the raw entries. */
    public record Decoded(JsonNode root, Long nextSlot, List<RawEntry> entries) {}

    /** An entry as read, before the range checks. */
    public record RawEntry(String key, long offset, long size, ObjectMeta meta) {}

    public static Decoded decode(byte[] payload) throws IOException {
        JsonNode root = MAPPER.readTree(payload);
        if (root == null || !root.isObject()) {
            throw new IOException("checkpoint payload is not a JSON object");
        }
        JsonNode ns = root.get("next_slot");
        Long nextSlot = exactLong(ns);
        List<RawEntry> entries = new ArrayList<>();
        JsonNode es = root.get("entries");
        if (es != null && es.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = es.properties().iterator(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                JsonNode v = e.getValue();
                if (!v.isObject()) {
                    continue; // not an entry: skipped, like the reference
                }
                // 0 for an offset or size that is absent or not an exact integer: recovery skips the entry
                entries.add(new RawEntry(e.getKey(), Objects.requireNonNullElse(exactLong(v.get("offset")), 0L),
                        Objects.requireNonNullElse(exactLong(v.get("size")), 0L),
                        new ObjectMeta(ints(v.get("shape")), textOrNull(v.get("dtype")), textOrNull(v.get("fmt")),
                                ints(v.get("cached_positions")))));
            }
        }
        return new Decoded(root, nextSlot, entries);
    }

    /**
     * The value of an integral number that fits a long, else null: never a truncated one (asLong() would
     * read 4096.5 as 4096 and 2^64 + 4096 as 4096).
     */
    private static Long exactLong(JsonNode n) {
        return n != null && n.isIntegralNumber() && n.canConvertToLong() ? n.longValue() : null;
    }

    private static String textOrNull(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText();
    }

    /** The list when every element is an integral number that fits an int, else null (as if absent). */
    private static List<Integer> ints(JsonNode n) {
        if (n == null || !n.isArray()) {
            return null;
        }
        List<Integer> out = new ArrayList<>(n.size());
        for (JsonNode x : n) {
            if (!x.isIntegralNumber() || !x.canConvertToInt()) {
                return null;
            }
            out.add(x.intValue());
        }
        return out;
    }

    /**
     * Compares the layout fields present in {@code root} with {@code expected}.
     *
     * @return null when they agree, else the first field that differs (the state is then rejected)
     */
    static LayoutMismatch layoutMismatch(JsonNode root, Layout expected) {
        JsonNode v = root.get("version");
        if (!Long.valueOf(1).equals(exactLong(v))) { // exactly 1: asInt() reads 1.8 and "1" as 1
            return new LayoutMismatch("version", String.valueOf(v), "1 (this store reads checkpoint version 1)");
        }
        LayoutMismatch m = compare(root, "block_align", expected.blockAlign());
        m = m != null ? m : compare(root, "header_bytes", expected.headerBytes());
        m = m != null ? m : compare(root, "slot_bytes", expected.slotBytes());
        m = m != null ? m : compare(root, "meta_total_bytes", expected.metaTotalBytes());
        m = m != null ? m : compare(root, "capacity_bytes", expected.capacityBytes());
        m = m != null ? m : compare(root, "meta_version", RawBlockCoreConfig.META_VERSION);
        m = m != null ? m : compare(root, "data_base_offset", expected.dataBaseOffset());
        if (m == null && root.has("meta_magic") && !RawBlockCoreConfig.META_MAGIC.equals(root.get("meta_magic").asText())) {
            m = new LayoutMismatch("meta_magic", root.get("meta_magic").toString(), RawBlockCoreConfig.META_MAGIC);
        }
        return m;
    }

    private static LayoutMismatch compare(JsonNode root, String field, long expected) {
        JsonNode n = root.get(field);
        if (n == null || n.isNull()) {
            return null; // absent fields are not compared (as in the reference)
        }
        Long v = exactLong(n);
        return v != null && v == expected ? null : new LayoutMismatch(field, n.toString(), Long.toString(expected));
    }
}
