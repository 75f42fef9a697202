package io.fdpblock.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

/**
 * A command's result as JSON ({@code --json}, {@code run --status}): Jackson's serialization of it,
 * indented, printed to {@link System#out} (looked up at each call: the tests swap it).
 */
final class Json {
    /** Configured once and never changed after: shared by every command, as Jackson allows. */
    private static final ObjectMapper INDENTED = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private Json() {}

    /** {@code value} as indented JSON. */
    static String indented(Object value) throws JsonProcessingException {
        return INDENTED.writeValueAsString(value);
    }

    /** Prints {@code value} as indented JSON, on lines of its own. */
    static void print(Object value) throws JsonProcessingException {
        System.out.println(indented(value));
    }

    /** Prints {@code value} as indented JSON when {@code json}, else {@code text}. */
    static void print(boolean json, Object value, String text) throws JsonProcessingException {
        System.out.println(json ? indented(value) : text);
    }
}
