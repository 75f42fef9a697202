package io.fdpblock.controller;

/**
 * What one eviction round did.
 *
 * @param keys keys deleted
 * @param bytes usage freed (as the adapter charges it)
 * @param groups whole reclaim-unit groups evicted (0 for per-key policies)
 * @param skippedLocked keys (per-key policies) or groups kept because a key was locked
 * @param skippedBusy groups kept because a write or load was in flight in them
 * @param hits loads the deleted data had served while it was held (what the eviction may cost in hits)
 */
public record EvictionRound(long keys, long bytes, long groups, long skippedLocked, long skippedBusy, long hits) {
    public static final EvictionRound NONE = new EvictionRound(0, 0, 0, 0, 0, 0);
}
