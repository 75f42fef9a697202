package io.fdpblock.util;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.UncheckedIOException;

/** The one place that says how this project reads JSON a user or a device hands it. */
public final class Json {
    private Json() {}

    /**
     * A mapper that refuses an object naming the same key twice ({@code {"slot_bytes":1,"slot_bytes":2}}):
     * Jackson would otherwise keep the last value silently, and which one a user meant is unknowable.
     * The error is a {@code JsonProcessingException} whose message names the key.
     */
    public static ObjectMapper strictMapper() {
        return JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
    }

    /**
     * Reads {@code json} as exactly one value: text after it (a second object, a stray brace, any other
     * token) is refused, where Jackson would read the first value and drop the rest silently.
     *
     * @return null for empty input
     * @throws JsonProcessingException whose original message names what follows the value and where
     */
    public static JsonNode readOne(ObjectMapper mapper, String json) throws JsonProcessingException {
        try (JsonParser p = mapper.createParser(json)) {
            JsonNode root = mapper.readTree(p);
            if (root == null) {
                return null;
            }
            JsonLocation end = p.currentLocation();
            if (p.nextToken() != null) {
                JsonLocation at = p.currentTokenLocation();
                int from = (int) Math.min(json.length(), Math.max(0, end.getCharOffset()));
                String rest = json.substring(from).strip();
                throw new JsonParseException(p, "text after the JSON value: '" + (rest.length() > 40
                        ? rest.substring(0, 40) + "...'" : rest + "'") + "; give exactly one object", at);
            }
            return root;
        } catch (JsonProcessingException e) {
            throw e;
        } catch (IOException e) { // a String cannot fail to read
            throw new UncheckedIOException(e);
        }
    }
}
