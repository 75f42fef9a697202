package io.fdpblock.controller;

import io.fdpblock.l2.ObjectKey;

import java.util.List;

/**
 * {@code skip_l1}: every key to every adapter, like {@code default}; after a successful store the keys
 * are deleted from L1 (L1 refuses keys still locked, e.g. while another adapter is still storing them,
 * whose own completion then deletes them).
 */
public final class SkipL1StorePolicy extends DefaultStorePolicy {
    @Override
    public List<ObjectKey> selectL1Deletions(List<ObjectKey> keys) {
        return List.copyOf(keys);
    }

    /** Registered as {@code skip_l1}. */
    public static final class Factory implements StorePolicyFactory {
        @Override
        public String name() {
            return Policies.SKIP_L1;
        }

        @Override
        public StorePolicy create() {
            return new SkipL1StorePolicy();
        }
    }
}
