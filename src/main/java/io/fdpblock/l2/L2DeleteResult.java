package io.fdpblock.l2;

/** What {@link L2Adapter#deleteReporting} did to one key. */
public enum L2DeleteResult {
    /** It was held and is removed now (its usage is released, listeners hear of it). */
    REMOVED,
    /** It is held and locked, and was kept (not forced). */
    LOCKED,
    /** It was not held (never stored, already deleted, or its write is still in flight and was cancelled). */
    NOT_HELD,
    /** The adapter does not say (the default {@link L2Adapter#deleteReporting}). */
    UNKNOWN
}
