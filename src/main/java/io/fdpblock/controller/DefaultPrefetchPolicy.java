package io.fdpblock.controller;

import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.ObjectKey;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code default}: each key from the lowest-index adapter that has it (greedy; plans never overlap). */
public final class DefaultPrefetchPolicy implements PrefetchPolicy {
    @Override
    public Map<Integer, Bitmap> selectLoadPlan(List<ObjectKey> keys, List<Bitmap> lookupResults,
            List<AdapterDescriptor> adapters) {
        Map<Integer, Bitmap> plan = new LinkedHashMap<>();
        Bitmap taken = new Bitmap(keys.size());
        for (int i = 0; i < lookupResults.size(); i++) {
            Bitmap mine = lookupResults.get(i).and(taken.not());
            plan.put(i, mine);
            taken = taken.or(mine);
        }
        return plan;
    }

    /** Registered as {@code default}. */
    public static final class Factory implements PrefetchPolicyFactory {
        @Override
        public String name() {
            return Policies.DEFAULT;
        }

        @Override
        public PrefetchPolicy create() {
            return new DefaultPrefetchPolicy();
        }
    }
}
