package io.fdpblock.controller;

import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2DeleteResult;
import io.fdpblock.l2.ObjectKey;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code lru}: per-key least-recently-used. Stores and loads ({@code onKeysStored}, {@code onKeysAccessed})
 * make a key the most recent; eviction deletes from the least recent end until enough is freed. Locked
 * keys stay (the adapter keeps them) and the round moves on past them.
 */
public final class LruEvictionPolicy implements EvictionPolicy {
    /** Keys deleted per {@code delete} call. */
    private static final int BATCH = 1024;

    /** A held key: the bytes it is charged and the loads it served. */
    private static final class Held {
        final long size;
        long hits;

        Held(long size) {
            this.size = size;
        }
    }

    /** Access order: the first entry is the least recently used. Guarded by itself. */
    private final LinkedHashMap<ObjectKey, Held> order = new LinkedHashMap<>(16, 0.75f, true);
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
        synchronized (order) {
            for (int i = 0; i < keys.size(); i++) {
                if (order.get(keys.get(i)) == null) { // get: a replayed key becomes the most recent too
                    order.put(keys.get(i), new Held(sizes.get(i)));
                }
            }
        }
    }

    @Override
    public void onKeysAccessed(List<ObjectKey> keys) {
        synchronized (order) {
            for (ObjectKey k : keys) {
                Held h = order.get(k);
                if (h != null) {
                    h.hits++;
                }
            }
        }
    }

    @Override
    public void onKeysDeleted(List<ObjectKey> keys) {
        synchronized (order) {
            keys.forEach(order::remove);
        }
    }

    /**
     * Deletes from the least recent end until {@code bytes} are freed. What a delete did is the adapter's
     * answer per key ({@link L2Adapter#deleteReporting}), not whether the listener has heard of it yet: a
     * listener that hears late (or has been detached by a stop) must not make the round take more. For an
     * adapter that does not say, a key still tracked after its delete counts as kept, and the round also
     * never takes usage below where it started minus {@code bytes}.
     */
    @Override
    public EvictionRound evict(long bytes) {
        long freed = 0;
        long keys = 0;
        long locked = 0;
        long hits = 0;
        long floor = adapter.usage().totalBytesUsed() - bytes;
        long left = bytes;
        Set<ObjectKey> tried = new HashSet<>();
        while (left > 0) {
            List<ObjectKey> batch = new ArrayList<>();
            List<Held> held = new ArrayList<>();
            synchronized (order) {
                long planned = 0;
                Iterator<Map.Entry<ObjectKey, Held>> it = order.entrySet().iterator(); // iterating keeps the order
                while (it.hasNext() && planned < left && batch.size() < BATCH) {
                    Map.Entry<ObjectKey, Held> e = it.next();
                    // a key charged nothing frees nothing: deleting it could not help
                    if (e.getValue().size > 0 && tried.add(e.getKey())) {
                        batch.add(e.getKey());
                        held.add(e.getValue());
                        planned += e.getValue().size;
                    }
                }
            }
            if (batch.isEmpty()) {
                break;
            }
            List<L2DeleteResult> results = adapter.deleteReporting(batch, false);
            synchronized (order) {
                for (int i = 0; i < batch.size(); i++) {
                    ObjectKey k = batch.get(i);
                    Held h = held.get(i);
                    L2DeleteResult res = results != null && i < results.size() ? results.get(i) : L2DeleteResult.UNKNOWN;
                    if (res == L2DeleteResult.UNKNOWN) {
                        res = order.containsKey(k) ? L2DeleteResult.LOCKED : L2DeleteResult.REMOVED;
                    }
                    switch (res) {
                        case REMOVED -> {
                            order.remove(k, h); // not a new entry: the key may have been stored again since
                            keys++;
                            freed += h.size;
                            hits += h.hits;
                        }
                        case LOCKED -> locked++; // kept by the adapter: a lookup is about to load it
                        default -> order.remove(k, h); // not held (e.g. heard of after its delete): forget it
                    }
                }
            }
            // what the adapter holds now bounds the rest, whatever the answers were
            left = Math.min(bytes - freed, adapter.usage().totalBytesUsed() - floor);
        }
        return new EvictionRound(keys, freed, 0, locked, 0, hits);
    }

    @Override
    public Map<String, Object> status() {
        synchronized (order) {
            return Map.of("policy", Policies.LRU, "tracked_keys", order.size());
        }
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
