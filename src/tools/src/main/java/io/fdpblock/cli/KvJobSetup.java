package io.fdpblock.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fdpblock.controller.Policies;
import io.fdpblock.controller.EvictionPolicy;
import io.fdpblock.controller.ReclaimUnitEvictionPolicy;
import io.fdpblock.controller.StorageManager;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.NvmeNamespace;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

/**
 * What {@code run} and {@code waf} set up alike for the KV-cache job: the raw-block adapter's JSON, the
 * storage manager around it, and the eviction policy.
 */
final class KvJobSetup {
    /** Placement ids of an emulated FDP namespace: the test bed's device has 8 handles. */
    static final List<Integer> EMULATED_PLACEMENT_IDS = List.of(0, 1, 2, 3, 4, 5, 6, 7);
    /** The checkpoint area of an lmcache_v1 store made by the job (as before fdpblock_v2: its devices reopen). */
    static final long V1_META_TOTAL_BYTES = 16L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    private KvJobSetup() {}

    /** Slots hold a chunk and its 4 KiB header. */
    static long slotBytes(int chunkBytes) {
        return chunkBytes + 4096L;
    }

    /** Where the job's store is and how it is made. */
    record Store(String path, long size, int chunkBytes, String engine, String metaFormat, boolean format,
            boolean openDamaged) {
        Store(String path, long size, int chunkBytes, String engine, String metaFormat, boolean format) {
            this(path, size, chunkBytes, engine, metaFormat, format, false);
        }
    }

    /**
     * The adapter's JSON, built by Jackson (a path with quotes or backslashes stays one string). With {@code
     * fdp} the store uses FDP: data placement {@code placement}, checkpoints on the last placement id (of the
     * namespace's RUH Status, read from its generic device also when the store writes through the block device,
     * or of {@link #EMULATED_PLACEMENT_IDS} when {@code emulated}), freed slots reused per id.
     */
    static String adapterJson(Store store, boolean fdp, String placement, boolean emulated) throws IOException {
        ObjectNode j = JSON.createObjectNode();
        j.put("type", "raw_block");
        j.put("device_path", store.path());
        j.put("capacity_bytes", store.size());
        j.put("slot_bytes", slotBytes(store.chunkBytes()));
        j.put("meta_format", store.metaFormat());
        if (RawBlockCoreConfig.MetaFormat.parse(store.metaFormat()) == RawBlockCoreConfig.MetaFormat.LMCACHE_V1) {
            j.put("meta_total_bytes", V1_META_TOTAL_BYTES); // fdpblock_v2 sizes its own from the capacity
        }
        if (store.format()) {
            j.put("format", true);
        }
        if (store.openDamaged()) {
            j.put("open_damaged", true);
        }
        j.put("io_engine", IoEngine.parse(store.engine()).configName());
        j.put("meta_checkpoint_interval_sec", 5);
        if (fdp) {
            List<Integer> ids;
            if (emulated) {
                ids = EMULATED_PLACEMENT_IDS;
            } else {
                Path generic = WriteStreamsReport.genericDeviceOf(Path.of(store.path()));
                try (NvmeNamespace ns = NvmeNamespace.open(generic.toString())) {
                    ids = ns.ruhStatus().placementIds();
                }
                if (ids.isEmpty()) {
                    throw new IllegalArgumentException("--fdp: " + store.path() + " reports no placement ids (is FDP"
                            + " enabled? see fdpblock fdp status " + store.path() + ")");
                }
            }
            j.put("fdp_enabled", true);
            j.put("fdp_data_placement_policy", placement);
            j.put("meta_checkpoint_placement_id", ids.get(ids.size() - 1)); // the longest-lived data: a handle of its own
            j.put("fdp_slot_reuse_policy", "pid_affinity");
        }
        return JSON.writeValueAsString(j);
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
            if (!Policies.RECLAIM_UNIT.equals(name)) {
                throw new IllegalArgumentException("--group-order " + order + " applies to --eviction reclaim_unit only,"
                        + " not " + name);
            }
            ReclaimUnitEvictionPolicy.Order o = ReclaimUnitEvictionPolicy.Order.parse(order);
            return () -> new ReclaimUnitEvictionPolicy(o);
        }
        Policies.EVICTION.create(name); // an unknown name fails now, listing the known ones
        return () -> Policies.EVICTION.create(name);
    }
}
