package io.fdpblock.core;

import java.io.IOException;

/**
 * {@link RawBlockCore#open} refused a device rather than risk its data: its checkpoint was written
 * with another layout, its metadata area holds bytes the store did not write, or its checkpoints
 * cannot be read. Nothing was written to the device.
 */
public final class StoreRefusedException extends IOException {
    /** Why the device was refused. */
    public enum Reason {
        /** The stored layout (slot_bytes, capacity_bytes, ...) differs from the configuration. */
        LAYOUT_MISMATCH,
        /** The metadata area holds bytes that are neither zeros nor a store's containers. */
        FOREIGN_DATA,
        /** The store's checkpoints exist but none can be read or applied. */
        UNREADABLE,
        /**
         * The metadata is damaged (a checksum fails where valid metadata follows, a broken chain): opening
         * would lose durable keys. {@code "open_damaged": true} opens what is readable instead.
         */
        DAMAGED,
        /** Starting empty ({@code load_checkpoint_on_init: false}) would discard what the device holds. */
        WOULD_DISCARD,
        /**
         * The devices are not a striped store's members in its order: one is missing, blank, another
         * store's or at another position (their labels say which), or one is added.
         */
        WRONG_MEMBERS
    }

    private final Reason reason;

    /** A refusal for {@code reason}, saying what to do in {@code message}. */
    public StoreRefusedException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
