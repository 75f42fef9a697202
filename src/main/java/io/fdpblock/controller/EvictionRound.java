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
 * @param skippedRetained keys kept because their retention had not expired ({@link RetentionLedger})
 */
public record EvictionRound(long keys, long bytes, long groups, long skippedLocked, long skippedBusy, long hits,
        long skippedRetained) {
    public static final EvictionRound NONE = new EvictionRound(0, 0, 0, 0, 0, 0, 0);

    /** A round of a policy that knows no retention. */
    public EvictionRound(long keys, long bytes, long groups, long skippedLocked, long skippedBusy, long hits) {
        this(keys, bytes, groups, skippedLocked, skippedBusy, hits, 0);
    }

    /** Both rounds' counts added up (the parts of one round, e.g. one per cache salt). */
    public EvictionRound plus(EvictionRound other) {
        return new EvictionRound(keys + other.keys, bytes + other.bytes, groups + other.groups,
                skippedLocked + other.skippedLocked, skippedBusy + other.skippedBusy, hits + other.hits,
                skippedRetained + other.skippedRetained);
    }
}
