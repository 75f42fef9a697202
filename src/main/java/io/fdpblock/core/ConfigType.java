package io.fdpblock.core;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.nvme.PlacementId;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

/**
 * The type of a {@link ConfigKnob}: how its value reads from JSON (strictly: a wrong type is refused with
 * the key, the JSON value and what was expected), how it shows in messages and in docs/configuration.md,
 * and how a builder copies it (lists are copied, so a caller's list changing later changes nothing).
 *
 * @param <T> the Java type of the value
 */
final class ConfigType<T> {
    /** Reads one JSON value of a key, or throws naming the key and the value. */
    @FunctionalInterface
    interface Reader<T> {
        T read(String key, JsonNode n);
    }

    static final ConfigType<String> STRING = new ConfigType<>("string", "a string", ConfigType::text);
    static final ConfigType<Long> LONG = new ConfigType<>("integer", "an integer", ConfigType::integer);
    static final ConfigType<Integer> INT = new ConfigType<>("32-bit integer", "a 32-bit integer", ConfigType::int32);
    static final ConfigType<Boolean> BOOLEAN = new ConfigType<>("boolean", "true or false", ConfigType::bool);
    static final ConfigType<List<String>> PATHS = new ConfigType<>("list of strings",
            "a list of paths, e.g. [\"/dev/nvme0n1\", \"/dev/nvme1n1\"]",
            (key, n) -> list(key, n, "a list of paths, e.g. [\"/dev/nvme0n1\", \"/dev/nvme1n1\"]",
                    e -> text(key + " entry", e)), ConfigType::copyList, ConfigType::display);
    static final ConfigType<List<Integer>> INTS = new ConfigType<>("list of 32-bit integers", "a list of integers",
            (key, n) -> list(key, n, "a list of integers", e -> int32(key, e)), ConfigType::copyList,
            ConfigType::display);
    static final ConfigType<PlacementId> PLACEMENT_ID = new ConfigType<>("placement id (0..65535)",
            "a placement id", (key, n) -> placementId(key, int32(key, n)));

    private final String docName;
    private final String expected;
    private final Reader<T> reader;
    private final UnaryOperator<T> copy;
    private final Function<T, String> show;

    private ConfigType(String docName, String expected, Reader<T> reader, UnaryOperator<T> copy,
                       Function<T, String> show) {
        this.docName = docName;
        this.expected = expected;
        this.reader = reader;
        this.copy = copy;
        this.show = show;
    }

    private ConfigType(String docName, String expected, Reader<T> reader) {
        this(docName, expected, reader, UnaryOperator.identity(), ConfigType::display);
    }

    /**
     * One of an enum's configuration names; {@code parse} reads a name or throws the enum's own message
     * (which lists the names).
     */
    static <E extends Enum<E>> ConfigType<E> choice(E[] values, Function<E, String> name, Function<String, E> parse) {
        List<String> names = Arrays.stream(values).map(name).toList();
        return new ConfigType<>(docOf(names), "one of " + String.join(", ", names),
                (key, n) -> parse.apply(text(key, n)), UnaryOperator.identity(), e -> e == null ? "null" : name.apply(e));
    }

    /** One of {@code names}, as written. */
    static ConfigType<String> oneOf(String... names) {
        List<String> known = List.of(names);
        String expected = String.join(" or ", known);
        return new ConfigType<>(docOf(known), expected,
                (key, n) -> {
                    String v = text(key, n);
                    if (!known.contains(v)) {
                        throw ConfigKnob.invalid(key, n, "must be " + expected);
                    }
                    return v;
                });
    }

    /** A string, one of {@code names}: "`a` or `b`", "one of `a`, `b`, `c`". */
    private static String docOf(List<String> names) {
        List<String> quoted = names.stream().map(s -> "`" + s + "`").toList();
        return quoted.size() == 2 ? String.join(" or ", quoted) : "one of " + String.join(", ", quoted);
    }

    /** The element of {@code values} whose configuration name is {@code s}, ignoring case. */
    static <E> Optional<E> find(E[] values, Function<E, String> name, String s) {
        return Arrays.stream(values).filter(e -> name.apply(e).equalsIgnoreCase(s)).findFirst();
    }

    /** The placement id {@code id}, or an error naming {@code key}, the value and the range. */
    static PlacementId placementId(String key, int id) {
        return PlacementId.of(PlacementId.check("raw_block config: " + key, id));
    }

    /** How the type reads in docs/configuration.md. */
    String docName() {
        return docName;
    }

    /** What a value must be, after "must be" in a message. */
    String expected() {
        return expected;
    }

    T read(String key, JsonNode n) {
        return reader.read(key, n);
    }

    T copy(T v) {
        return copy.apply(v);
    }

    String show(T v) {
        return show.apply(v);
    }

    private static String display(Object v) {
        if (v instanceof String s) {
            return "\"" + s + "\"";
        }
        if (v instanceof List<?> l) {
            return l.stream().map(ConfigType::display).collect(Collectors.joining(", ", "[", "]"));
        }
        return String.valueOf(v);
    }

    private static <E> List<E> copyList(List<E> v) {
        return v == null ? null : Collections.unmodifiableList(new ArrayList<>(v));
    }

    private static <E> List<E> list(String key, JsonNode n, String expected, Function<JsonNode, E> element) {
        if (!n.isArray()) {
            throw ConfigKnob.invalid(key, n, "must be " + expected);
        }
        List<E> out = new ArrayList<>();
        n.forEach(e -> out.add(element.apply(e)));
        return out;
    }

    private static String text(String key, JsonNode n) {
        if (!n.isTextual()) {
            throw ConfigKnob.invalid(key, n, "must be a string");
        }
        return n.asText();
    }

    private static long integer(String key, JsonNode n) {
        if (!n.isIntegralNumber() || !n.canConvertToLong()) {
            throw ConfigKnob.invalid(key, n, "must be an integer");
        }
        return n.asLong();
    }

    private static int int32(String key, JsonNode n) {
        long v = integer(key, n);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw ConfigKnob.invalid(key, n, "does not fit a 32-bit integer");
        }
        return (int) v;
    }

    private static boolean bool(String key, JsonNode n) {
        if (!n.isBoolean()) {
            throw ConfigKnob.invalid(key, n, "must be true or false");
        }
        return n.asBoolean();
    }
}
