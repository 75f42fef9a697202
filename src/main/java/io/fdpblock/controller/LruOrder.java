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
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * One least-recently-used order of held keys and the eviction from its old end: the whole adapter's for
 * {@code lru}, one cache salt's for {@code tenant_quota}. Thread-safe: the listener methods run on the
 * adapter's threads, {@link #evict} on the eviction controller's.
 */
final class LruOrder {
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

    /** A stored key becomes the most recent (a replayed one too); its size is the one first heard. */
    void stored(ObjectKey key, long size) {
        synchronized (order) {
            if (order.get(key) == null) { // get: a replayed key becomes the most recent too
                order.put(key, new Held(size));
            }
        }
    }

    /** A loaded key becomes the most recent and counts a hit. */
    void accessed(ObjectKey key) {
        synchronized (order) {
            Held h = order.get(key);
            if (h != null) {
                h.hits++;
            }
        }
    }

    void deleted(ObjectKey key) {
        synchronized (order) {
            order.remove(key);
        }
    }

    int size() {
        synchronized (order) {
            return order.size();
        }
    }

    /**
     * Deletes from the least recent end until {@code bytes} are freed, passing over the keys
     * {@code eligible} refuses (counted as skipped for retention). What a delete did is the adapter's answer
     * per key ({@link L2Adapter#deleteReporting}), not whether the listener has heard of it yet: a listener
     * that hears late (or has been detached by a stop) must not make the round take more. For an adapter that
     * does not say, a key still tracked after its delete counts as kept, and the round also never takes
     * {@code used} below where it started minus {@code bytes}.
     *
     * @param used what the keys of this order use on the adapter now
     * @param eligible null: every key may go
     */
    EvictionRound evict(L2Adapter adapter, long bytes, LongSupplier used, Predicate<ObjectKey> eligible) {
        long freed = 0;
        long keys = 0;
        long locked = 0;
        long retained = 0;
        long hits = 0;
        long floor = used.getAsLong() - bytes;
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
                    if (e.getValue().size <= 0 || !tried.add(e.getKey())) {
                        continue;
                    }
                    if (eligible != null && !eligible.test(e.getKey())) {
                        retained++; // shielded: it stays where it is in the order
                        continue;
                    }
                    batch.add(e.getKey());
                    held.add(e.getValue());
                    planned += e.getValue().size;
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
            left = Math.min(bytes - freed, used.getAsLong() - floor);
        }
        return new EvictionRound(keys, freed, 0, locked, 0, hits, retained);
    }
}
