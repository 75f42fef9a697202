package io.fdpblock.controller;

import io.fdpblock.l2.L2Adapter;
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

    @Override
    public EvictionRound evict(long bytes) {
        long freed = 0;
        long keys = 0;
        long locked = 0;
        long hits = 0;
        Set<ObjectKey> tried = new HashSet<>();
        while (freed < bytes) {
            List<ObjectKey> batch = new ArrayList<>();
            List<Held> held = new ArrayList<>();
            synchronized (order) {
                long planned = 0;
                Iterator<Map.Entry<ObjectKey, Held>> it = order.entrySet().iterator(); // iterating keeps the order
                while (it.hasNext() && planned < bytes - freed && batch.size() < BATCH) {
                    Map.Entry<ObjectKey, Held> e = it.next();
                    if (tried.add(e.getKey())) {
                        batch.add(e.getKey());
                        held.add(e.getValue());
                        planned += e.getValue().size;
                    }
                }
            }
            if (batch.isEmpty()) {
                break;
            }
            adapter.delete(batch); // onKeysDeleted (before it returns) drops the keys really removed
            synchronized (order) {
                for (int i = 0; i < batch.size(); i++) {
                    if (order.containsKey(batch.get(i))) {
                        locked++; // kept by the adapter: locked (a lookup is about to load it)
                    } else {
                        keys++;
                        freed += held.get(i).size;
                        hits += held.get(i).hits;
                    }
                }
            }
        }
        return new EvictionRound(keys, freed, 0, locked, 0, hits);
    }

    @Override
    public Map<String, Object> status() {
        synchronized (order) {
            return Map.of("policy", EvictionPolicies.LRU, "tracked_keys", order.size());
        }
    }

    /** Registered as {@code lru}. */
    public static final class Factory implements EvictionPolicyFactory {
        @Override
        public String name() {
            return EvictionPolicies.LRU;
        }

        @Override
        public EvictionPolicy create() {
            return new LruEvictionPolicy();
        }
    }
}
