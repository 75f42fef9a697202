package io.fdpblock.l2;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fdpblock.util.Json;

import java.io.IOException;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;

/** Creates adapters from LMCache-style {@code --l2-adapter} JSON: {@code {"type":"raw_block", ...}}. */
public final class L2Adapters {
    private L2Adapters() {}

    private static final ObjectMapper JSON = Json.strictMapper();

    private static final class Registry {
        static final Map<String, L2AdapterFactory> FACTORIES = load();

        private static Map<String, L2AdapterFactory> load() {
            Map<String, L2AdapterFactory> m = new TreeMap<>();
            for (L2AdapterFactory f : ServiceLoader.load(L2AdapterFactory.class, L2Adapters.class.getClassLoader())) {
                L2AdapterFactory prev = m.putIfAbsent(f.type(), f);
                if (prev != null) {
                    throw new IllegalStateException("two L2 adapter factories claim type '" + f.type() + "': "
                            + prev.getClass().getName() + " and " + f.getClass().getName());
                }
            }
            return m;
        }
    }

    /** The registered adapter types. */
    public static Set<String> types() {
        return Registry.FACTORIES.keySet();
    }

    /**
     * @throws IllegalArgumentException for invalid JSON (a key given twice included), a missing type, or
     *         an unknown type (naming the known ones)
     * @throws IOException when the adapter cannot open what it needs (device, permissions)
     */
    public static L2Adapter create(String json) throws IOException {
        Parsed p = parse(json);
        L2Adapter adapter = p.factory().create(p.config());
        try {
            // as LMCache's storage manager stamps an adapter it builds: its registered type, not shared
            adapter.setBackendIdentity(p.factory().type(), false);
        } catch (RuntimeException e) {
            try {
                adapter.close(); // not handed out: nobody else would close it
            } catch (RuntimeException c) {
                e.addSuppressed(c);
            }
            throw e;
        }
        return adapter;
    }

    /** An adapter JSON read and its type resolved, before anything is opened. */
    record Parsed(L2AdapterFactory factory, JsonNode config) {}

    /**
     * The JSON half of {@link #create}: reads {@code json} and finds the factory of its type, opening
     * nothing (so that it can be fuzzed on its own).
     *
     * @throws IllegalArgumentException for invalid JSON, a missing type, or an unknown type
     */
    static Parsed parse(String json) {
        JsonNode root;
        try {
            root = Json.readOne(JSON, json);
        } catch (JsonProcessingException e) {
            String where = e.getLocation() == null ? "" : " (line " + e.getLocation().getLineNr() + ", column "
                    + e.getLocation().getColumnNr() + ")";
            String fix = e.getOriginalMessage().startsWith("Duplicate field")
                    ? ": each key may appear only once; remove the extra one" : "";
            throw new IllegalArgumentException("L2 adapter config is not valid JSON: " + e.getOriginalMessage() + where
                    + fix, e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("L2 adapter config must be a JSON object, got: " + json);
        }
        JsonNode type = root.get("type");
        if (type == null || !type.isTextual()) {
            throw new IllegalArgumentException("L2 adapter config needs a \"type\"; known types: " + types());
        }
        L2AdapterFactory f = Registry.FACTORIES.get(type.asText());
        if (f == null) {
            throw new IllegalArgumentException("unknown L2 adapter type '" + type.asText() + "'; known types: "
                    + types());
        }
        return new Parsed(f, root);
    }
}
