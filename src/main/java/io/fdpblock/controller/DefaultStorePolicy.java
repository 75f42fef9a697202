package io.fdpblock.controller;

import io.fdpblock.l2.ObjectKey;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code default}: every key to every adapter; L1 keeps everything. */
public class DefaultStorePolicy implements StorePolicy {
    @Override
    public Map<Integer, List<ObjectKey>> selectStoreTargets(List<ObjectKey> keys, List<AdapterDescriptor> adapters) {
        Map<Integer, List<ObjectKey>> out = new LinkedHashMap<>();
        List<ObjectKey> copy = List.copyOf(keys);
        for (AdapterDescriptor a : adapters) {
            out.put(a.index(), copy);
        }
        return out;
    }

    @Override
    public List<ObjectKey> selectL1Deletions(List<ObjectKey> keys) {
        return List.of();
    }

    /** Registered as {@code default}. */
    public static final class Factory implements StorePolicyFactory {
        @Override
        public String name() {
            return Policies.DEFAULT;
        }

        @Override
        public StorePolicy create() {
            return new DefaultStorePolicy();
        }
    }
}
