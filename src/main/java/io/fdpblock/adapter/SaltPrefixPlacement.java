package io.fdpblock.adapter;

import io.fdpblock.l2.ObjectKey;
import io.fdpblock.nvme.PlacementId;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * FDP placement policy {@code cache_salt_prefix}: the bucket of a key is its cache salt's prefix before
 * the first ':', lower-cased ({@code "RAG:app1"} -> {@code "rag"}); a salt without ':' gets no
 * directive. Buckets get the device-reported data ids first come, first served; when the ids run out,
 * later buckets write without a directive (counted, warned once).
 */
final class SaltPrefixPlacement {
    // the store's logger: what is logged here was logged by the store's package before
    private static final System.Logger LOG = System.getLogger("io.fdpblock.core");

    private final List<Integer> ids;
    private final Map<String, Integer> buckets = new ConcurrentHashMap<>();
    private final AtomicLong fallbacks = new AtomicLong();
    private int nextId;
    private boolean warned;

    SaltPrefixPlacement(List<Integer> dataPlacementIds) {
        this.ids = List.copyOf(dataPlacementIds);
    }

    /** @return the placement id for {@code key}, or {@link PlacementId#NONE} for no directive */
    PlacementId placementFor(ObjectKey key) {
        String salt = key.cacheSalt();
        int colon = salt.indexOf(':');
        if (colon < 0) {
            return PlacementId.NONE;
        }
        String bucket = salt.substring(0, colon).toLowerCase(Locale.ROOT);
        Integer id = buckets.get(bucket);
        if (id != null) {
            return PlacementId.of(id);
        }
        synchronized (this) {
            id = buckets.get(bucket);
            if (id == null && nextId < ids.size()) {
                id = ids.get(nextId++);
                buckets.put(bucket, id);
            }
            if (id == null) {
                fallbacks.incrementAndGet();
                if (!warned) {
                    warned = true;
                    LOG.log(System.Logger.Level.WARNING, "FDP placement: all " + ids.size()
                            + " data placement ids are taken by buckets " + buckets.keySet() + "; bucket '" + bucket
                            + "' and later ones are written without a placement directive");
                }
            }
            return id == null ? PlacementId.NONE : PlacementId.of(id);
        }
    }

    Map<String, Integer> buckets() {
        return new TreeMap<>(buckets);
    }

    long fallbacks() {
        return fallbacks.get();
    }
}
