package io.fdpblock.l2;


import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A caller-owned buffer and what describes its contents. The adapter reads from it (store) or writes
 * into it (load), never allocates or frees it.
 */
public final class MemoryObj {
    private final MemorySegment segment;
    private final ObjectMeta meta;

    private MemoryObj(MemorySegment segment, ObjectMeta meta) {
        if (segment == null) {
            throw new IllegalArgumentException("MemoryObj needs a segment");
        }
        this.segment = segment;
        this.meta = meta;
    }

    public static MemoryObj of(MemorySegment segment) {
        return new MemoryObj(segment, null);
    }

    /** With LMCache's metadata: tensor shape, dtype name (e.g. "bfloat16"), format name, cached positions. */
    public MemoryObj withMeta(List<Integer> shape, String dtype, String fmt, List<Integer> cachedPositions) {
        return new MemoryObj(segment, new ObjectMeta(shape, dtype, fmt, cachedPositions));
    }

    public MemorySegment segment() {
        return segment;
    }

    /** Bytes stored from / room for a load into this object. */
    public long size() {
        return segment.byteSize();
    }

    /** May be null. */
    public ObjectMeta meta() {
        return meta;
    }

    @Override
    public String toString() {
        return "MemoryObj[" + segment.byteSize() + " bytes at 0x" + Long.toHexString(segment.address()) + "]";
    }
}
