package io.fdpblock.core;

import java.util.LinkedHashMap;
import java.util.Map;

/** {@link RawBlockCore#status()}: the store's state and counters, documented in docs/store.md (Status map). */
final class StoreStatus {
    private StoreStatus() {}

    static Map<String, Object> of(StoreParts store) {
        Map<String, Object> s = new LinkedHashMap<>();
        store.lock().lock();
        try {
            s.put("is_healthy", !store.gate().closedLocked() && store.meta().lastError() == null
                    && store.recovered().damage() == null);
            s.put("device_path", store.config().devicePath());
            s.put("io_engine", store.device().engine().configName());
            s.put("capacity_bytes", store.layout().capacityBytes());
            s.put("slot_bytes", store.layout().slotBytes());
            s.put("max_slots", store.slots().maxSlots());
            s.put("used_slots", store.slots().usedSlots());
            s.put("free_slots", store.slots().freeSlots());
            s.put("next_slot", store.slots().nextSlot());
            s.put("keys", store.index().size());
            s.put("locked_keys", store.index().lockedCount());
            s.put("inflight_keys", store.inflight().writes());
            s.put("dirty", store.meta().dirty());
            s.put("index_bytes", store.index().memoryBytes());
            s.put("index_off_heap_bytes", store.index().offHeapBytes());
            s.put("slot_affinity_hits", store.slots().affinityHits());
            s.put("slot_affinity_fallbacks", store.slots().affinityFallbacks());
            s.put("slots_per_reclaim_unit", store.slots().groupSlots());
        } finally {
            store.lock().unlock();
        }
        s.put("fdp_enabled", store.config().fdpEnabled());
        s.put("fdp_reported_placement_ids", store.placement().reported());
        s.put("fdp_data_placement_ids", store.placement().data());
        s.put("fdp_reclaim_unit_bytes", store.placement().reclaimUnitBytes());
        s.put("bytes_written_by_placement_id", store.placement().bytesWrittenById());
        s.put("deallocated_slots", store.releaser().deallocatedSlots());
        s.put("deallocate_failures", store.releaser().deallocateFailures());
        store.meta().status(s);
        StoreReadOnlyException readOnly = store.meta().readOnlyCause();
        s.put("read_only", readOnly != null);
        s.put("read_only_reason", readOnly == null ? null : readOnly.getMessage());
        s.put("acknowledged_not_durable_keys", store.meta().acknowledgedNotDurable());
        s.put("meta_snapshot_epoch", store.meta().snapshotEpoch());
        s.put("recovery", store.recovered().note());
        s.put("recovery_fell_back", store.recovered().fellBack());
        s.put("metadata_damage", store.recovered().damage());
        s.put("metadata_lost_keys", store.recovered().lostKeys());
        s.put("recovered_keys", store.recovered().recoveredKeys());
        s.put("verify_dropped_keys", store.recovered().droppedKeys());
        s.put("crc_mismatches", store.counters().crcMismatches.get());
        s.put("rolled_back_keys", store.counters().rolledBackKeys.get());
        s.put("device_full_rejects", store.counters().deviceFullRejects.get());
        s.put("slot_waits", store.counters().slotWaits.get());
        s.put("oversize_rejects", store.counters().oversizeRejects.get());
        s.put("abandoned_io_batches", store.quarantine().size());
        return s;
    }
}
