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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Keeps an L2 adapter below a usage threshold, as LMCache's eviction controller does: when its usage
 * reaches the high watermark, the {@link EvictionPolicy} deletes down to the low one. Usage is the
 * adapter's {@link L2Adapter#usage()} (for {@code raw_block}: slots in use over all slots).
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
        if (adapter == null || policy == null) {
            throw new IllegalArgumentException("an eviction controller needs an adapter and a policy");
        }
        if (!(highWatermark > 0 && highWatermark <= 1) || !(lowWatermark >= 0 && lowWatermark < highWatermark)) {
            throw new IllegalArgumentException("eviction watermarks: high " + highWatermark + " must be in (0, 1] and low "
                    + lowWatermark + " in [0, high): e.g. high 0.95, low 0.90 (fractions of the adapter's capacity)");
        }
        this.adapter = adapter;
        this.policy = policy;
        this.high = highWatermark;
        this.low = lowWatermark;
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
            policy.onKeysStored(keys, sizes);
            if (worker.isRunning()) {
                AdapterUsage u = adapter.usage();
                if (u.usageFraction() >= high) {
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
     * to the low one.
     *
     * @return what it did ({@link EvictionRound#NONE} below the high watermark)
     */
    public synchronized EvictionRound evictIfNeeded() {
        if (detached || worker.isStopped()) {
            return EvictionRound.NONE; // the policy hears nothing any more: what it tracks would be stale
        }
        AdapterUsage u = adapter.usage();
        if (u.totalCapacityBytes() <= 0 || u.usageFraction() < high) {
            return EvictionRound.NONE;
        }
        long bytes = u.totalBytesUsed() - (long) (low * u.totalCapacityBytes());
        EvictionRound r = policy.evict(bytes);
        rounds++;
        evictedKeys += r.keys();
        evictedBytes += r.bytes();
        evictedGroups += r.groups();
        skippedLocked += r.skippedLocked();
        skippedBusy += r.skippedBusy();
        evictedHits += r.hits();
        notifyAll(); // for awaitStatus
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
     * Counters: rounds, keys/bytes/groups evicted, what was skipped, the loads the evicted data had served
     * ({@code evicted_hits}), the events heard, and the policy's own.
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
