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
import io.fdpblock.tools.util.Sizes;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

/**
 * What {@code run} and {@code waf} set up alike for the KV-cache job: the checks of the options they
 * share, the raw-block adapter's JSON, the storage manager around it, and the eviction policy.
 */
final class KvJobSetup {
    /** Placement ids of an emulated FDP namespace: the test bed's device has 8 handles. */
    static final List<Integer> EMULATED_PLACEMENT_IDS = List.of(0, 1, 2, 3, 4, 5, 6, 7);
    /** The checkpoint area of an lmcache_v1 store made by the job (as before fdpblock_v2: its devices reopen). */
    static final long V1_META_TOTAL_BYTES = 16L << 20;
    /** The largest chunk: one L1 chunk and one slot each. */
    static final long MAX_CHUNK_BYTES = 1L << 30;
    private static final ObjectMapper JSON = new ObjectMapper();

    private KvJobSetup() {}

    /**
     * Checks the options that shape the job's chunks and L1 (exit 2): --chunk-tokens, --kv-bytes-per-token and
     * the chunk they make (a multiple of 4096 for O_DIRECT, at most {@link #MAX_CHUNK_BYTES}), --max-chunks,
     * --l1-chunks, and that this machine has the memory for L1.
     *
     * @param exampleTokens the --chunk-tokens a refused chunk's message suggests (the command's default)
     * @return the chunk size in bytes
     */
    static int chunkBytes(CommandSpec spec, int chunkTokens, int kvBytesPerToken, int maxChunks, int l1Chunks,
            int exampleTokens) {
        Cli.intIn(spec, "--chunk-tokens", chunkTokens, 1, Integer.MAX_VALUE, "tokens per chunk");
        Cli.intIn(spec, "--kv-bytes-per-token", kvBytesPerToken, 1, Integer.MAX_VALUE, "KV bytes per token");
        long chunk = (long) chunkTokens * kvBytesPerToken; // both < 2^31: no overflow in a long
        if (chunk % 4096 != 0 || chunk > MAX_CHUNK_BYTES) {
            throw Cli.bad(spec, "--chunk-tokens " + chunkTokens + " x --kv-bytes-per-token " + kvBytesPerToken + " = "
                    + chunk + " bytes per chunk: must be a multiple of 4096 (O_DIRECT) and at most "
                    + Sizes.human(MAX_CHUNK_BYTES) + "; e.g. --chunk-tokens " + exampleTokens
                    + " --kv-bytes-per-token 12288");
        }
        Cli.intIn(spec, "--max-chunks", maxChunks, 2, 4096, "the longest prefix in chunks");
        Cli.intIn(spec, "--l1-chunks", l1Chunks, maxChunks, Integer.MAX_VALUE, "L1 chunks (at least --max-chunks)");
        Cli.fitsMemory(spec, "L1 of --l1-chunks " + l1Chunks + " x " + Sizes.human(chunk), chunk * l1Chunks,
                "--l1-chunks or the chunk size");
        return (int) chunk;
    }

    /** Checks --evict-at and --evict-to (exit 2): shares of L2, the second below the first. */
    static void evictionWatermarks(CommandSpec spec, double evictAt, double evictTo) {
        Cli.fraction(spec, "--evict-at", evictAt, "the L2 usage that starts an eviction");
        Cli.fraction(spec, "--evict-to", evictTo, "the L2 usage an eviction goes down to");
        if (!(evictTo < evictAt)) {
            throw Cli.bad(spec, "--evict-to " + evictTo + " must be below --evict-at " + evictAt);
        }
    }

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
