package io.fdpblock.l2;

import java.util.List;

/**
 * The metadata LMCache keeps with a stored chunk, carried through checkpoints unchanged.
 *
 * @param shape tensor shape, or null
 * @param dtype data type name, e.g. {@code "bfloat16"} (may be null)
 * @param fmt memory format name, e.g. {@code "KV_2LTD"} (LMCache's MemoryFormat name; may be null)
 * @param cachedPositions token positions the chunk covers, or null
 */
public record ObjectMeta(List<Integer> shape, String dtype, String fmt, List<Integer> cachedPositions) {
    public ObjectMeta {
        shape = shape == null ? null : List.copyOf(shape);
        cachedPositions = cachedPositions == null ? null : List.copyOf(cachedPositions);
    }
}
