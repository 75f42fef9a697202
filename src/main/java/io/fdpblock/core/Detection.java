package io.fdpblock.core;

/**
 * What one format found on a device ({@link StoreFormat#detect}).
 *
 * @param kind what was found
 * @param offset where the evidence lies (a header nearer the device's start wins over another format's)
 * @param problem for {@link Kind#DAMAGED}: why the store is refused, else null
 */
public record Detection(Kind kind, long offset, String problem) {
    /** How sure a format is that the device holds one of its stores. */
    public enum Kind {
        /** A valid header of the format: its store. */
        STORE,
        /** The format's headers, all damaged: refused rather than taken for an empty device. */
        DAMAGED,
        /** No valid primary header, but a trace (a second copy) its recovery can tell apart. */
        TRACES,
        /** Nothing of the format. */
        NONE
    }

    /** Nothing of the format. */
    public static final Detection NONE = new Detection(Kind.NONE, -1, null);

    /** A store whose header lies at {@code offset}. */
    public static Detection store(long offset) {
        return new Detection(Kind.STORE, offset, null);
    }
}
