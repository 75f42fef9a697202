package io.fdpblock.controller;

/**
 * What {@link StorageManager#submitPrefetchTask} hands back.
 *
 * @param requestId the prefetch controller's request id, or -1 when L1 already had every key
 * @param l1PrefixHitCount leading keys that were ready in L1 at submit (read-locked for the caller)
 * @param totalRequestedKeys how many keys were asked for
 * @param submitTimeNanos {@link System#nanoTime()} at submit (for latency logging)
 */
public record PrefetchHandle(long requestId, int l1PrefixHitCount, int totalRequestedKeys, long submitTimeNanos) {
    /** True when no L2 work was needed. */
    public boolean l1Only() {
        return requestId < 0;
    }
}
