package io.fdpblock.l2;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An adapter's task results from completion to their one-shot pickup (docs/contract.md section 2):
 * the completing thread records a result, the caller takes it exactly once. Thread-safe.
 */
final class TaskResults {
    private final ConcurrentHashMap<Long, L2StoreResult> stores = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Bitmap> lookups = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Bitmap> loads = new ConcurrentHashMap<>();

    void putStore(long taskId, L2StoreResult result) {
        stores.put(taskId, result);
    }

    void putLookup(long taskId, Bitmap hits) {
        lookups.put(taskId, hits);
    }

    void putLoad(long taskId, Bitmap hits) {
        loads.put(taskId, hits);
    }

    /** Every store result recorded and not yet popped, each given once. */
    Map<Long, L2StoreResult> popStores() {
        Map<Long, L2StoreResult> out = new HashMap<>();
        for (Long id : stores.keySet()) {
            L2StoreResult r = stores.remove(id);
            if (r != null) { // another thread may have popped it between keySet and remove
                out.put(id, r);
            }
        }
        return out;
    }

    /** @return the lookup's bitmap once; null while pending, for unknown ids, and after it was taken */
    Bitmap takeLookup(long taskId) {
        return lookups.remove(taskId);
    }

    Bitmap takeLoad(long taskId) {
        return loads.remove(taskId);
    }

    /**
     * The counts of results waiting to be taken, into {@code status} as {@code pending_*_results} and
     * under LMCache's names for the same counts, {@code completed_*_task_count}.
     */
    void putPending(Map<String, Object> status) {
        status.put("pending_store_results", stores.size());
        status.put("pending_lookup_results", lookups.size());
        status.put("pending_load_results", loads.size());
        status.put("completed_store_task_count", stores.size());
        status.put("completed_lookup_task_count", lookups.size());
        status.put("completed_load_task_count", loads.size());
    }
}
