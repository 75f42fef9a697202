package io.fdpblock.core;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.BiPredicate;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * One key of the raw_block configuration, declared once in {@link RawBlockCoreConfig}'s {@link Table}: its
 * JSON name, type, default, limits and meaning. The table reads the JSON, fills a builder's defaults,
 * checks every limit at build and renders docs/configuration.md, so none of these is written twice.
 * A key either holds a value of the config ({@link Table#knob}), or is accepted for LMCache's JSON and
 * sets other knobs ({@link Table#alias}) or nothing at all ({@link Table#ignored}).
 *
 * @param <T> the Java type of the value
 */
final class ConfigKnob<T> {
    /** Parenthesised parts of a rule that show the values of other knobs: left out of the docs. */
    private static final Pattern VALUE_IN_RULE = Pattern.compile(" \\([^()]*%s[^()]*\\)");

    /** A rule a value keeps; {@code %s} in the rule shows, in a message, what {@code args} compute. */
    private record Limit<T>(BiPredicate<T, RawBlockCoreConfig> ok, String rule,
                            List<Function<RawBlockCoreConfig, Object>> args) {
        Limit {
            if (VALUE_IN_RULE.matcher(rule).replaceAll("").contains("%s")) {
                throw new IllegalArgumentException("a value in a rule goes in parentheses, for the docs: " + rule);
            }
        }

        String message(RawBlockCoreConfig c) {
            return rule.formatted(args.stream().map(a -> a.apply(c)).toArray());
        }

        String doc() {
            return VALUE_IN_RULE.matcher(rule).replaceAll("");
        }
    }

    private final String key;
    private final ConfigType<T> type;
    private final T defaultValue;
    private final String meaning;
    /** Where the value is in a config's values; -1 for a key that holds none. */
    private final int index;
    /** What a key that holds no value does to the builder (null: nothing). */
    private final BiConsumer<RawBlockCoreConfig.Builder, T> apply;
    private final List<Limit<T>> limits = new ArrayList<>();
    private boolean required;
    private boolean nullIsDefault;
    private String defaultDoc;

    private ConfigKnob(String key, ConfigType<T> type, T defaultValue, String meaning, int index,
                       BiConsumer<RawBlockCoreConfig.Builder, T> apply) {
        this.key = key;
        this.type = type;
        this.defaultValue = defaultValue;
        this.meaning = meaning;
        this.index = index;
        this.apply = apply;
    }

    /** The JSON key. */
    String key() {
        return key;
    }

    ConfigType<T> type() {
        return type;
    }

    /** A value must keep {@code rule} ("must be >= 1"), told by {@code ok}. */
    ConfigKnob<T> limit(Predicate<T> ok, String rule) {
        limits.add(new Limit<>((v, c) -> ok.test(v), rule, List.of()));
        return this;
    }

    /**
     * A rule that involves other knobs: {@code ok} sees the config being built (its knobs declared before
     * this one are checked already), and each {@code %s} of {@code rule} shows what an {@code args} entry
     * computes from it, in parentheses (which the docs leave out).
     */
    @SafeVarargs
    final ConfigKnob<T> across(BiPredicate<T, RawBlockCoreConfig> ok, String rule,
                               Function<RawBlockCoreConfig, Object>... args) {
        limits.add(new Limit<>(ok, rule, List.of(args)));
        return this;
    }

    /** A config needs a value: there is no default. */
    ConfigKnob<T> required() {
        required = true;
        return this;
    }

    /** A JSON {@code null} means the default (LMCache writes null for these keys). */
    ConfigKnob<T> nullIsDefault() {
        nullIsDefault = true;
        return this;
    }

    /** What the docs say for the default, where the value alone does not tell it. */
    ConfigKnob<T> defaultDoc(String doc) {
        defaultDoc = doc;
        return this;
    }

    @SuppressWarnings("unchecked")
    T valueIn(Object[] values) {
        return (T) values[index];
    }

    /** Stores {@code v} in {@code values} (a copy, for a list). */
    void store(Object[] values, T v) {
        values[index] = type.copy(v);
    }

    /** Reads this key's JSON value into {@code b}; a key that holds no value is checked here. */
    void readJson(RawBlockCoreConfig.Builder b, JsonNode n) {
        T v = n.isNull() && nullIsDefault ? defaultValue : type.read(key, n);
        if (index >= 0) {
            b.set(this, v);
            return;
        }
        check(null, v);
        if (apply != null) {
            apply.accept(b, v);
        }
    }

    /** Checks this knob's value in {@code values}: present when needed, and within every limit. */
    void checkIn(RawBlockCoreConfig c, Object[] values) {
        check(c, valueIn(values));
    }

    private void check(RawBlockCoreConfig c, T v) {
        if (v == null) {
            if (defaultValue != null || required) {
                throw invalid(key, "null", "must be " + type.expected());
            }
            return;
        }
        for (Limit<T> l : limits) {
            if (!l.ok().test(v, c)) {
                throw invalid(key, type.show(v), l.message(c));
            }
        }
    }

    private String markdownRow() {
        String def = defaultDoc != null ? defaultDoc : required ? "required"
                : defaultValue == null ? (index < 0 ? "" : "not set") : "`" + type.show(defaultValue) + "`";
        if (nullIsDefault) {
            def += ", also for `null`";
        }
        String rules = limits.stream().map(Limit::doc).collect(Collectors.joining("<br>"));
        return Arrays.stream(new String[] {"`" + key + "`", type.docName(), def, rules, meaning})
                .map(s -> s.replace("|", "\\|")).collect(Collectors.joining(" | ", "| ", " |"));
    }

    /** The error of a value that breaks a rule: the key, the value, the rule. */
    static IllegalArgumentException invalid(String key, Object value, String rule) {
        return new IllegalArgumentException("raw_block config: " + key + " = " + value + " " + rule);
    }

    /** The keys of a configuration, in the order they are checked and documented. */
    static final class Table {
        private final Map<String, ConfigKnob<?>> byKey = new LinkedHashMap<>();
        private final List<ConfigKnob<?>> stored = new ArrayList<>();
        private final Set<String> withoutEffect = new LinkedHashSet<>();

        /** A key that holds a value of the config. */
        <T> ConfigKnob<T> knob(String key, ConfigType<T> type, T defaultValue, String meaning) {
            ConfigKnob<T> k = add(new ConfigKnob<>(key, type, defaultValue, meaning, stored.size(), null));
            stored.add(k);
            return k;
        }

        /** A key accepted for LMCache's JSON that sets other knobs, as {@code apply} says. */
        <T> ConfigKnob<T> alias(String key, ConfigType<T> type, T defaultValue, String meaning,
                                BiConsumer<RawBlockCoreConfig.Builder, T> apply) {
            return add(new ConfigKnob<>(key, type, defaultValue, meaning, -1, apply));
        }

        /** A key accepted for LMCache's JSON, checked, with no effect here. */
        <T> ConfigKnob<T> ignored(String key, ConfigType<T> type, String meaning) {
            withoutEffect.add(key);
            return add(new ConfigKnob<>(key, type, null, meaning, -1, null));
        }

        private <T> ConfigKnob<T> add(ConfigKnob<T> k) {
            if (byKey.putIfAbsent(k.key, k) != null) {
                throw new IllegalArgumentException("config key " + k.key + " is declared twice");
            }
            return k;
        }

        /** The knob of a JSON key, or null. */
        ConfigKnob<?> get(String key) {
            return byKey.get(key);
        }

        Set<String> keys() {
            return Collections.unmodifiableSet(byKey.keySet());
        }

        /** The keys accepted and ignored (of {@link #ignored}). */
        Set<String> keysWithoutEffect() {
            return Collections.unmodifiableSet(withoutEffect);
        }

        /** A new array of every value knob's default, indexed as the knobs. */
        Object[] defaults() {
            Object[] values = new Object[stored.size()];
            for (ConfigKnob<?> k : stored) {
                values[k.index] = k.defaultValue;
            }
            return values;
        }

        /** Checks that every required knob has a value in {@code values}. */
        void checkRequired(Object[] values) {
            for (ConfigKnob<?> k : stored) {
                if (k.required && values[k.index] == null) {
                    throw new IllegalArgumentException("raw_block config: " + k.key + " is required");
                }
            }
        }

        /** Checks every limit of the value knobs of {@code c} (whose values are {@code values}), in table order. */
        void checkLimits(RawBlockCoreConfig c, Object[] values) {
            for (ConfigKnob<?> k : stored) {
                k.checkIn(c, values);
            }
        }

        /**
         * The reference tables of docs/configuration.md: the knobs, then the keys accepted for LMCache's
         * JSON that hold no value of their own.
         */
        String markdown() {
            String head = "| key | type | default | limits | meaning |\n| --- | --- | --- | --- | --- |\n";
            String knobs = stored.stream().map(ConfigKnob::markdownRow).collect(Collectors.joining("\n"));
            String others = byKey.values().stream().filter(k -> k.index < 0).map(ConfigKnob::markdownRow)
                    .collect(Collectors.joining("\n"));
            return "### Knobs\n\n" + head + knobs + "\n\n### Keys accepted for LMCache's JSON\n\n"
                    + "These hold no value of their own: each sets the knobs it names, or nothing.\n\n"
                    + head + others + "\n";
        }
    }
}
