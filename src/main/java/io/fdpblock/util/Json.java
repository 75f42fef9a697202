package io.fdpblock.util;

import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;

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
}
