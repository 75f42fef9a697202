package io.fdpblock.core.tools;

import java.io.IOException;

/** {@link Migration} refused a device before it wrote anything to it: the message says why and what to do. */
public final class MigrationRefusedException extends IOException {
    /** Why the migration was refused. */
    public enum Reason {
        /** Another store (in this process or another) has the device open. */
        IN_USE,
        /** The device already holds the target format. */
        SAME_FORMAT,
        /** The device holds no store of either format (or names none this migration can find). */
        NO_STORE,
        /** The store's metadata cannot be read (superblocks, checkpoints or snapshots all damaged). */
        UNREADABLE,
        /** Slot headers disagree with the metadata that points at them. */
        DAMAGED,
        /** A layout option given differs from what the store records. */
        LAYOUT_MISMATCH,
        /** The store does not record a layout value the migration needs, and no option gave it. */
        NEEDS_OPTION,
        /** The target format cannot hold the keys in the metadata area the data leaves it (the data never moves). */
        TARGET_TOO_SMALL
    }

    private final Reason reason;

    MigrationRefusedException(Reason reason, String message) {
        this(reason, message, null);
    }

    MigrationRefusedException(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
