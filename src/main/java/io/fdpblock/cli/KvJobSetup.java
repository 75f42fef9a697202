package io.fdpblock.cli;

import io.fdpblock.controller.EvictionPolicies;
import io.fdpblock.controller.EvictionPolicy;
import io.fdpblock.controller.ReclaimUnitEvictionPolicy;
import io.fdpblock.controller.StorageManager;
import io.fdpblock.nvme.NvmeNamespace;

import java.io.IOException;
import java.util.List;
import java.util.function.Supplier;

/**
 * What {@code run} and {@code waf} set up alike for the KV-cache job: the raw-block adapter's JSON, the
 * storage manager around it, and the eviction policy.
 */
final class KvJobSetup {
    /** Placement ids of an emulated FDP namespace: the test bed's device has 8 handles. */
    static final List<Integer> EMULATED_PLACEMENT_IDS = List.of(0, 1, 2, 3, 4, 5, 6, 7);
    /** The checkpoint area: 16 MiB (the job's 1 GiB default), less for small devices, at least 2 MiB. */
    static long metaTotalBytes(long size) {
        return Math.max(2L << 20, Math.min(16L << 20, size / 64 >> 20 << 20));
    }

    private KvJobSetup() {}

    /** Slots hold a chunk and its 4 KiB header. */
    static long slotBytes(int chunkBytes) {
        return chunkBytes + 4096L;
    }

    /**
     * The adapter's JSON. With {@code fdp} the store uses FDP: data placement {@code placement}, checkpoints
     * on the last placement id (of the namespace's RUH Status, or of {@link #EMULATED_PLACEMENT_IDS} when
     * {@code emulated}), freed slots reused per id.
     */
    static String adapterJson(String path, long size, int chunkBytes, String engine, boolean fdp, String placement,
            boolean emulated) throws IOException {
        StringBuilder j = new StringBuilder("{\"type\":\"raw_block\",\"device_path\":\"").append(path)
                .append("\",\"capacity_bytes\":").append(size).append(",\"slot_bytes\":").append(slotBytes(chunkBytes))
                .append(",\"meta_total_bytes\":").append(metaTotalBytes(size)).append(",\"io_engine\":\"").append(engine)
                .append("\",\"meta_checkpoint_interval_sec\":5");
        if (fdp) {
            List<Integer> ids;
            if (emulated) {
                ids = EMULATED_PLACEMENT_IDS;
            } else {
                try (NvmeNamespace ns = NvmeNamespace.open(path)) {
                    ids = ns.ruhStatus().placementIds();
                }
            }
            int metaId = ids.get(ids.size() - 1); // the longest-lived data gets a handle of its own
            j.append(",\"fdp_enabled\":true,\"fdp_data_placement_policy\":\"").append(placement).append('"')
                    .append(",\"meta_checkpoint_placement_id\":").append(metaId)
                    .append(",\"fdp_slot_reuse_policy\":\"pid_affinity\"");
        }
        return j.append('}').toString();
    }

    /** The manager the job runs through: L1 of {@code l1Chunks} chunks, stored chunks leave L1. */
    static StorageManager.Builder manager(int chunkBytes, int l1Chunks) {
        return StorageManager.builder().l1(chunkBytes, l1Chunks).storePolicy("skip_l1").prefetchPolicy("default");
    }

    /**
     * An eviction policy by name; {@code order} chooses the group order of {@code reclaim_unit} (null: its
     * default).
     *
     * @throws IllegalArgumentException for an unknown name or order, naming the known ones
     */
    static Supplier<EvictionPolicy> eviction(String name, String order) {
        if (order != null) {
            if (!EvictionPolicies.RECLAIM_UNIT.equals(name)) {
                throw new IllegalArgumentException("--group-order " + order + " applies to --eviction reclaim_unit only,"
                        + " not " + name);
            }
            ReclaimUnitEvictionPolicy.Order o = ReclaimUnitEvictionPolicy.Order.parse(order);
            return () -> new ReclaimUnitEvictionPolicy(o);
        }
        EvictionPolicies.create(name); // an unknown name fails now, listing the known ones
        return () -> EvictionPolicies.create(name);
    }
}
