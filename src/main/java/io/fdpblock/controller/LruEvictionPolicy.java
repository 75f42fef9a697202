package io.fdpblock.controller;

import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.ObjectKey;

import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * {@code lru}: per-key least-recently-used. Stores and loads ({@code onKeysStored}, {@code onKeysAccessed})
 * make a key the most recent; eviction deletes from the least recent end until enough is freed. Locked
 * keys stay (the adapter keeps them) and the round moves on past them, as it does past retained keys.
 */
public final class LruEvictionPolicy implements EvictionPolicy {
    private final LruOrder order = new LruOrder();
    private L2Adapter adapter;

    @Override
    public void bind(L2Adapter adapter) {
        if (adapter == null) {
            throw new IllegalArgumentException("lru eviction needs an adapter");
        }
        this.adapter = adapter;
    }

    @Override
    public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
        for (int i = 0; i < keys.size(); i++) {
            order.stored(keys.get(i), sizes.get(i));
        }
    }

    @Override
    public void onKeysAccessed(List<ObjectKey> keys) {
        keys.forEach(order::accessed);
    }

    @Override
    public void onKeysDeleted(List<ObjectKey> keys) {
        keys.forEach(order::deleted);
    }

    /**
     * Deletes from the least recent end until {@code bytes} are freed. What a delete did is the adapter's
     * answer per key ({@link L2Adapter#deleteReporting}), not whether the listener has heard of it yet; for
     * an adapter that does not say, a key still tracked after its delete counts as kept, and the round also
     * never takes usage below where it started minus {@code bytes}.
     */
    @Override
    public EvictionRound evict(long bytes) {
        return evict(bytes, null);
    }

    @Override
    public boolean takesKeyFilter() {
        return true;
    }

    @Override
    public EvictionRound evict(long bytes, Predicate<ObjectKey> eligible) {
        return order.evict(adapter, bytes, () -> adapter.usage().totalBytesUsed(), eligible);
    }

    @Override
    public Map<String, Object> status() {
        return Map.of("policy", Policies.LRU, "tracked_keys", order.size());
    }

    /** Registered as {@code lru}. */
    public static final class Factory implements EvictionPolicyFactory {
        @Override
        public String name() {
            return Policies.LRU;
        }

        @Override
        public EvictionPolicy create() {
            return new LruEvictionPolicy();
        }
    }
}
