package io.fdpblock.core;

/** What a put did with one key. */
public enum PutOutcome {
    /** Written and committed by this put. */
    STORED(true),
    /** Already stored (its original bytes stay), or a repeat of a key earlier in the same call. */
    ALREADY_STORED(true),
    /** The payload is empty: nothing to store. */
    PAYLOAD_EMPTY(false),
    /** The payload is larger than a slot's payload area ({@code slot_bytes - header_bytes}). */
    PAYLOAD_TOO_LARGE(false),
    /**
     * The key's cache salt is new and the store already keeps its most salts ({@code SaltTable.MAX_IDS}
     * ids, no salt included; an id stays taken while the store lives): use fewer salts.
     */
    TOO_MANY_SALTS(false),
    /** No free slot: delete keys (the eviction controller's job) to make room. */
    DEVICE_FULL(false),
    /** Another put of the same key is in flight. */
    WRITE_IN_FLIGHT(false),
    /** A delete of the key arrived while it was being written. */
    CANCELLED(false),
    /**
     * The device failed the write (or its submission), or, when puts are acknowledged once durable, the
     * commit of its record: the key is not held.
     */
    IO_ERROR(false),
    /**
     * The store is read-only: a metadata commit failed, so no put is acknowledged until it could be made
     * durable ({@link RawBlockCore#readOnlyCause()} says why and what to do).
     */
    READ_ONLY(false),
    /** The store was closing: the key was not committed, so no acknowledged key can be lost by the close. */
    CLOSED(false);

    private final boolean success;

    PutOutcome(boolean success) {
        this.success = success;
    }

    /** Per outcome: {@link #success()}. */
    static boolean[] successes(PutOutcome[] outcomes) {
        boolean[] out = new boolean[outcomes.length];
        for (int i = 0; i < outcomes.length; i++) {
            out[i] = outcomes[i].success();
        }
        return out;
    }

    /** The key is stored (now or before). */
    public boolean success() {
        return success;
    }
}
