package io.fdpblock.controller;

import io.fdpblock.l2.ObjectKey;

import java.util.List;
import java.util.Map;

/**
 * Decides where new L1 objects are stored and what L1 drops after a successful store. Chosen by name
 * from {@link Policies#STORE}; called on the store controller's thread only.
 */
public interface StorePolicy {
    /**
     * @param keys newly written keys of one shape (same model name and kv rank), in write order
     * @return adapter index -&gt; the keys to store there (a key may go to several adapters); indices
     *         outside the adapter list are ignored
     */
    Map<Integer, List<ObjectKey>> selectStoreTargets(List<ObjectKey> keys, List<AdapterDescriptor> adapters);

    /**
     * @param keys the keys of one store task that succeeded
     * @return which of them to delete from L1 now (locked ones are kept by L1)
     */
    List<ObjectKey> selectL1Deletions(List<ObjectKey> keys);
}
