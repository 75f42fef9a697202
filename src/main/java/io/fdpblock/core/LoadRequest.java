package io.fdpblock.core;

import java.lang.foreign.MemorySegment;

/**
 * One key to load into a caller-owned buffer of at least the stored size. Read straight into it when
 * its address is aligned to {@code block_align} and it has room for the size rounded up to
 * {@code block_align}; otherwise through an aligned bounce buffer.
 */
public record LoadRequest(String key, MemorySegment destination) {
    public LoadRequest {
        if (key == null || destination == null) {
            throw new IllegalArgumentException("load: key and destination are required");
        }
    }
}
