package io.fdpblock.core;

/** What {@link RawBlockCore#deleteWithOutcome} did to a key. */
public enum DeleteOutcome {
    /** It was committed and is now removed. */
    REMOVED,
    /** Its write was in flight and is cancelled (its slot is freed when the write ends). */
    CANCELLED,
    /** It is locked and was kept (not forced). */
    LOCKED,
    /** Unknown. */
    MISSING;

    /** Per outcome: the key is gone ({@link #REMOVED} or {@link #CANCELLED}). */
    static boolean[] removedOrCancelled(DeleteOutcome[] outcomes) {
        boolean[] out = new boolean[outcomes.length];
        for (int i = 0; i < outcomes.length; i++) {
            out[i] = outcomes[i] == REMOVED || outcomes[i] == CANCELLED;
        }
        return out;
    }
}
