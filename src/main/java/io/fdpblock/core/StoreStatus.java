package io.fdpblock.core;

import java.util.LinkedHashMap;
import java.util.Map;

/** {@link RawBlockCore#status()}: the store's state and counters, documented in the README. */
final class StoreStatus {
    private StoreStatus() {}

    static Map<String, Object> of(RawBlockCore core) {
        Map<String, Object> s = new LinkedHashMap<>();
        core.lock.lock();
        try {
            s.put("is_healthy", !core.closed && core.meta.lastError() == null && core.recovered.damage() == null);
            s.put("device_path", core.config.devicePath());
            s.put("io_engine", core.device.engine().configName());
            s.put("capacity_bytes", core.capacityBytes);
            s.put("slot_bytes", core.slotBytes);
            s.put("max_slots", core.slots.maxSlots());
            s.put("used_slots", core.slots.usedSlots());
            s.put("free_slots", core.slots.freeSlots());
            s.put("next_slot", core.slots.nextSlot());
            s.put("keys", core.index.size());
            s.put("locked_keys", core.index.lockedCount());
            s.put("inflight_keys", core.inflight.writes());
            s.put("dirty", core.meta.dirty());
            s.put("index_bytes", core.index.memoryBytes());
            s.put("index_off_heap_bytes", core.index.offHeapBytes());
            s.put("slot_affinity_hits", core.slots.affinityHits());
            s.put("slot_affinity_fallbacks", core.slots.affinityFallbacks());
            s.put("slots_per_reclaim_unit", core.slots.groupSlots());
        } finally {
            core.lock.unlock();
        }
        s.put("fdp_enabled", core.config.fdpEnabled());
        s.put("fdp_reported_placement_ids", core.placement.reported());
        s.put("fdp_data_placement_ids", core.placement.data());
        s.put("fdp_reclaim_unit_bytes", core.placement.reclaimUnitBytes());
        s.put("bytes_written_by_placement_id", core.placement.bytesWrittenById());
        s.put("deallocated_slots", core.releaser.deallocatedSlots());
        s.put("deallocate_failures", core.releaser.deallocateFailures());
        core.meta.status(s);
        StoreReadOnlyException readOnly = core.meta.readOnlyCause();
        s.put("read_only", readOnly != null);
        s.put("read_only_reason", readOnly == null ? null : readOnly.getMessage());
        s.put("acknowledged_not_durable_keys", core.meta.acknowledgedNotDurable());
        s.put("meta_snapshot_epoch", core.meta.snapshotEpoch());
        s.put("recovery", core.recovered.note());
        s.put("recovery_fell_back", core.recovered.fellBack());
        s.put("metadata_damage", core.recovered.damage());
        s.put("metadata_lost_keys", core.recovered.lostKeys());
        s.put("recovered_keys", core.recovered.recoveredKeys());
        s.put("verify_dropped_keys", core.recovered.droppedKeys());
        s.put("crc_mismatches", core.crcMismatches.get());
        s.put("rolled_back_keys", core.rolledBackKeys.get());
        s.put("device_full_rejects", core.deviceFullRejects.get());
        s.put("slot_waits", core.slotWaits.get());
        s.put("oversize_rejects", core.oversizeRejects.get());
        synchronized (core.abandoned) {
            s.put("abandoned_io_batches", core.abandoned.size());
        }
        return s;
    }
}
