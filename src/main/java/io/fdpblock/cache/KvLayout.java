package io.fdpblock.cache;

import io.fdpblock.l2.MemoryObj;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * What one object (a KV-cache chunk) of a request looks like in L1: its size in bytes and, optionally,
 * LMCache's metadata (tensor shape, dtype name, memory format name) carried on the {@link MemoryObj}.
 * The reference calls this the layout descriptor of a prefetch request.
 *
 * @param objectBytes bytes per object (&gt; 0); a load needs at least the stored size
 * @param shape tensor shape, or null (then no metadata is attached)
 * @param dtype dtype name, e.g. {@code "bfloat16"}, or null
 * @param fmt memory format name, e.g. {@code "KV_2LTD"}, or null
 */
public record KvLayout(long objectBytes, List<Integer> shape, String dtype, String fmt) {
    public KvLayout {
        if (objectBytes <= 0) {
            throw new IllegalArgumentException("layout object size " + objectBytes + " must be > 0");
        }
        shape = shape == null ? null : List.copyOf(shape);
    }

    /** Objects of {@code objectBytes} bytes without metadata. */
    public static KvLayout ofBytes(long objectBytes) {
        return new KvLayout(objectBytes, null, null, null);
    }

    /** True when objects of this layout carry metadata. */
    public boolean hasMeta() {
        return shape != null || dtype != null || fmt != null;
    }

    /** {@code segment} as an object of this layout (with its metadata, if any). */
    MemoryObj wrap(MemorySegment segment) {
        MemoryObj o = MemoryObj.of(segment);
        return hasMeta() ? o.withMeta(shape, dtype, fmt, null) : o;
    }
}
