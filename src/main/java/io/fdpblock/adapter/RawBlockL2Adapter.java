package io.fdpblock.adapter;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.core.DeleteOutcome;
import io.fdpblock.core.LoadRequest;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.SaltTable;
import io.fdpblock.core.SlotGroups;
import io.fdpblock.core.StoreKey;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.AbstractL2Adapter;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterFactory;
import io.fdpblock.l2.L2DeleteResult;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.l2.ReclaimUnitGroups;

import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The L2 contract over a {@link RawBlockCore}, with no thread of its own: a lookup completes at
 * submit (it is an in-memory question), stores and loads go from the submitting thread straight to the
 * device and are completed by its callbacks. Usage is charged per slot, by cache salt.
 *
 * <p>A store that knows keys by their hash (fdpblock_v2) gets each key's hash with it, as the
 * {@link ObjectKey} keeps it: a lookup, the load and the unlock of the same keys hash each of them once
 * between them, and a put of a key that was looked up not at all.
 */
public final class RawBlockL2Adapter extends AbstractL2Adapter implements ReclaimUnitGroups {
    private final RawBlockCore core;
    private final long slotBytes;
    /** The FDP placement policy, or null when data gets no directive. */
    private final SaltPrefixPlacement placement;
    /** Store and load tasks submitted whose result is not recorded yet (lookups complete at submit). */
    private final AtomicLong storesInFlight = new AtomicLong();
    private final AtomicLong loadsInFlight = new AtomicLong();
    /** Whether the store takes keys' hashes ({@link RawBlockCore#keyedByHash()}); else none is computed for it. */
    private final boolean handsOverHashes;

    private RawBlockL2Adapter(RawBlockCore core) throws IOException {
        this.core = core;
        this.slotBytes = core.config().slotBytes();
        this.handsOverHashes = core.keyedByHash();
        this.placement = core.config().fdpEnabled()
                && core.config().fdpDataPlacementPolicy() == RawBlockCoreConfig.PlacementPolicy.CACHE_SALT_PREFIX
                ? new SaltPrefixPlacement(core.dataPlacementIds()) : null;
        core.keysBySalt().forEach((salt, keys) -> charge(salt, keys * slotBytes)); // what open recovered
    }

    /**
     * Opens the device of {@code config} and recovers what it holds.
     *
     * @throws IllegalArgumentException for a configuration the device cannot serve, before it is opened
     *         ({@link RawBlockCore#open(RawBlockCoreConfig)})
     */
    public static RawBlockL2Adapter open(RawBlockCoreConfig config) throws IOException {
        RawBlockCore core = RawBlockCore.open(config);
        try {
            return new RawBlockL2Adapter(core);
        } catch (IOException | RuntimeException e) {
            core.close();
            throw e;
        }
    }

    /** Over a device the caller owns (e.g. a test's fault-injecting wrapper). */
    public static RawBlockL2Adapter open(RawBlockCoreConfig config, BlockDevice device) throws IOException {
        RawBlockCore core = RawBlockCore.open(config, device);
        try {
            return new RawBlockL2Adapter(core);
        } catch (IOException | RuntimeException e) {
            core.close();
            throw e;
        }
    }

    /** The store underneath (for status and experiments). */
    public RawBlockCore core() {
        return core;
    }

    /** Registers {@code region} with the device (io_uring: fixed buffers for stores and loads in it). */
    @Override
    public boolean registerMemory(MemorySegment region) throws IOException {
        checkOpen();
        return core.device().registerBuffers(region);
    }

    @Override
    public void unregisterMemory(MemorySegment region) throws IOException {
        if (!isClosed()) {
            core.device().unregisterBuffers(region);
        }
    }

    @Override
    protected String describe() {
        return "raw_block L2 adapter on " + core.config().devicePath();
    }

    @Override
    protected long capacityBytes() {
        return core.capacityBytes();
    }

    @Override
    public long submitStoreTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        checkKeysAndObjects(keys, objects);
        long id = newTaskId();
        long start = System.nanoTime();
        List<PutRequest> reqs = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            MemoryObj o = objects.get(i);
            reqs.add(new PutRequest(storeKey(keys.get(i)), o.segment(), o.meta(),
                    placement == null ? PlacementId.NONE : placement.placementFor(keys.get(i))));
        }
        storesInFlight.incrementAndGet(); // before the submit: its completion may run first
        try {
            core.putAsync(reqs, (RawBlockCore.PutCompletion) (results, fresh) -> onStored(id, keys, results, fresh,
                    start));
        } catch (IllegalArgumentException e) {
            storesInFlight.decrementAndGet();
            throw e;
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, describe() + ": store task " + id + " failed: " + e.getMessage());
            storesInFlight.decrementAndGet();
            completeStore(id, L2StoreResult.failed(), start);
        }
        return id;
    }

    private void onStored(long id, List<ObjectKey> keys, boolean[] results, boolean[] fresh, long start) {
        boolean success = true;
        long bytes = 0;
        List<ObjectKey> stored = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        for (int i = 0; i < results.length; i++) {
            success &= results[i];
            if (fresh[i]) {
                ObjectKey k = keys.get(i);
                stored.add(k);
                sizes.add(slotBytes); // charged, announced and reported as LMCache does: the slot it occupies
                bytes += slotBytes;
                charge(k.cacheSalt(), slotBytes);
            }
        }
        notifyStored(stored, sizes); // keys that did commit are announced even when the task failed
        storesInFlight.decrementAndGet();
        completeStore(id, success ? new L2StoreResult(true, bytes) : L2StoreResult.failed(), start);
    }

    @Override
    public long submitLookupAndLockTask(List<ObjectKey> keys) {
        return lookupAtSubmit(keys, k -> {
            try (HashedKeyBatch batch = batch(k)) {
                return Bitmap.of(core.exists(batch, true));
            }
        });
    }

    @Override
    public void submitUnlock(List<ObjectKey> keys) {
        checkOpen();
        if (keys == null || keys.isEmpty()) {
            return;
        }
        try (HashedKeyBatch batch = batch(checkNoNulls(keys))) {
            core.unlock(batch);
        }
    }

    /**
     * Reads each hit straight into its object's buffer (zero copy). A deliberate deviation: a key whose
     * payload fails its CRC32C is reported as a miss, but its buffer may already hold those bytes.
     */
    @Override
    public long submitLoadTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        checkKeysAndObjects(keys, objects);
        List<LoadRequest> reqs = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) { // a buffer the load could not fill is refused here, no task made
            reqs.add(new LoadRequest(storeKey(keys.get(i)), objects.get(i).segment()));
        }
        long id = newTaskId();
        long start = System.nanoTime();
        loadsInFlight.incrementAndGet();
        try {
            core.loadAsync(reqs, results -> {
                Bitmap hits = Bitmap.of(results);
                notifyAccessed(hits, keys);
                loadsInFlight.decrementAndGet();
                completeLoad(id, hits, start);
            });
        } catch (IllegalArgumentException e) {
            loadsInFlight.decrementAndGet();
            throw e; // a buffer too small: the caller's mistake, said at submit
        } catch (RuntimeException e) {
            loadsInFlight.decrementAndGet();
            failLoad(id, keys.size(), start, e);
        }
        return id;
    }

    @Override
    public List<L2DeleteResult> deleteReporting(List<ObjectKey> keys, boolean force) {
        checkOpen();
        if (keys == null || keys.isEmpty()) {
            return List.of();
        }
        DeleteOutcome[] outcome;
        try (HashedKeyBatch batch = batch(checkNoNulls(keys))) {
            outcome = core.deleteWithOutcome(batch, force);
        }
        List<ObjectKey> gone = new ArrayList<>();
        List<L2DeleteResult> results = new ArrayList<>(outcome.length);
        for (int i = 0; i < outcome.length; i++) {
            if (outcome[i] == DeleteOutcome.REMOVED) { // a cancelled write was never charged
                gone.add(keys.get(i));
                charge(keys.get(i).cacheSalt(), -slotBytes);
            }
            results.add(switch (outcome[i]) {
                case REMOVED -> L2DeleteResult.REMOVED;
                case LOCKED -> L2DeleteResult.LOCKED;
                case CANCELLED, MISSING -> L2DeleteResult.NOT_HELD;
            });
        }
        notifyDeleted(gone);
        return results;
    }

    /** {@code key} as the store takes it: with the hash the key keeps, when the store uses hashes. */
    private StoreKey storeKey(ObjectKey key) {
        return handsOverHashes ? new StoreKey(key.encoded(), key.encodedHashHigh(), key.encodedHashLow())
                : new StoreKey(key.encoded());
    }

    /**
     * {@code keys}, once none is null: the store reads them under its lock, and a delete stopped half way
     * by a null key would leave the slots of those before it unreleased.
     */
    private static List<ObjectKey> checkNoNulls(List<ObjectKey> keys) {
        for (int i = 0; i < keys.size(); i++) {
            if (keys.get(i) == null) {
                throw new IllegalArgumentException("keys[" + i + "] is null; nothing was done");
            }
        }
        return keys;
    }

    /**
     * The keys of one call as the store reads them, with their hashes when the store uses hashes, all
     * computed here, before the store's lock is taken: the lock is then held for the index probes alone,
     * not for the hashing too (most of a large lookup's CPU). Closed when the call returns.
     */
    private HashedKeyBatch batch(List<ObjectKey> keys) {
        return HashedKeyBatch.of(keys, handsOverHashes);
    }

    // ---- reclaim-unit groups (docs/contract.md section 7) ----

    @Override
    public long groupBytes() {
        return core.slotGroups().groupBytes();
    }

    @Override
    public int[] groupsOf(List<ObjectKey> keys) {
        checkOpen();
        try (HashedKeyBatch batch = batch(checkNoNulls(keys))) {
            return core.slotGroups().groupsOf(batch);
        }
    }

    @Override
    public List<Group> groups() {
        checkOpen();
        return core.slotGroups().groups();
    }

    @Override
    public Eviction evictGroup(int group) {
        checkOpen();
        SlotGroups.Eviction e;
        try {
            e = core.slotGroups().evict(group);
        } catch (IOException ex) {
            throw new UncheckedIOException("evicting slot group " + group + " of " + core.config().devicePath()
                    + ": its slot headers could not be read (nothing was evicted)", ex);
        }
        List<ObjectKey> gone = new ArrayList<>(e.removed().size());
        for (String k : e.removed()) {
            charge(SaltTable.saltOf(k), -slotBytes); // as usage was charged: by the store's salt of the key
            try {
                gone.add(ObjectKey.fromEncoded(k));
            } catch (IllegalArgumentException ex) {
                // a key written by another tool: deleted, but no listener could know it
            }
        }
        notifyDeleted(gone);
        return new Eviction(group, e.outcome(), gone, e.removed().size() * slotBytes, e.offset(), e.bytes());
    }

    /** Replayed with the size they are charged: the slot each occupies, as for new keys. */
    @Override
    protected Map<ObjectKey, Long> heldKeys() {
        Map<ObjectKey, Long> out = new LinkedHashMap<>();
        Map<String, Integer> held;
        try {
            held = core.keySizes();
        } catch (IOException e) {
            throw new UncheckedIOException("reading the held keys back from " + core.config().devicePath(), e);
        }
        held.forEach((k, size) -> {
            try {
                out.put(ObjectKey.fromEncoded(k), slotBytes);
            } catch (IllegalArgumentException e) {
                // not a key of this format: not announced
            }
        });
        return out;
    }

    /**
     * LMCache's raw_block adapter status (its type, task counts and the store's status as a nested
     * {@code core} map, docs/contract.md section 2), beside the store's own flat status map.
     */
    @Override
    protected Map<String, Object> backendStatus() {
        Map<String, Object> store = core.status();
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("type", "RawBlockL2Adapter");
        s.putAll(store);
        s.put("fdp_data_placement_policy", core.config().fdpDataPlacementPolicy().configName());
        if (placement != null) {
            s.put("fdp_buckets", placement.buckets());
            s.put("fdp_placement_fallbacks", placement.fallbacks());
        }
        s.put("store_inflight_task_count", storesInFlight.get());
        s.put("lookup_inflight_task_count", 0L); // a lookup completes inside its submit
        s.put("load_inflight_task_count", loadsInFlight.get());
        s.put("core", lmcacheCoreStatus(store));
        return s;
    }

    /**
     * The store's status under the keys of LMCache's {@code RawBlockCore.report_status}: what they mean
     * there, from {@code store} (the flat map) and the configuration. LMCache's checkpoint-idleness counters
     * ({@code inflight_io_count}, {@code metadata_dirty_total}, {@code metadata_persisted}) have no
     * counterpart here and are left out (docs/contract.md section 6).
     */
    private Map<String, Object> lmcacheCoreStatus(Map<String, Object> store) {
        RawBlockCoreConfig c = core.config();
        IoEngine engine = c.ioEngine();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("is_healthy", store.get("is_healthy"));
        m.put("type", "RawBlockCore");
        m.put("key_namespace", "object"); // LMCache's namespace of ObjectKey-encoded keys
        m.put("device_path", store.get("device_path"));
        m.put("block_align", c.blockAlign());
        m.put("header_bytes", c.headerBytes());
        m.put("slot_bytes", store.get("slot_bytes"));
        m.put("meta_total_bytes", store.getOrDefault("meta_total_bytes", c.metaTotalBytes()));
        m.put("usable_capacity_bytes", core.capacityBytes()); // the slot space, not the configured capacity
        m.put("indexed_key_count", store.get("keys"));
        m.put("inflight_key_count", store.get("inflight_keys"));
        m.put("locked_key_count", store.get("locked_keys"));
        // LMCache's free list: slots freed for reuse, below next_slot (never-used ones above it are not in it)
        m.put("free_slot_count", ((Number) store.get("next_slot")).longValue()
                - ((Number) store.get("used_slots")).longValue());
        m.put("next_slot", store.get("next_slot"));
        m.put("max_slots", store.get("max_slots"));
        m.put("metadata_seq", store.get("checkpoint_seq"));
        // as opened: io_uring always reads and writes O_DIRECT, passthru and memory have no page cache
        m.put("use_odirect", switch (engine) {
            case POSIX -> c.useOdirect();
            case IO_URING -> true;
            case URING_CMD, MEMORY -> false;
        });
        m.put("enable_zero_copy", true);
        // LMCache's engines are posix and io_uring; passthru is io_uring with use_uring_cmd
        m.put("io_engine", engine == IoEngine.URING_CMD ? IoEngine.IO_URING.configName() : engine.configName());
        m.put("iouring_queue_depth", c.iouringQueueDepth());
        m.put("use_uring_cmd", engine == IoEngine.URING_CMD);
        return m;
    }

    /** @throws UncheckedIOException when the store's final checkpoint could not be written */
    @Override
    protected void closeBackend() {
        try {
            core.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Registered for {@code "type": "raw_block"}. */
    public static final class Factory implements L2AdapterFactory {
        @Override
        public String type() {
            return "raw_block";
        }

        @Override
        public L2Adapter create(JsonNode config) throws IOException {
            return open(RawBlockCoreConfig.fromJson(config));
        }
    }
}
