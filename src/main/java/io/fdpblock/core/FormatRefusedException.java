package io.fdpblock.core;

import java.io.IOException;

/**
 * A {@link StoreFormat} refused what a tool asked of it (read a store's layout without its configuration,
 * or rewrite a store in place: {@link FormatMigration}) before anything was written: the message says
 * why and what to do.
 */
public final class FormatRefusedException extends IOException {
    /** Why the format refused. */
    public enum Reason {
        /** The device holds no store of the format (or none it can find with what it was given). */
        NO_STORE,
        /** The format's metadata on the device cannot be read. */
        UNREADABLE,
        /** The format does not record a layout value it needs, and none was given. */
        NEEDS_SETTING,
        /** What the format would write does not fit where it must go (the data never moves). */
        DOES_NOT_FIT
    }

    private final Reason reason;

    /** A refusal for {@code reason}, saying what to do in {@code message}. */
    public FormatRefusedException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
