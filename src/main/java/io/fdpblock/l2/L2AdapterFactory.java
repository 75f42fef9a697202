package io.fdpblock.l2;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.IOException;

/**
 * Makes adapters of one type from their JSON configuration. Implementations register themselves in
 * {@code META-INF/services/io.fdpblock.l2.L2AdapterFactory}; adding a type needs no edit here.
 */
public interface L2AdapterFactory {
    /** The {@code "type"} this factory answers to, e.g. {@code "raw_block"}. */
    String type();

    L2Adapter create(JsonNode config) throws IOException;
}
