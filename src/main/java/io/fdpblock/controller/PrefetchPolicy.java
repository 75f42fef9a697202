package io.fdpblock.controller;

import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.ObjectKey;

import java.util.List;
import java.util.Map;

/**
 * Decides which adapter each key of a prefetch is loaded from. Chosen by name from
 * {@link Policies#PREFETCH}; called on the prefetch controller's thread only.
 */
public interface PrefetchPolicy {
    /**
     * @param keys the keys of the request
     * @param lookupResults per adapter (by index) its lookup bitmap over {@code keys} (hits are locked)
     * @return adapter index -&gt; bitmap over {@code keys} of what to load from it. Plans must not overlap
     *         and may only name hits of that adapter; the controller enforces both (bits outside the
     *         adapter's hits are dropped, and a key planned twice goes to the lower index), then trims
     *         the plan to its contiguous prefix.
     */
    Map<Integer, Bitmap> selectLoadPlan(List<ObjectKey> keys, List<Bitmap> lookupResults,
            List<AdapterDescriptor> adapters);
}
