package io.fdpblock.controller;

import io.fdpblock.cache.KvLayout;
import io.fdpblock.cache.L1Manager;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2Adapters;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The top-level entry point: L1, the L2 adapters, and the store and prefetch controllers.
 *
 * <pre>{@code
 * try (StorageManager sm = StorageManager.builder().l1(64 << 10, 4096)
 *         .adapterJson("{\"type\":\"raw_block\",\"device_path\":\"/dev/nvme0n1\",\"slot_bytes\":69632}")
 *         .build()) {
 *     sm.store(keys, data);                                // L1 now, L2 in the background
 *     PrefetchHandle h = sm.submitPrefetchTask(keys, KvLayout.ofBytes(64 << 10));
 *     Integer found = sm.awaitPrefetchStatus(h, Duration.ofSeconds(5));
 *     List<MemoryObj> objs = sm.readPrefetchedResults(keys.subList(0, found));
 *     ...                                                  // use the read-locked objects
 *     sm.finishReadPrefetched(keys.subList(0, found));
 * }
 * }</pre>
 *
 * Stores go L1 first ({@code reserveWrite} + fill + {@code finishWrite}); the store controller then
 * copies them to every adapter the store policy names. A prefetch first read-locks the contiguous L1
 * prefix hits and hands only the remaining keys to the prefetch controller. The adapters' devices get
 * the L1 pool offered for zero-copy I/O ({@link L2Adapter#registerMemory}).
 */
public final class StorageManager implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.controller");

    private final L1Manager l1;
    private final boolean ownsL1;
    private final List<L2Adapter> adapters;
    private final List<L2Adapter> owned;
    private final StoreController storeController;
    private final PrefetchController prefetchController;
    private final List<EvictionController> evictionControllers;
    private final TenantQuotas tenantQuotas;
    private final RetentionLedger retention;
    private final Duration defaultRetentionTtl;
    private final Object lifecycle = new Object();
    private volatile boolean closed;

    private StorageManager(Builder b, L1Manager l1, List<L2Adapter> adapters, List<L2Adapter> owned) throws IOException {
        this.l1 = l1;
        this.ownsL1 = b.l1 == null;
        this.adapters = List.copyOf(adapters);
        this.owned = List.copyOf(owned);
        for (L2Adapter a : this.adapters) {
            try {
                l1.registerWith(a);
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "L1 pool not registered with " + a
                        + " (its I/O on L1 takes the non-fixed path): " + e.getMessage());
            }
        }
        StoreController sc = new StoreController(l1, this.adapters, Policies.STORE.create(b.storePolicy));
        PrefetchController pc;
        try {
            pc = new PrefetchController(l1, this.adapters, Policies.PREFETCH.create(b.prefetchPolicy), b.maxInFlight,
                    b.loadDeadline);
        } catch (IOException | RuntimeException e) {
            sc.stop();
            throw e;
        }
        this.tenantQuotas = new TenantQuotas(); // the manager's own: a builder may build more than one
        b.tenantQuotas.snapshot().forEach(this.tenantQuotas::set);
        this.defaultRetentionTtl = b.defaultRetentionTtl;
        List<EvictionController> ecs = new ArrayList<>();
        RetentionLedger ledger = null;
        try {
            if (b.retentionFraction > 0) {
                ledger = retentionLedger(b, this.adapters);
            }
            if (b.evictionPolicy != null) {
                for (L2Adapter a : this.adapters) {
                    ecs.add(new EvictionController(a, b.evictionPolicy.get(), b.evictHigh, b.evictLow, tenantQuotas,
                            ledger));
                }
            }
        } catch (RuntimeException e) {
            ecs.forEach(EvictionController::stop);
            sc.stop();
            pc.stop();
            throw e;
        }
        this.storeController = sc;
        this.prefetchController = pc;
        this.evictionControllers = List.copyOf(ecs);
        this.retention = ledger;
        sc.start();
        pc.start();
        ecs.forEach(EvictionController::start);
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * The retention of {@code b}: one budget, a share of the one adapter's capacity (the default store policy
     * stores every key to every adapter, so that one budget could not keep several below their watermarks).
     */
    private static RetentionLedger retentionLedger(Builder b, List<L2Adapter> adapters) {
        if (b.evictionPolicy == null) {
            throw new IllegalArgumentException("retention shields keys from L2 eviction, and there is none: add"
                    + " eviction(policy, high, low), or drop retention");
        }
        if (adapters.size() != 1) {
            throw new IllegalArgumentException("retention takes a share of one L2 adapter's capacity; this manager"
                    + " has " + adapters.size() + " adapters: use one adapter, or no retention");
        }
        long capacity = adapters.get(0).usage().totalCapacityBytes();
        if (capacity <= 0) {
            throw new IllegalArgumentException("retention takes a share of the L2 adapter's capacity, and "
                    + adapters.get(0) + " does not know its capacity: give it one, or use no retention");
        }
        return new RetentionLedger((long) (b.retentionFraction * capacity), System::nanoTime);
    }

    /**
     * A manager with an L1 of {@code chunkCount} chunks of {@code chunkBytes}, default policies, and
     * one adapter per LMCache-style JSON config ({@link L2Adapters#create}); it owns and closes them.
     */
    public static StorageManager create(int chunkBytes, int chunkCount, String... adapterJsons) throws IOException {
        Builder b = builder().l1(chunkBytes, chunkCount);
        for (String json : adapterJsons) {
            b.adapterJson(json);
        }
        return b.build();
    }

    public L1Manager l1() {
        return l1;
    }

    public List<L2Adapter> adapters() {
        return adapters;
    }

    public StoreController storeController() {
        return storeController;
    }

    public PrefetchController prefetchController() {
        return prefetchController;
    }

    /** One per adapter, in adapter order, when the builder named an eviction policy; else empty. */
    public List<EvictionController> evictionControllers() {
        return evictionControllers;
    }

    /**
     * The tenants' L2 quotas, which the {@code tenant_quota} eviction policy enforces: set and remove them at
     * any time, each change applies from the next eviction round (the builder's
     * {@link Builder#tenantQuota} are the first ones). Unused by other policies.
     */
    public TenantQuotas tenantQuotas() {
        return tenantQuotas;
    }

    /** Which keys are shielded from L2 eviction until when; null without {@link Builder#retention}. */
    public RetentionLedger retention() {
        return retention;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("StorageManager is closed");
        }
    }

    // ------------------------------------------------------------------ store

    /**
     * Copies {@code data[i]} into L1 under {@code keys[i]}; the store controller then stores it to L2.
     *
     * @return per key whether it was written (false: already in L1, or no room in L1 even after
     *         evicting: counted in {@link #status()} as {@code l1_refused_stores} and logged once)
     * @throws IllegalArgumentException for unequal lists or data larger than an L1 chunk
     */
    public boolean[] store(List<ObjectKey> keys, List<MemorySegment> data) {
        return store(keys, data, defaultRetentionTtl);
    }

    /**
     * Like {@link #store(List, List)}, and the keys it stores, or finds in L1 already, are shielded from L2
     * eviction for {@code retentionTtl} from now, or longer if they were already (within the retention
     * budget; keys past it are stored but not shielded: {@link RetentionLedger}). Without
     * {@link Builder#retention} the TTL is ignored.
     *
     * @param retentionTtl zero or null: no retention for this store
     */
    public boolean[] store(List<ObjectKey> keys, List<MemorySegment> data, Duration retentionTtl) {
        if (keys == null || data == null || keys.size() != data.size()) {
            throw new IllegalArgumentException("keys and data must be lists of equal length");
        }
        checkOpen();
        List<Long> sizes = new ArrayList<>(data.size());
        for (MemorySegment d : data) {
            sizes.add(d.byteSize());
        }
        List<MemoryObj> objs = l1.reserveWrite(keys, sizes, false);
        boolean[] ok = new boolean[keys.size()];
        List<ObjectKey> written = new ArrayList<>(keys.size());
        List<ObjectKey> retained = new ArrayList<>(keys.size());
        List<Long> retainedSizes = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            MemoryObj o = objs.get(i);
            if (o != null) {
                MemorySegment.copy(data.get(i), 0, o.segment(), 0, data.get(i).byteSize());
                written.add(keys.get(i));
                ok[i] = true;
            }
            // a key L1 could not take holds no data here and is not retained; one it holds already is
            if (o != null || l1.contains(keys.get(i))) {
                retained.add(keys.get(i));
                retainedSizes.add(sizes.get(i));
            }
        }
        retain(retained, retainedSizes, retentionTtl); // before L2 can announce the keys (finishWrite)
        l1.finishWrite(written);
        return ok;
    }

    private void retain(List<ObjectKey> keys, List<Long> sizes, Duration ttl) {
        if (retention != null && ttl != null && !ttl.isZero()) {
            retention.retain(keys, sizes, ttl);
        }
    }

    /**
     * Zero-copy store, step 1: write-locked L1 objects of {@code layout} to fill in place.
     *
     * @return per key its object, or null when it could not be reserved
     */
    public List<MemoryObj> reserveWrite(List<ObjectKey> keys, KvLayout layout) {
        checkOpen();
        return l1.reserveWrite(keys, layout, false);
    }

    /** Zero-copy store, step 2: the filled objects become readable and are stored to L2. */
    public void finishWrite(List<ObjectKey> keys) {
        finishWrite(keys, defaultRetentionTtl);
    }

    /**
     * Like {@link #finishWrite(List)}, and the keys are shielded from L2 eviction for {@code retentionTtl}
     * (as {@link #store(List, List, Duration)} does).
     *
     * @param retentionTtl zero or null: no retention for these keys
     */
    public void finishWrite(List<ObjectKey> keys, Duration retentionTtl) {
        if (retention != null && retentionTtl != null && !retentionTtl.isZero() && keys != null) {
            List<Long> sizes = new ArrayList<>(keys.size());
            for (ObjectKey k : keys) {
                sizes.add(l1.objectBytes(k));
            }
            retain(keys, sizes, retentionTtl);
        }
        l1.finishWrite(keys);
    }

    /** Waits until everything written so far has been stored to L2 (or failed). @return false on timeout */
    public boolean awaitStoresIdle(Duration timeout) throws InterruptedException {
        return storeController.awaitIdle(timeout);
    }

    // ------------------------------------------------------------------ prefetch

    /**
     * Read-locks the contiguous prefix of {@code keys} already in L1 and hands the rest to the prefetch
     * controller.
     *
     * @return a handle; {@code requestId} is -1 when L1 had every key
     */
    public PrefetchHandle submitPrefetchTask(List<ObjectKey> keys, KvLayout layout) {
        if (keys == null || layout == null) {
            throw new IllegalArgumentException("prefetch needs keys and a layout");
        }
        checkOpen();
        long now = System.nanoTime();
        int l1Hits = l1.reservePrefixRead(keys);
        if (l1Hits == keys.size()) {
            return new PrefetchHandle(-1, l1Hits, keys.size(), now);
        }
        long id;
        try {
            id = prefetchController.submitPrefetchRequest(keys.subList(l1Hits, keys.size()), layout);
        } catch (RuntimeException e) {
            l1.finishRead(keys.subList(0, l1Hits));
            throw e;
        }
        return new PrefetchHandle(id, l1Hits, keys.size(), now);
    }

    /**
     * @return null while the L2 part is pending; then (once) L1 prefix hits + L2 prefix hits: that many
     *         leading keys are read-locked for the caller
     */
    public Integer queryPrefetchStatus(PrefetchHandle handle) {
        if (handle.requestId() < 0) {
            return handle.l1PrefixHitCount();
        }
        Integer l2 = prefetchController.queryPrefetchResult(handle.requestId());
        return l2 == null ? null : handle.l1PrefixHitCount() + l2;
    }

    /** Like {@link #queryPrefetchStatus}, waiting up to {@code timeout}. @return null on timeout */
    public Integer awaitPrefetchStatus(PrefetchHandle handle, Duration timeout) throws InterruptedException {
        if (handle.requestId() < 0) {
            return handle.l1PrefixHitCount();
        }
        Integer l2 = prefetchController.awaitPrefetchResult(handle.requestId(), timeout);
        return l2 == null ? null : handle.l1PrefixHitCount() + l2;
    }

    /**
     * The read-locked L1 objects of prefetched keys (usually {@code keys.subList(0, found)}).
     *
     * @throws IllegalStateException when a key is not read-locked in L1
     */
    public List<MemoryObj> readPrefetchedResults(List<ObjectKey> keys) {
        checkOpen();
        return l1.readLockedObjects(keys);
    }

    /** Releases the read locks a prefetch left for the caller. */
    public void finishReadPrefetched(List<ObjectKey> keys) {
        l1.finishRead(keys);
    }

    // ------------------------------------------------------------------ status

    /**
     * What L1 and the controllers did so far: L1 size and use, evictions, and the stores and prefetch
     * reservations L1 refused for lack of room (a full L1 that can evict nothing is never silent),
     * store tasks completed, failed and in flight, prefetch requests active, queued and draining (past
     * their load deadline), deadline timeouts, the retention ledger when there is one, and the tenant quotas
     * with what each salt uses in L2 when there are quotas.
     */
    public Map<String, Object> status() {
        checkOpen();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("l1_chunks", l1.capacity());
        m.put("l1_chunk_bytes", l1.chunkBytes());
        m.put("l1_keys", l1.size());
        m.put("l1_free_chunks", l1.freeChunks());
        m.put("l1_evictions", l1.evictions());
        m.put("l1_refused_stores", l1.refusedStores());
        m.put("l1_refused_prefetches", l1.refusedPrefetches());
        m.put("store_tasks_completed", storeController.completedTasks());
        m.put("store_tasks_failed", storeController.failedTasks());
        m.put("store_tasks_in_flight", storeController.inFlightTasks());
        m.put("prefetch_requests_active", prefetchController.activeRequests());
        m.put("prefetch_requests_pending", prefetchController.pendingRequests());
        m.put("prefetch_requests_draining", prefetchController.drainingRequests());
        m.put("prefetch_deadline_timeouts", prefetchController.deadlineTimeouts());
        if (retention != null) {
            m.put("retention", retention.status());
        }
        if (!tenantQuotas.snapshot().isEmpty()) {
            m.put("tenant_quotas", tenantQuotas.snapshot());
            Map<String, Long> bySalt = new TreeMap<>(); // what each tenant uses against its quota
            for (L2Adapter a : adapters) {
                a.usage().bytesByCacheSalt().forEach((salt, bytes) -> bySalt.merge(salt, bytes, Long::sum));
            }
            m.put("l2_bytes_by_cache_salt", bySalt);
        }
        return m;
    }

    // ------------------------------------------------------------------ lifecycle

    /**
     * Stops the background work (eviction rounds, queued stores, prefetches; the locks they hold are
     * released) and keeps the adapters open: what they hold then changes only through the caller's own
     * calls, e.g. to read the key count a reopen must find before {@link #close()}. Idempotent; close does it too.
     */
    public void stopControllers() {
        evictionControllers.forEach(EvictionController::stop);
        storeController.stop();
        prefetchController.stop();
    }

    /**
     * Stops both controllers (releasing every lock they hold), unregisters L1 from the devices, closes
     * the adapters it created, then frees L1 if it made it. Idempotent.
     *
     * @throws RuntimeException the first failure of an adapter it created to close (e.g. its final
     *         checkpoint could not be written: what it held may not survive), the others suppressed;
     *         everything is closed and freed all the same
     */
    @Override
    public void close() {
        synchronized (lifecycle) {
            if (closed) {
                return;
            }
            closed = true;
        }
        stopControllers();
        l1.unregisterAll();
        RuntimeException failure = null;
        for (L2Adapter a : owned) {
            try {
                a.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "closing " + a + " failed", e);
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (ownsL1) {
            l1.close();
        }
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "StorageManager[" + l1 + ", " + adapters.size() + " adapters" + (closed ? ", closed]" : "]");
    }

    /** Builds a {@link StorageManager}. */
    public static final class Builder {
        private L1Manager l1;
        private int chunkBytes;
        private int chunkCount;
        private final List<Object> order = new ArrayList<>();
        private String storePolicy = Policies.DEFAULT;
        private String prefetchPolicy = Policies.DEFAULT;
        private int maxInFlight = PrefetchController.DEFAULT_MAX_IN_FLIGHT;
        private Duration loadDeadline;
        private Supplier<? extends EvictionPolicy> evictionPolicy;
        private double evictHigh = EvictionController.DEFAULT_HIGH_WATERMARK;
        private double evictLow = EvictionController.DEFAULT_LOW_WATERMARK;
        private final TenantQuotas tenantQuotas = new TenantQuotas();
        private double retentionFraction;
        private Duration defaultRetentionTtl = Duration.ZERO;

        private Builder() {}

        /** A new L1 pool, owned (closed) by the manager. */
        public Builder l1(int chunkBytes, int chunkCount) {
            this.l1 = null;
            this.chunkBytes = chunkBytes;
            this.chunkCount = chunkCount;
            return this;
        }

        /** The caller's L1 (not closed by the manager). */
        public Builder l1(L1Manager l1) {
            this.l1 = l1;
            return this;
        }

        /** An adapter the caller owns (not closed by the manager); indices follow the order of calls. */
        public Builder adapter(L2Adapter adapter) {
            if (adapter == null) {
                throw new IllegalArgumentException("adapter is null");
            }
            order.add(adapter);
            return this;
        }

        /** An adapter made from LMCache-style JSON by {@link L2Adapters#create} at build; owned. */
        public Builder adapterJson(String json) {
            if (json == null) {
                throw new IllegalArgumentException("adapter JSON is null");
            }
            order.add(json);
            return this;
        }

        /** By name from {@link Policies#STORE} (default {@code "default"}). */
        public Builder storePolicy(String name) {
            this.storePolicy = name;
            return this;
        }

        /** By name from {@link Policies#PREFETCH} (default {@code "default"}). */
        public Builder prefetchPolicy(String name) {
            this.prefetchPolicy = name;
            return this;
        }

        /**
         * An {@link EvictionController} per adapter, with a policy by name from {@link Policies#EVICTION}:
         * above {@code highWatermark} of an adapter's capacity it deletes down to {@code lowWatermark}.
         * Without this call nothing is evicted.
         */
        public Builder eviction(String policy, double highWatermark, double lowWatermark) {
            Policies.EVICTION.create(policy); // an unknown name fails here, listing the known ones
            return eviction(() -> Policies.EVICTION.create(policy), highWatermark, lowWatermark);
        }

        /** Like {@link #eviction(String, double, double)}, with a policy made by {@code policy} per adapter. */
        public Builder eviction(Supplier<? extends EvictionPolicy> policy, double highWatermark,
                double lowWatermark) {
            if (policy == null) {
                throw new IllegalArgumentException("eviction policy supplier is null");
            }
            this.evictionPolicy = policy;
            this.evictHigh = highWatermark;
            this.evictLow = lowWatermark;
            return this;
        }

        /**
         * The L2 quota of one tenant (cache salt; {@code ""}: keys without a salt), enforced by the
         * {@code tenant_quota} eviction policy; {@link StorageManager#tenantQuotas()} changes them later.
         *
         * @throws IllegalArgumentException for a negative quota or a salt no key can have
         */
        public Builder tenantQuota(String cacheSalt, long limitBytes) {
            tenantQuotas.set(cacheSalt, limitBytes);
            return this;
        }

        /**
         * Retention (docs/contract.md section 7): stores that carry a TTL shield their keys from L2 eviction
         * until it passes, within a budget of {@code budgetFraction} of the adapter's capacity (below the
         * eviction's high watermark; needs eviction and one adapter). Off by default (0).
         *
         * @param defaultTtl the TTL of stores that name none (zero: only those that name one are retained)
         * @throws IllegalArgumentException for a fraction outside [0, 1) or a negative TTL
         */
        public Builder retention(double budgetFraction, Duration defaultTtl) {
            if (!(budgetFraction >= 0 && budgetFraction < 1)) {
                throw new IllegalArgumentException("retention budget " + budgetFraction + " must be a fraction of the"
                        + " L2 capacity in [0, 1) (0: no retention), below the eviction's high watermark");
            }
            if (defaultTtl != null && defaultTtl.isNegative()) {
                throw new IllegalArgumentException("default retention TTL " + defaultTtl + " must not be negative"
                        + " (zero: stores are retained only when they name a TTL)");
            }
            this.retentionFraction = budgetFraction;
            this.defaultRetentionTtl = defaultTtl == null ? Duration.ZERO : defaultTtl;
            return this;
        }

        public Builder maxInFlight(int n) {
            this.maxInFlight = n;
            return this;
        }

        /**
         * A prefetch not answered within {@code deadline} of its submission is answered with what L1 and its
         * completed loads hold; its late loads drain (docs/contract.md section 4). Null or zero: no deadline
         * (the default).
         *
         * @throws IllegalArgumentException for a negative deadline
         */
        public Builder loadDeadline(Duration deadline) {
            if (deadline != null && deadline.isNegative()) {
                throw new IllegalArgumentException("load deadline " + deadline + " must be positive, or zero for none");
            }
            this.loadDeadline = deadline;
            return this;
        }

        /**
         * Opens the JSON adapters, then starts the controllers; on failure everything made here is closed.
         *
         * @throws IllegalArgumentException for an unknown policy name or adapter type, or bad JSON
         * @throws IOException when an adapter cannot open its device
         */
        public StorageManager build() throws IOException {
            Policies.STORE.create(storePolicy); // fail on an unknown name before opening anything
            Policies.PREFETCH.create(prefetchPolicy);
            if (retentionFraction > 0 && evictionPolicy != null && retentionFraction >= evictHigh) {
                throw new IllegalArgumentException("retention budget " + retentionFraction + " must be below the"
                        + " eviction's high watermark " + evictHigh + ", so that eviction always finds keys it may"
                        + " take: give retention a smaller share");
            }
            if (l1 == null && (chunkBytes <= 0 || chunkCount <= 0)) {
                throw new IllegalArgumentException("StorageManager needs an L1: l1(chunkBytes, chunkCount) or l1(manager)");
            }
            List<L2Adapter> all = new ArrayList<>();
            List<L2Adapter> owned = new ArrayList<>();
            L1Manager made = null;
            try {
                for (Object o : order) {
                    if (o instanceof String json) {
                        L2Adapter a = L2Adapters.create(json);
                        owned.add(a);
                        all.add(a);
                    } else {
                        all.add((L2Adapter) o);
                    }
                }
                L1Manager useL1 = l1;
                if (useL1 == null) {
                    made = new L1Manager(chunkBytes, chunkCount);
                    useL1 = made;
                }
                return new StorageManager(this, useL1, all, owned);
            } catch (IOException | RuntimeException e) {
                if (made != null) {
                    made.unregisterAll();
                }
                for (L2Adapter a : owned) {
                    a.close();
                }
                if (made != null) {
                    made.close();
                }
                throw e;
            }
        }
    }
}
