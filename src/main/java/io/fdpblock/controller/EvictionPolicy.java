package io.fdpblock.controller;

import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;
import io.fdpblock.l2.ObjectKey;

import java.util.Map;
import java.util.function.Predicate;

/**
 * Decides what an {@link EvictionController} deletes from an L2 adapter when it fills up. Chosen by name
 * from {@link Policies#EVICTION}. A policy hears what the adapter holds through the listener methods
 * (from the adapter's threads, concurrently with {@link #evict}: keep them short and thread-safe);
 * {@link #evict} runs on the controller's thread only.
 *
 * <p>Two optional abilities: a policy that {@link #takesKeyFilter() takes a key filter} can keep the
 * keys a {@link RetentionLedger} shields; a policy that {@link #perCacheSalt() evicts per cache salt}
 * is asked per tenant ({@link #evictCacheSalt}) against {@link TenantQuotas}, never for the adapter as
 * a whole.
 */
public interface EvictionPolicy extends L2AdapterListener {
    /**
     * Binds the policy to the adapter it evicts from, once, before it is registered as its listener.
     *
     * @throws IllegalArgumentException when the adapter lacks what the policy needs (saying what)
     */
    void bind(L2Adapter adapter);

    /**
     * Deletes keys until the adapter's usage has dropped by at least {@code bytes}, or nothing more can go
     * (locked keys, groups in use).
     *
     * @return what it did
     */
    EvictionRound evict(long bytes);

    /** Whether {@link #evict(long, Predicate)} is implemented (retention needs it). */
    default boolean takesKeyFilter() {
        return false;
    }

    /**
     * Like {@link #evict(long)}, keeping every key {@code eligible} refuses (its retention has not expired),
     * counted in {@link EvictionRound#skippedRetained()}.
     *
     * @throws UnsupportedOperationException unless {@link #takesKeyFilter()}
     */
    default EvictionRound evict(long bytes, Predicate<ObjectKey> eligible) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot keep the keys a filter refuses");
    }

    /** Whether the policy evicts per cache salt ({@link #evictCacheSalt}) instead of for the whole adapter. */
    default boolean perCacheSalt() {
        return false;
    }

    /**
     * Deletes keys of {@code cacheSalt} only, least valuable first, until that salt's usage has dropped by at
     * least {@code bytes} or nothing more of it can go; keys {@code eligible} refuses stay.
     *
     * @throws UnsupportedOperationException unless {@link #perCacheSalt()}
     */
    default EvictionRound evictCacheSalt(String cacheSalt, long bytes, Predicate<ObjectKey> eligible) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " does not evict per cache salt");
    }

    /** Policy-specific counters for {@link EvictionController#status()}. */
    default Map<String, Object> status() {
        return Map.of();
    }
}
