package io.fdpblock.l2;

/** The outcome of a store task: all-or-nothing; {@code bytesWritten} is 0 on failure. */
public record L2StoreResult(boolean success, long bytesWritten) {
    public static L2StoreResult failed() {
        return new L2StoreResult(false, 0);
    }
}
