package io.fdpblock.controller;

import io.fdpblock.cache.KvLayout;
import io.fdpblock.cache.L1Manager;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.linux.EventFd;
import io.fdpblock.linux.Poller;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Loads from the L2 adapters into L1 ahead of use, on one background thread (docs/contract.md section 4).
 *
 * <p>{@link #submitPrefetchRequest} queues a request and signals the controller's eventfd;
 * {@link #queryPrefetchResult} answers {@code null} while it is pending and then, exactly once, the
 * number of leading keys now read-locked in L1. At most {@code maxInFlight} requests are active; the
 * rest wait in FIFO order. Per request:
 *
 * <ol>
 * <li>LOOKUP: {@code submitLookupAndLockTask(keys)} on every adapter (no adapters: completes at 0).</li>
 * <li>When all lookups are in: {@link PrefetchPolicy#selectLoadPlan}, then the plan is trimmed to the
 * contiguous prefix of planned keys (keys 0,1,3,4 found: 0,1 are loaded).</li>
 * <li>{@code L1Manager.reserveWrite(planKeys, temporary = true)}; the plan is trimmed again to the
 * prefix whose reservation succeeded (reservations past it are returned at once).</li>
 * <li>Phase-1 unlock: on each adapter, the hits that are not in its final plan.</li>
 * <li>{@code submitLoadTask(planKeys, buffers)} per adapter (bitmaps are local to each submitted list
 * and are scattered back by the plan's indices).</li>
 * <li>When all loads are in: phase-2 unlock of every planned key on its adapter;
 * {@code finishWriteAndReserveRead(loaded)} (atomic); failed keys {@code finishWrite} + {@code delete};
 * the result is the loaded prefix; loaded keys past it release their read locks.</li>
 * </ol>
 *
 * The controller polls its request fd and every adapter's lookup and load fds (500 ms timeout). All
 * request state is confined to the controller's thread. {@link #stop()} releases every L1 and L2 lock
 * held by requests in flight.
 */
public final class PrefetchController implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.controller");
    public static final int DEFAULT_MAX_IN_FLIGHT = 8;
    static final Duration POLL_TIMEOUT = Duration.ofMillis(500);

    /**
     * The lifecycle of a request, by the lock-invariant steps of docs/contract.md section 4. A request is
     * in LOOKUP from admission until it is planned, in LOADING until every load is in, and AFTER_LOAD once
     * finished or released; the test hook hears each step when it is reached (LOOKUP when every lookup is
     * in).
     */
    enum Step {
        /** lookups submitted; when every lookup is in, nothing planned yet: L1 none, L2 hits locked */
        LOOKUP,
        /** reserved and phase-1 unlocked, loads not yet submitted: L1 write-locked, L2 planned keys locked */
        AFTER_PLAN,
        /** loads submitted: L1 write-locked, L2 planned keys locked */
        LOADING,
        /** finished, result not yet published: L1 read-locked (prefix only), L2 all unlocked */
        AFTER_LOAD
    }

    /** Package-private test hook, called on the controller thread (which waits for it). */
    @FunctionalInterface
    interface StepHook {
        void onStep(Step step, long requestId, List<ObjectKey> keys, int activeRequests);
    }

    /** One adapter's part of one request. Bitmaps over the request's keys unless said otherwise. */
    private static final class AdapterPart {
        final int index;
        /** The adapter's task of the request's step: the lookup in LOOKUP, the load in LOADING. */
        long taskId;
        /** True while that task is submitted and unanswered. */
        boolean awaiting;
        /** The lookup's answer (all misses when it was not submitted or failed); null until then. */
        Bitmap hits;
        /** The keys this request holds L2 locks on there. */
        Bitmap locked;
        /** The keys loaded from this adapter. */
        Bitmap plan;
        /** The load's answer, indexed like {@code plan.indices()}; null while none. */
        Bitmap loaded;

        AdapterPart(int index, int keys) {
            this.index = index;
            this.locked = new Bitmap(keys);
        }
    }

    private static final class Request {
        final long id;
        final List<ObjectKey> keys;
        final KvLayout layout;
        final int n;
        Step step = Step.LOOKUP;
        /** By adapter index; empty until the lookups are submitted. */
        List<AdapterPart> parts = List.of();
        /** L1 write-locked keys of this request, by key index (null = none). */
        MemoryObj[] reserved;

        Request(long id, List<ObjectKey> keys, KvLayout layout) {
            this.id = id;
            this.keys = keys;
            this.layout = layout;
            this.n = keys.size();
        }

        /** How many adapters have not answered the task of this step yet. */
        int awaiting() {
            int count = 0;
            for (AdapterPart p : parts) {
                if (p.awaiting) {
                    count++;
                }
            }
            return count;
        }

        List<Bitmap> hits() {
            List<Bitmap> out = new ArrayList<>(parts.size());
            for (AdapterPart p : parts) {
                out.add(p.hits);
            }
            return List.copyOf(out);
        }
    }

    private final L1Manager l1;
    private final List<L2Adapter> adapters;
    private final List<AdapterDescriptor> descriptors;
    private final PrefetchPolicy policy;
    private final int maxInFlight;
    private final EventFd requestFd;
    private final AtomicLong nextId = new AtomicLong(1);
    private final ConcurrentLinkedQueue<Request> submissions = new ConcurrentLinkedQueue<>();
    private final ConcurrentHashMap<Long, Integer> results = new ConcurrentHashMap<>();
    private final Object resultMonitor = new Object();
    /** Controller thread only. */
    private final ArrayDeque<Request> pending = new ArrayDeque<>();
    private final List<Request> active = new ArrayList<>();
    private volatile int activeCount;
    private volatile int pendingCount;

    private final ControllerThread worker = new ControllerThread("prefetch controller", "fdpblock-prefetch-controller");
    private volatile StepHook hook;
    private volatile Duration stopLookupGrace = Duration.ofSeconds(2);

    public PrefetchController(L1Manager l1, List<L2Adapter> adapters, PrefetchPolicy policy) throws IOException {
        this(l1, adapters, policy, DEFAULT_MAX_IN_FLIGHT);
    }

    /**
     * @param adapters the L2 adapters, by index (not owned: never closed here)
     * @param maxInFlight how many requests may be active at once (&gt;= 1)
     */
    public PrefetchController(L1Manager l1, List<L2Adapter> adapters, PrefetchPolicy policy, int maxInFlight)
            throws IOException {
        if (l1 == null || adapters == null || policy == null) {
            throw new IllegalArgumentException("prefetch controller needs an L1 manager, adapters and a policy");
        }
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("max in flight " + maxInFlight + " must be >= 1");
        }
        this.l1 = l1;
        this.adapters = List.copyOf(adapters);
        this.descriptors = AdapterDescriptor.of(this.adapters);
        this.policy = policy;
        this.maxInFlight = maxInFlight;
        this.requestFd = EventFd.create();
    }

    /** Package-private test hook (null to remove). */
    void setStepHook(StepHook hook) {
        this.hook = hook;
    }

    /** How long {@link #stop()} waits for lookups in flight so that it can release their L2 locks. */
    void setStopLookupGrace(Duration grace) {
        this.stopLookupGrace = grace;
    }

    public void start() {
        worker.start(this::run);
    }

    // ------------------------------------------------------------------ external API (any thread)

    /**
     * Queues a prefetch of {@code keys} into L1 objects of {@code layout}; returns at once.
     *
     * @return the request id for {@link #queryPrefetchResult}
     * @throws IllegalArgumentException for null keys or layout, or a layout that does not fit an L1 chunk
     * @throws IllegalStateException after {@link #stop()}
     */
    public long submitPrefetchRequest(List<ObjectKey> keys, KvLayout layout) {
        if (keys == null || layout == null) {
            throw new IllegalArgumentException("prefetch needs keys and a layout");
        }
        for (int i = 0; i < keys.size(); i++) {
            if (keys.get(i) == null) {
                throw new IllegalArgumentException("keys[" + i + "] is null");
            }
        }
        if (layout.objectBytes() > l1.chunkBytes()) {
            throw new IllegalArgumentException("prefetch objects of " + layout.objectBytes()
                    + " bytes do not fit L1 chunks of " + l1.chunkBytes() + " bytes");
        }
        long[] id = new long[1];
        worker.unlessStopped(() -> {
            id[0] = nextId.getAndIncrement();
            submissions.add(new Request(id[0], List.copyOf(keys), layout));
            requestFd.signal();
        });
        return id[0];
    }

    /**
     * @return null while the request is pending (and for unknown ids); then, exactly once, how many
     *         leading keys are read-locked in L1 for the caller (0 for a request cancelled by stop)
     */
    public Integer queryPrefetchResult(long requestId) {
        return results.remove(requestId);
    }

    /**
     * Waits for a request's result and takes it (like {@link #queryPrefetchResult}).
     *
     * @return null when the timeout passed first
     */
    public Integer awaitPrefetchResult(long requestId, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (resultMonitor) {
            while (true) {
                Integer r = results.remove(requestId);
                if (r != null) {
                    return r;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                resultMonitor.wait(Math.max(1, left / 1_000_000));
            }
        }
    }

    /** Requests being looked up or loaded now. */
    public int activeRequests() {
        return activeCount;
    }

    /** Requests admitted to the queue but not yet active (not counting ones just submitted). */
    public int pendingRequests() {
        return pendingCount;
    }

    public int maxInFlight() {
        return maxInFlight;
    }

    public List<AdapterDescriptor> adapters() {
        return descriptors;
    }

    private void complete(Request r, int prefixHits) {
        results.put(r.id, prefixHits);
        synchronized (resultMonitor) {
            resultMonitor.notifyAll();
        }
    }

    // ------------------------------------------------------------------ thread

    private void run() {
        boolean cleaned = false;
        try (Poller poller = new Poller(1 + 2 * adapters.size())) {
            poller.add(requestFd.fd());
            for (L2Adapter a : adapters) {
                poller.add(a.lookupAndLockEventFd());
                poller.add(a.loadEventFd());
            }
            while (worker.isRunning()) {
                poller.poll(POLL_TIMEOUT);
                if (!worker.isRunning()) {
                    break;
                }
                drainReadable(poller);
                advance();
            }
            awaitLookupsInFlight(poller);
            cleanup();
            cleaned = true;
        } catch (IOException | RuntimeException | Error e) {
            LOG.log(System.Logger.Level.ERROR, "prefetch controller thread failed; requests in flight are released", e);
        } finally {
            if (!cleaned) {
                cleanup();
            }
        }
    }

    /** Clears every readable fd first; results recorded after this signal again. */
    private void drainReadable(Poller poller) {
        if (poller.isReadable(0)) {
            requestFd.drain();
        }
        Fds.drainOrDisable(poller, 1, i -> ((i - 1) % 2 == 0 ? "lookup" : "load") + " fd of "
                + descriptors.get((i - 1) / 2).name());
    }

    /** Moves every request as far as its results allow, admitting queued ones as others finish. */
    private void advance() {
        boolean progress = true;
        while (progress) {
            progress = admit();
            for (Request r : List.copyOf(active)) {
                try {
                    if (r.step == Step.LOOKUP) {
                        pollAnswers(r);
                        if (r.awaiting() == 0) {
                            step(Step.LOOKUP, r);
                            planAndLoad(r);
                            progress = true;
                        }
                    } else if (r.step == Step.LOADING) {
                        pollAnswers(r);
                        if (r.awaiting() == 0) {
                            finishLoad(r);
                            progress = true;
                        }
                    }
                } catch (RuntimeException e) {
                    // one broken request (e.g. L1 closed under it) must not stop the others
                    LOG.log(System.Logger.Level.ERROR, "prefetch " + r.id + " failed; its locks are released", e);
                    release(r);
                    progress = true;
                }
            }
        }
    }

    private boolean admit() {
        for (Request r; (r = submissions.poll()) != null; ) {
            pending.add(r);
        }
        boolean started = false;
        while (active.size() < maxInFlight && !pending.isEmpty()) {
            startLookup(pending.poll());
            started = true;
        }
        pendingCount = pending.size();
        activeCount = active.size();
        return started;
    }

    private void step(Step s, Request r) {
        r.step = s;
        StepHook h = hook;
        if (h != null) {
            try {
                h.onStep(s, r.id, r.keys, active.size());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "prefetch step hook threw; ignored", e);
            }
        }
    }

    // ---- 1. lookup

    private void startLookup(Request r) {
        int a = adapters.size();
        if (a == 0 || r.n == 0) {
            complete(r, 0);
            return;
        }
        List<AdapterPart> parts = new ArrayList<>(a);
        for (int i = 0; i < a; i++) {
            AdapterPart p = new AdapterPart(i, r.n);
            parts.add(p);
            try {
                p.taskId = adapters.get(i).submitLookupAndLockTask(r.keys);
                p.awaiting = true;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "lookup of " + r.n + " keys on " + descriptors.get(i).name()
                        + " was not submitted (counted as all misses): " + e);
                p.hits = new Bitmap(r.n);
            }
        }
        r.parts = List.copyOf(parts);
        r.step = Step.LOOKUP;
        active.add(r);
        activeCount = active.size();
    }

    /** Takes the answers that are in to the tasks of {@code r}'s step: its lookups, or its loads. */
    private void pollAnswers(Request r) {
        boolean lookup = r.step == Step.LOOKUP;
        for (AdapterPart p : r.parts) {
            if (!p.awaiting) {
                continue;
            }
            L2Adapter a = adapters.get(p.index);
            int size = lookup ? r.n : p.plan.cardinality();
            Bitmap b;
            try {
                b = lookup ? a.queryLookupAndLockResult(p.taskId) : a.queryLoadResult(p.taskId);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, (lookup ? "lookup" : "load") + " result of "
                        + descriptors.get(p.index).name() + " unavailable (counted as "
                        + (lookup ? "all misses" : "failed") + "): " + e);
                b = new Bitmap(size);
            }
            if (b != null) {
                b = fit(b, size);
                p.awaiting = false;
                if (lookup) {
                    p.hits = b;
                    p.locked = copy(b);
                } else {
                    p.loaded = b;
                }
            }
        }
    }

    // ---- 2..5. plan, reserve, phase-1 unlock, load

    private void planAndLoad(Request r) {
        Map<Integer, Bitmap> raw;
        try {
            raw = policy.selectLoadPlan(r.keys, r.hits(), descriptors);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "prefetch policy failed; nothing is loaded", e);
            raw = Map.of();
        }
        // Sanitize: only hits of that adapter, no key planned twice (the lower index wins).
        Bitmap taken = new Bitmap(r.n);
        for (AdapterPart part : r.parts) {
            Bitmap p = raw == null ? null : raw.get(part.index);
            p = p == null || p.size() != r.n ? new Bitmap(r.n) : p.and(part.hits).and(taken.not());
            part.plan = p;
            taken = taken.or(p);
        }
        // Prefix-only loading: nothing after the first key no adapter will load.
        int prefix = taken.leadingOnes();
        // Reserve temporary L1 buffers for the prefix; re-trim to the prefix that got one.
        r.reserved = new MemoryObj[r.n];
        int reservedPrefix = 0;
        if (prefix > 0) {
            List<MemoryObj> objs;
            try {
                objs = l1.reserveWrite(r.keys.subList(0, prefix), r.layout, true);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "L1 reservation for a prefetch failed; nothing is loaded", e);
                objs = List.of();
            }
            while (reservedPrefix < objs.size() && objs.get(reservedPrefix) != null) {
                reservedPrefix++;
            }
            List<ObjectKey> extra = new ArrayList<>();
            for (int j = 0; j < objs.size(); j++) {
                if (objs.get(j) == null) {
                    continue;
                }
                if (j < reservedPrefix) {
                    r.reserved[j] = objs.get(j);
                } else {
                    extra.add(r.keys.get(j)); // reserved past a failed reservation: useless, returned at once
                }
            }
            if (!extra.isEmpty()) {
                l1.finishWrite(extra);
                l1.delete(extra);
            }
        }
        // Phase-1 unlock: hits not in the final plan of their adapter.
        for (AdapterPart p : r.parts) {
            p.plan = truncate(p.plan, reservedPrefix);
            unlock(p.index, r, p.locked.and(p.plan.not()));
            p.locked = copy(p.plan);
        }
        step(Step.AFTER_PLAN, r);
        // Loads, one task per adapter with a non-empty plan.
        for (AdapterPart p : r.parts) {
            int[] idx = p.plan.indices();
            if (idx.length == 0) {
                continue;
            }
            List<ObjectKey> ks = new ArrayList<>(idx.length);
            List<MemoryObj> os = new ArrayList<>(idx.length);
            for (int j : idx) {
                ks.add(r.keys.get(j));
                os.add(r.reserved[j]);
            }
            try {
                p.taskId = adapters.get(p.index).submitLoadTask(ks, os);
                p.awaiting = true;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "load of " + idx.length + " keys from "
                        + descriptors.get(p.index).name() + " was not submitted (counted as failed): " + e);
                p.loaded = new Bitmap(idx.length);
            }
        }
        step(Step.LOADING, r);
    }

    // ---- 6. finish

    private void finishLoad(Request r) {
        // Phase-2 unlock: every planned key, loaded or not.
        for (AdapterPart p : r.parts) {
            unlock(p.index, r, p.locked);
            p.locked = new Bitmap(r.n);
        }
        // Scatter the per-adapter bitmaps back to key indices.
        Bitmap loaded = new Bitmap(r.n);
        for (AdapterPart p : r.parts) {
            int[] idx = p.plan.indices();
            Bitmap got = p.loaded;
            for (int j = 0; j < idx.length; j++) {
                if (got != null && got.get(j)) {
                    loaded.set(idx[j]);
                }
            }
        }
        List<ObjectKey> loadedKeys = new ArrayList<>();
        List<ObjectKey> failedKeys = new ArrayList<>();
        for (int j = 0; j < r.n; j++) {
            if (r.reserved[j] == null) {
                continue;
            }
            (loaded.get(j) ? loadedKeys : failedKeys).add(r.keys.get(j));
        }
        l1.finishWriteAndReserveRead(loadedKeys); // write -> read with no eviction window
        if (!failedKeys.isEmpty()) {
            l1.finishWrite(failedKeys);
            l1.delete(failedKeys);
        }
        Arrays.fill(r.reserved, null);
        int hits = loaded.leadingOnes();
        List<ObjectKey> beyond = new ArrayList<>();
        for (int j = hits; j < r.n; j++) {
            if (loaded.get(j)) {
                beyond.add(r.keys.get(j));
            }
        }
        l1.finishRead(beyond); // loaded past a failed key: unusable, left evictable
        active.remove(r);
        activeCount = active.size();
        step(Step.AFTER_LOAD, r);
        complete(r, hits);
    }

    private void unlock(int adapterIndex, Request r, Bitmap which) {
        int[] idx = which.indices();
        if (idx.length == 0) {
            return;
        }
        List<ObjectKey> ks = new ArrayList<>(idx.length);
        for (int j : idx) {
            ks.add(r.keys.get(j));
        }
        try {
            adapters.get(adapterIndex).submitUnlock(ks); // fire-and-forget: never retried (invariant 4)
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "unlock of " + ks.size() + " keys on "
                    + descriptors.get(adapterIndex).name() + " failed: " + e);
        }
    }

    // ---- stop

    /** Gives lookups still in flight a bounded time to answer, so their L2 locks can be released. */
    private void awaitLookupsInFlight(Poller poller) throws IOException {
        long deadline = System.nanoTime() + stopLookupGrace.toNanos();
        while (true) {
            boolean waiting = false;
            for (Request r : active) {
                if (r.step == Step.LOOKUP) {
                    pollAnswers(r);
                    waiting |= r.awaiting() > 0;
                }
            }
            long left = deadline - System.nanoTime();
            if (!waiting || left <= 0) {
                return;
            }
            poller.poll(Duration.ofNanos(Math.min(left, POLL_TIMEOUT.toNanos())));
            drainReadable(poller);
        }
    }

    /** Releases every L1 and L2 lock of the requests in flight; every request gets a result (0). */
    private void cleanup() {
        int released = 0;
        for (Request r : List.copyOf(active)) {
            try {
                if (r.step == Step.LOOKUP) {
                    pollAnswers(r);
                    if (r.awaiting() > 0) {
                        LOG.log(System.Logger.Level.WARNING, "prefetch " + r.id + " stopped with " + r.awaiting()
                                + " lookups unanswered: the L2 locks they take cannot be released here");
                    }
                } else if (r.step == Step.LOADING) {
                    pollAnswers(r);
                    if (r.awaiting() == 0) {
                        finishLoad(r); // finished after all: completed normally
                        continue;
                    }
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "prefetch " + r.id + " could not be finished at stop", e);
            }
            release(r);
            released++;
        }
        for (Request r; (r = submissions.poll()) != null; ) {
            pending.add(r);
        }
        for (Request r; (r = pending.poll()) != null; ) {
            complete(r, 0);
        }
        activeCount = 0;
        pendingCount = 0;
        if (released > 0) {
            LOG.log(System.Logger.Level.INFO, "prefetch controller stopped; released the locks of " + released
                    + " requests in flight");
        }
    }

    /** Unlocks every L2 lock and returns every L1 reservation of {@code r}, then completes it with 0. */
    private void release(Request r) {
        try {
            for (AdapterPart p : r.parts) {
                unlock(p.index, r, p.locked);
                p.locked = new Bitmap(r.n);
            }
            if (r.reserved != null) {
                List<ObjectKey> writeLocked = new ArrayList<>();
                for (int j = 0; j < r.n; j++) {
                    if (r.reserved[j] != null) {
                        writeLocked.add(r.keys.get(j));
                        r.reserved[j] = null;
                    }
                }
                l1.finishWrite(writeLocked);
                l1.delete(writeLocked);
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "releasing prefetch " + r.id + " failed", e);
        }
        active.remove(r);
        activeCount = active.size();
        r.step = Step.AFTER_LOAD;
        complete(r, 0);
    }

    /**
     * Stops the thread, releases every L1 and L2 lock held by requests in flight, and completes every
     * unfinished request with 0. Adapters may still be writing into released L1 buffers: close the
     * adapters before the L1 memory is freed or reused. Idempotent.
     */
    public void stop() {
        if (worker.stopAndJoin(requestFd::signal, this::cleanup)) {
            requestFd.close();
        }
    }

    @Override
    public void close() {
        stop();
    }

    // ---- bitmaps

    private static Bitmap copy(Bitmap b) {
        return b.or(new Bitmap(b.size()));
    }

    /** Bits 0..n-1 of b (an adapter answering with the wrong size is not trusted beyond n). */
    private static Bitmap fit(Bitmap b, int n) {
        if (b.size() == n) {
            return b;
        }
        LOG.log(System.Logger.Level.WARNING, "an adapter answered a bitmap of " + b.size() + " bits for " + n + " keys");
        Bitmap out = new Bitmap(n);
        for (int i = 0; i < Math.min(n, b.size()); i++) {
            if (b.get(i)) {
                out.set(i);
            }
        }
        return out;
    }

    private static Bitmap truncate(Bitmap b, int n) {
        Bitmap out = copy(b);
        for (int i = n; i < b.size(); i++) {
            out.clear(i);
        }
        return out;
    }

    @Override
    public String toString() {
        return "PrefetchController[" + adapters.size() + " adapters, " + activeCount + " active, " + pendingCount
                + " pending, max " + maxInFlight + "]";
    }
}
