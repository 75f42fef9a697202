package io.fdpblock.controller;

import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;

import java.util.Map;

/**
 * Decides what an {@link EvictionController} deletes from an L2 adapter when it fills up. Chosen by name
 * from {@link Policies#EVICTION}. A policy hears what the adapter holds through the listener methods
 * (from the adapter's threads, concurrently with {@link #evict}: keep them short and thread-safe);
 * {@link #evict} runs on the controller's thread only.
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

    /** Policy-specific counters for {@link EvictionController#status()}. */
    default Map<String, Object> status() {
        return Map.of();
    }
}
