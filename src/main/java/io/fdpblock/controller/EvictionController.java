package io.fdpblock.controller;

import io.fdpblock.l2.AdapterUsage;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.util.Threads;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Keeps an L2 adapter below a usage threshold, as LMCache's eviction controller does: when its usage
 * reaches the high watermark, the {@link EvictionPolicy} deletes down to the low one. Usage is the
 * adapter's {@link L2Adapter#usage()} (for {@code raw_block}: slots in use over all slots).
 *
 * <p>With a policy that {@link EvictionPolicy#perCacheSalt() evicts per cache salt}, the watermarks apply
 * to each tenant's quota instead ({@link TenantQuotas}): a salt without a quota loses its keys first, a
 * salt at or above {@code high} of its quota is evicted down to {@code low} of it; the adapter's total is
 * not looked at. With a {@link RetentionLedger}, keys whose retention has not expired are kept in every
 * round; expired retention is swept at the start of each round (it never deletes anything).
 *
 * <p>The controller registers a listener with the adapter that hands every event to the policy (the
 * keys already held are replayed at once) and, when a store brings usage to the high watermark, wakes
 * the controller's thread ({@link #start()}), which also looks every 100 ms (a group skipped because a key
 * was locked is tried again). {@link #evictIfNeeded()} does one round on the caller's thread instead.
 */
public final class EvictionController implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.controller");
    /** Today's {@code make run}: evict above 85 % ... */
    public static final double DEFAULT_HIGH_WATERMARK = 0.85;
    /** ... down to 75 %. */
    public static final double DEFAULT_LOW_WATERMARK = 0.75;
    private static final long RECHECK_MILLIS = 100;

    private final L2Adapter adapter;
    private final EvictionPolicy policy;
    private final double high;
    private final double low;
    private final TenantQuotas quotas;
    private final RetentionLedger retention;
    private final ControllerThread worker;
    private final Object wake = new Object();
    private boolean signalled;
    private volatile boolean detached;

    private final AtomicLong storedKeys = new AtomicLong();
    private final AtomicLong loadedKeys = new AtomicLong();
    private final AtomicLong deletedKeys = new AtomicLong();
    private long rounds;
    private long evictedKeys;
    private long evictedBytes;
    private long evictedGroups;
    private long skippedLocked;
    private long skippedBusy;
    private long evictedHits;
    private long skippedRetained;
    private long evictedUnquotaedKeys;
    private long failures;

    /**
     * Binds {@code policy} to {@code adapter} and registers its listener; nothing is evicted before
     * {@link #start()} or {@link #evictIfNeeded()}.
     *
     * @param highWatermark usage fraction that starts a round, in (0, 1]
     * @param lowWatermark usage fraction a round evicts down to, in [0, high)
     * @throws IllegalArgumentException for watermarks out of range, or a policy the adapter cannot serve
     */
    public EvictionController(L2Adapter adapter, EvictionPolicy policy, double highWatermark, double lowWatermark) {
        this(adapter, policy, highWatermark, lowWatermark, null, null);
    }

    /**
     * Like {@link #EvictionController(L2Adapter, EvictionPolicy, double, double)}, with the tenants' quotas a
     * per-salt policy evicts against, and the retention that shields keys.
     *
     * @param quotas needed by (and only used with) a policy that evicts per cache salt; may be changed at
     *        any time
     * @param retention null: no key is shielded; else its budget must be below {@code high} of the
     *        adapter's capacity, so that a round always finds keys it may evict
     * @throws IllegalArgumentException also for a per-salt policy without quotas, retention with a policy that
     *         cannot keep retained keys, or a retention budget not below the high watermark
     */
    public EvictionController(L2Adapter adapter, EvictionPolicy policy, double highWatermark, double lowWatermark,
            TenantQuotas quotas, RetentionLedger retention) {
        if (adapter == null || policy == null) {
            throw new IllegalArgumentException("an eviction controller needs an adapter and a policy");
        }
        if (!(highWatermark > 0 && highWatermark <= 1) || !(lowWatermark >= 0 && lowWatermark < highWatermark)) {
            throw new IllegalArgumentException("eviction watermarks: high " + highWatermark + " must be in (0, 1] and low "
                    + lowWatermark + " in [0, high): e.g. high 0.95, low 0.90 (fractions of the adapter's capacity)");
        }
        if (policy.perCacheSalt() && quotas == null) {
            throw new IllegalArgumentException("eviction policy " + policy.getClass().getSimpleName() + " evicts per"
                    + " cache salt against the tenants' quotas: give it TenantQuotas (StorageManager.builder()"
                    + ".tenantQuota(salt, bytes))");
        }
        if (retention != null) {
            if (!policy.takesKeyFilter()) {
                throw new IllegalArgumentException("retention needs an eviction policy that can keep retained keys"
                        + " (lru or tenant_quota); " + policy.getClass().getSimpleName() + " cannot: use one of those,"
                        + " or no retention");
            }
            long capacity = adapter.usage().totalCapacityBytes();
            if (capacity <= 0 || retention.budgetBytes() >= highWatermark * capacity) {
                throw new IllegalArgumentException("retention budget of " + retention.budgetBytes() + " bytes must be"
                        + " below the high watermark " + highWatermark + " of " + adapter + "'s capacity of " + capacity
                        + " bytes, so that eviction always finds keys it may take: give retention a smaller share");
            }
        }
        this.adapter = adapter;
        this.policy = policy;
        this.high = highWatermark;
        this.low = lowWatermark;
        this.quotas = quotas;
        this.retention = retention;
        this.worker = new ControllerThread("eviction controller", "fdpblock-evict");
        policy.bind(adapter);
        adapter.registerListener(new Forwarder());
    }

    /** Hands the adapter's events to the policy, counts them, and wakes the thread when usage is high. */
    private final class Forwarder implements L2AdapterListener {
        @Override
        public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
            if (detached) {
                return;
            }
            storedKeys.addAndGet(keys.size());
            if (retention != null) {
                retention.charge(keys, sizes);
            }
            policy.onKeysStored(keys, sizes);
            if (worker.isRunning()) {
                // per salt: a tenant may be over its quota however full the adapter is
                if (policy.perCacheSalt() || adapter.usage().usageFraction() >= high) {
                    signal();
                }
            }
        }

        @Override
        public void onKeysAccessed(List<ObjectKey> keys) {
            if (!detached) {
                loadedKeys.addAndGet(keys.size());
                policy.onKeysAccessed(keys);
            }
        }

        @Override
        public void onKeysDeleted(List<ObjectKey> keys) {
            if (!detached) {
                deletedKeys.addAndGet(keys.size());
                if (retention != null) {
                    retention.forget(keys); // deleted by anyone: its budget is free again
                }
                policy.onKeysDeleted(keys);
            }
        }
    }

    private void signal() {
        synchronized (wake) {
            signalled = true;
            wake.notifyAll();
        }
    }

    public EvictionPolicy policy() {
        return policy;
    }

    public double highWatermark() {
        return high;
    }

    public double lowWatermark() {
        return low;
    }

    /** The tenants' quotas a per-salt policy evicts against (null when none were given). */
    public TenantQuotas quotas() {
        return quotas;
    }

    /** The retention it keeps (null when none). */
    public RetentionLedger retention() {
        return retention;
    }

    /** Starts the controller's thread; a second start is a no-op, a start after {@link #stop()} fails. */
    public void start() {
        worker.start(this::loop);
    }

    private void loop() {
        while (worker.isRunning()) {
            synchronized (wake) {
                if (!signalled) {
                    try {
                        wake.wait(RECHECK_MILLIS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
                signalled = false;
            }
            if (!worker.isRunning()) {
                return;
            }
            try {
                evictIfNeeded();
            } catch (IllegalStateException e) {
                LOG.log(System.Logger.Level.DEBUG, "eviction controller of " + adapter + " stops: " + e.getMessage());
                return; // the adapter was closed under it
            } catch (RuntimeException e) {
                synchronized (this) {
                    failures++;
                }
                LOG.log(System.Logger.Level.WARNING, "eviction round on " + adapter + " failed", e);
            }
        }
    }

    /**
     * One round now, on this thread: when usage is at or above the high watermark, the policy deletes down
     * to the low one (per salt, against each tenant's quota, for a per-salt policy). Expired retention is
     * swept first.
     *
     * @return what it did ({@link EvictionRound#NONE} below the high watermark)
     */
    public synchronized EvictionRound evictIfNeeded() {
        if (detached || worker.isStopped()) {
            return EvictionRound.NONE; // the policy hears nothing any more: what it tracks would be stale
        }
        if (retention != null) {
            retention.sweep();
        }
        AdapterUsage u = adapter.usage();
        EvictionRound r;
        if (policy.perCacheSalt()) {
            r = evictPerCacheSalt(u);
            if (r == null) {
                return EvictionRound.NONE;
            }
        } else {
            if (u.totalCapacityBytes() <= 0 || u.usageFraction() < high) {
                return EvictionRound.NONE;
            }
            long bytes = u.totalBytesUsed() - (long) (low * u.totalCapacityBytes());
            r = retention == null ? policy.evict(bytes) : policy.evict(bytes, retention::isEvictable);
        }
        rounds++;
        evictedKeys += r.keys();
        evictedBytes += r.bytes();
        evictedGroups += r.groups();
        skippedLocked += r.skippedLocked();
        skippedBusy += r.skippedBusy();
        evictedHits += r.hits();
        skippedRetained += r.skippedRetained();
        notifyAll(); // for awaitStatus
        return r;
    }

    /**
     * The salts without a quota (or with 0) first, all their keys; then each salt at or above {@code high}
     * of its quota, down to {@code low} of it.
     *
     * @return null when no salt had to lose keys
     */
    private EvictionRound evictPerCacheSalt(AdapterUsage u) {
        Map<String, Long> unquotaed = new TreeMap<>();
        Map<String, Long> over = new TreeMap<>();
        for (Map.Entry<String, Long> e : u.bytesByCacheSalt().entrySet()) {
            long used = e.getValue();
            long limit = quotas.limitOf(e.getKey());
            if (used <= 0) {
                continue;
            }
            if (limit <= 0) {
                unquotaed.put(e.getKey(), used);
            } else if (used >= high * limit) {
                over.put(e.getKey(), used - (long) (low * limit));
            }
        }
        if (unquotaed.isEmpty() && over.isEmpty()) {
            return null;
        }
        Predicate<ObjectKey> eligible = retention == null ? null : retention::isEvictable;
        EvictionRound r = EvictionRound.NONE;
        for (Map.Entry<String, Long> e : unquotaed.entrySet()) {
            EvictionRound part = policy.evictCacheSalt(e.getKey(), e.getValue(), eligible);
            evictedUnquotaedKeys += part.keys();
            r = r.plus(part);
        }
        for (Map.Entry<String, Long> e : over.entrySet()) {
            r = r.plus(policy.evictCacheSalt(e.getKey(), e.getValue(), eligible));
        }
        return r;
    }

    /**
     * Waits until {@code condition} holds of {@link #status()}, checked now and after every round; for
     * tests, which wait for the thread's rounds this way instead of sleeping.
     *
     * @return false when {@code timeout} passed first
     */
    synchronized boolean awaitStatus(Predicate<Map<String, Object>> condition, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.test(status())) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    /**
     * Counters: rounds, keys/bytes/groups evicted, what was skipped (locked, busy, retained), the loads the
     * evicted data had served ({@code evicted_hits}), the events heard, the policy's own, and with quotas the
     * keys of salts without one that went ({@code evicted_unquotaed_keys}), with retention its ledger
     * ({@code retention}).
     */
    public synchronized Map<String, Object> status() {
        Map<String, Object> m = new LinkedHashMap<>(policy.status());
        m.put("high_watermark", high);
        m.put("low_watermark", low);
        m.put("rounds", rounds);
        m.put("evicted_keys", evictedKeys);
        m.put("evicted_bytes", evictedBytes);
        m.put("evicted_groups", evictedGroups);
        m.put("skipped_locked", skippedLocked);
        m.put("skipped_busy", skippedBusy);
        m.put("evicted_hits", evictedHits);
        m.put("skipped_retained", skippedRetained);
        if (quotas != null && policy.perCacheSalt()) {
            m.put("evicted_unquotaed_keys", evictedUnquotaedKeys);
            m.put("quotas", quotas.snapshot().size());
        }
        if (retention != null) {
            m.put("retention", retention.status());
        }
        m.put("failed_rounds", failures);
        m.put("stored_keys_heard", storedKeys.get());
        m.put("loaded_keys_heard", loadedKeys.get());
        m.put("deleted_keys_heard", deletedKeys.get());
        return m;
    }

    /**
     * Stops the thread, waits for a round in progress (on the thread or a caller's), then detaches from
     * the adapter's events (a listener cannot be removed; it becomes a no-op). No round starts after it.
     * Idempotent.
     */
    public void stop() {
        if (worker.markStopped()) { // from now on no round starts
            signal();
            Thread t = worker.thread();
            // not from inside a round (a delete's hook): the thread may be waiting for that round's monitor;
            // it finds the controller stopped and ends by itself
            if (t != null && t != Thread.currentThread() && !Thread.holdsLock(this)) {
                Threads.joinUninterruptibly(t);
            }
        }
        // detached only once no round is deleting: one that still ran would not hear what it deleted
        synchronized (this) {
            detached = true;
        }
    }

    @Override
    public void close() {
        stop();
    }

    @Override
    public String toString() {
        return "EvictionController[" + adapter + ", " + policy.getClass().getSimpleName() + ", " + low + ".." + high + "]";
    }
}
