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
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

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
 * <li>Admission, per adapter as its load is in (a fast adapter's keys do not wait for a slow one):
 * phase-2 unlock of that adapter's planned keys; {@code finishWriteAndReserveRead(loaded)} (atomic);
 * failed keys {@code finishWrite} + {@code delete}.</li>
 * <li>When all loads are in: the result is the loaded prefix; loaded keys past it release their read
 * locks.</li>
 * </ol>
 *
 * <p><b>Load deadline</b> (off unless a deadline is given): a request not answered within the deadline
 * of its submission is answered at once, exactly once, with the prefix its completed loads hold (0 while
 * queued or looking up). Its tasks still out are never cancelled: they drain. Until a late load is in,
 * its L1 buffers stay write-locked (never freed, evicted or reused) and its L2 locks held; when it is in,
 * its loaded keys become ready and unlocked (temporary), its failed keys are deleted, and its L2 locks
 * released; a late lookup's L2 locks are released when it answers. A draining request keeps its place
 * among the {@code maxInFlight} until it is drained.
 *
 * The controller polls its request fd and every adapter's lookup and load fds (500 ms timeout, or
 * less up to the nearest deadline). All request state is confined to the controller's thread.
 * {@link #stop()} releases every L1 and L2 lock held by requests in flight.
 */
public final class PrefetchController implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.controller");
    public static final int DEFAULT_MAX_IN_FLIGHT = 8;
    static final Duration POLL_TIMEOUT = Duration.ofMillis(500);

    /**
     * The steps of a request, by the lock-invariant steps of docs/contract.md section 4. A request is in
     * LOOKUP from admission until it is planned, in LOADING until every load is in, and AFTER_LOAD once
     * finished or released; the test hook hears each step when it is reached (LOOKUP when every lookup is
     * in), ADMITTED once per adapter whose load is in, and EXPIRED and DRAINED on the deadline's path.
     */
    enum Step {
        /** lookups submitted; when every lookup is in, nothing planned yet: L1 none, L2 hits locked */
        LOOKUP,
        /** reserved and phase-1 unlocked, loads not yet submitted: L1 write-locked, L2 planned keys locked */
        AFTER_PLAN,
        /** loads submitted: L1 write-locked, L2 planned keys locked */
        LOADING,
        /**
         * one adapter's load is in: its loaded keys read-locked in L1 (ready and unlocked when the request was
         * answered at its deadline), its failed keys gone, its L2 locks released; other adapters' keys as in
         * LOADING
         */
        ADMITTED,
        /** finished, result not yet published: L1 read-locked (prefix only), L2 all unlocked */
        AFTER_LOAD,
        /**
         * answered at the deadline, result not yet published: the answered prefix read-locked, keys of tasks
         * still out write-locked and L2-locked, nothing else locked
         */
        EXPIRED,
        /** every late task of an expired request is in: nothing locked by the request any more */
        DRAINED
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
        /** True once the load's answer went into L1 (and its L2 locks were released). */
        boolean admitted;

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
        /** {@link #clock} time after which it is answered with what it has; meaningless when no deadline. */
        final long deadlineAt;
        Step step = Step.LOOKUP;
        /** By adapter index; empty until the lookups are submitted. */
        List<AdapterPart> parts = List.of();
        /** L1 write-locked keys of this request, by key index (null = none). */
        MemoryObj[] reserved;
        /** Keys loaded into L1 so far (admitted), by key index. */
        Bitmap loaded;
        /** Keys this request read-locked in L1 and still owns (not yet handed to the caller). */
        Bitmap readLocked;
        /** The caller has its result (published exactly once). */
        boolean answered;
        /** Answered at the deadline while tasks were out: it only drains them now. */
        boolean draining;

        Request(long id, List<ObjectKey> keys, KvLayout layout, long deadlineAt) {
            this.id = id;
            this.keys = keys;
            this.layout = layout;
            this.n = keys.size();
            this.deadlineAt = deadlineAt;
            this.loaded = new Bitmap(n);
            this.readLocked = new Bitmap(n);
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
    /** 0: no deadline. */
    private final long deadlineNanos;
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
    private volatile int drainingCount;
    private volatile long deadlineTimeouts;

    private final ControllerThread worker = new ControllerThread("prefetch controller", "fdpblock-prefetch-controller");
    private volatile StepHook hook;
    private volatile Duration stopLookupGrace = Duration.ofSeconds(2);
    /** Nanosecond time of the deadlines; read only when there is a deadline. */
    private volatile LongSupplier clock = System::nanoTime;

    public PrefetchController(L1Manager l1, List<L2Adapter> adapters, PrefetchPolicy policy) throws IOException {
        this(l1, adapters, policy, DEFAULT_MAX_IN_FLIGHT);
    }

    /**
     * @param adapters the L2 adapters, by index (not owned: never closed here)
     * @param maxInFlight how many requests may be active at once (&gt;= 1)
     */
    public PrefetchController(L1Manager l1, List<L2Adapter> adapters, PrefetchPolicy policy, int maxInFlight)
            throws IOException {
        this(l1, adapters, policy, maxInFlight, null);
    }

    /**
     * @param adapters the L2 adapters, by index (not owned: never closed here)
     * @param maxInFlight how many requests may be active at once (&gt;= 1)
     * @param loadDeadline how long after its submission a request is answered with what it has (the late
     *        tasks drain); null or zero: no deadline
     */
    public PrefetchController(L1Manager l1, List<L2Adapter> adapters, PrefetchPolicy policy, int maxInFlight,
            Duration loadDeadline) throws IOException {
        if (l1 == null || adapters == null || policy == null) {
            throw new IllegalArgumentException("prefetch controller needs an L1 manager, adapters and a policy");
        }
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("max in flight " + maxInFlight + " must be >= 1");
        }
        if (loadDeadline != null && loadDeadline.isNegative()) {
            throw new IllegalArgumentException("load deadline " + loadDeadline + " must be positive (or zero or null:"
                    + " no deadline)");
        }
        this.l1 = l1;
        this.adapters = List.copyOf(adapters);
        this.descriptors = AdapterDescriptor.of(this.adapters);
        this.policy = policy;
        this.maxInFlight = maxInFlight;
        this.deadlineNanos = loadDeadline == null ? 0 : loadDeadline.toNanos();
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

    /** Test hook: the nanosecond clock of the deadlines; set before the first submission. */
    void setClock(LongSupplier nanoClock) {
        this.clock = nanoClock;
    }

    /** Test hook: makes the thread look again now (e.g. at the deadlines, after a test clock moved). */
    void wakeUp() {
        requestFd.signal();
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
        List<ObjectKey> copy = List.copyOf(keys);
        long[] id = new long[1];
        worker.unlessStopped(() -> {
            // stamped in id order (unlessStopped is atomic): the queue's deadlines never decrease
            long deadlineAt = deadlineNanos == 0 ? 0 : clock.getAsLong() + deadlineNanos;
            id[0] = nextId.getAndIncrement();
            submissions.add(new Request(id[0], copy, layout, deadlineAt));
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

    /** Requests being looked up, loaded or drained now. */
    public int activeRequests() {
        return activeCount;
    }

    /** Requests admitted to the queue but not yet active (not counting ones just submitted). */
    public int pendingRequests() {
        return pendingCount;
    }

    /** Requests answered at their deadline whose late tasks are still out (counted in the active ones too). */
    public int drainingRequests() {
        return drainingCount;
    }

    /** Requests answered at their deadline (queued, looking up or loading), since the start. */
    public long deadlineTimeouts() {
        return deadlineTimeouts;
    }

    /** The load deadline; {@link Duration#ZERO} when there is none. */
    public Duration loadDeadline() {
        return Duration.ofNanos(deadlineNanos);
    }

    public int maxInFlight() {
        return maxInFlight;
    }

    public List<AdapterDescriptor> adapters() {
        return descriptors;
    }

    /** Publishes {@code r}'s result, exactly once: a request answered already is never answered again. */
    private void complete(Request r, int prefixHits) {
        if (r.answered) {
            return;
        }
        r.answered = true;
        r.readLocked = new Bitmap(r.n); // the answered prefix's read locks are the caller's from now on
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
                poller.poll(pollTimeout());
                if (!worker.isRunning()) {
                    break;
                }
                drainReadable(poller);
                advance();
                // after the answers: a task that answered in this same wake-up wins over its deadline
                expireDue();
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
                    progress |= advance(r);
                } catch (RuntimeException e) {
                    // one broken request (e.g. L1 closed under it) must not stop the others
                    LOG.log(System.Logger.Level.ERROR, "prefetch " + r.id + " failed; its locks are released", e);
                    release(r);
                    progress = true;
                }
            }
        }
    }

    /** Takes {@code r}'s answers that are in. @return whether it finished, drained or moved to LOADING */
    private boolean advance(Request r) {
        if (r.step == Step.LOOKUP) {
            pollAnswers(r);
            if (r.draining) {
                unlockAnswered(r); // a late lookup's hits will never be loaded
                if (r.awaiting() == 0) {
                    retireDrained(r);
                    return true;
                }
            } else if (r.awaiting() == 0) {
                step(Step.LOOKUP, r);
                planAndLoad(r);
                return true;
            }
        } else if (r.step == Step.LOADING) {
            return admitLoads(r);
        }
        return false;
    }

    /** Admits {@code r}'s loads that are in; when all are, finishes it (or, draining, retires it). @return the latter */
    private boolean admitLoads(Request r) {
        pollAnswers(r);
        admitAnswered(r);
        if (r.awaiting() > 0) {
            return false;
        }
        if (r.draining) {
            retireDrained(r);
        } else {
            finishLoad(r);
        }
        return true;
    }

    private boolean admit() {
        for (Request r; (r = submissions.poll()) != null; ) {
            pending.add(r);
        }
        boolean started = false;
        while (active.size() < maxInFlight && !pending.isEmpty()) {
            Request r = pending.poll();
            if (deadlineNanos > 0 && clock.getAsLong() - r.deadlineAt >= 0) {
                expireQueued(r); // due before it could start: no L2 work for it
                continue;
            }
            startLookup(r);
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

    /** Tells the hook of {@code s} without changing the request's step. */
    private void event(Step s, Request r) {
        Step at = r.step;
        step(s, r);
        r.step = at;
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

    // ---- 6. admission, per adapter

    /** Admits every load of {@code r} that is in and not admitted yet. */
    private void admitAnswered(Request r) {
        for (AdapterPart p : r.parts) {
            if (!p.awaiting && !p.admitted && p.loaded != null) {
                admitLoad(r, p);
            }
        }
    }

    /**
     * Takes one adapter's load into L1: phase-2 unlock of its planned keys, loaded or not; its loaded keys
     * turn from write-locked to read-locked in one step (no moment in which they could be evicted), or, once
     * the request was answered, to ready and unlocked; its failed keys are deleted.
     */
    private void admitLoad(Request r, AdapterPart p) {
        p.admitted = true;
        unlock(p.index, r, p.locked);
        p.locked = new Bitmap(r.n);
        int[] idx = p.plan.indices();
        List<ObjectKey> loadedKeys = new ArrayList<>(idx.length);
        List<Integer> loadedIndices = new ArrayList<>(idx.length);
        List<ObjectKey> failedKeys = new ArrayList<>();
        for (int j = 0; j < idx.length; j++) {
            int k = idx[j];
            if (r.reserved[k] == null) {
                continue;
            }
            r.reserved[k] = null;
            if (p.loaded.get(j)) {
                loadedKeys.add(r.keys.get(k));
                loadedIndices.add(k);
                r.loaded.set(k);
            } else {
                failedKeys.add(r.keys.get(k));
            }
        }
        if (r.answered) {
            l1.finishWrite(loadedKeys); // nobody waits for them: ready, unlocked, evictable
        } else {
            List<MemoryObj> locked = l1.finishWriteAndReserveRead(loadedKeys); // write -> read, no eviction window
            for (int j = 0; j < locked.size(); j++) {
                if (locked.get(j) != null) {
                    r.readLocked.set(loadedIndices.get(j));
                }
            }
        }
        if (!failedKeys.isEmpty()) {
            l1.finishWrite(failedKeys);
            l1.delete(failedKeys);
        }
        event(Step.ADMITTED, r);
    }

    // ---- 7. finish

    private void finishLoad(Request r) {
        int hits = r.loaded.leadingOnes();
        l1.finishRead(readLockedFrom(r, hits)); // loaded past a failed key: unusable, left evictable
        active.remove(r);
        activeCount = active.size();
        step(Step.AFTER_LOAD, r);
        complete(r, hits);
    }

    /** The keys at {@code from} and past it that {@code r} holds read-locked, no longer held by it. */
    private static List<ObjectKey> readLockedFrom(Request r, int from) {
        List<ObjectKey> out = new ArrayList<>();
        for (int j = from; j < r.n; j++) {
            if (r.readLocked.get(j)) {
                out.add(r.keys.get(j));
                r.readLocked.clear(j);
            }
        }
        return out;
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

    /** Releases the L2 locks of every lookup of {@code r} that has answered. */
    private void unlockAnswered(Request r) {
        for (AdapterPart p : r.parts) {
            if (!p.awaiting) {
                unlock(p.index, r, p.locked);
                p.locked = new Bitmap(r.n);
            }
        }
    }

    // ---- the load deadline

    /** How long the thread may sleep: until the nearest deadline of a request not yet answered, at most 500 ms. */
    private Duration pollTimeout() {
        if (deadlineNanos == 0) {
            return POLL_TIMEOUT; // no deadline: the clock is never read
        }
        boolean armed = false;
        long nearest = 0;
        for (Request r : active) {
            if (!r.answered && (!armed || r.deadlineAt - nearest < 0)) {
                nearest = r.deadlineAt;
                armed = true;
            }
        }
        // the queue is in submission order, so its head has its nearest deadline
        Request head = pending.isEmpty() ? submissions.peek() : pending.peek();
        if (head != null && (!armed || head.deadlineAt - nearest < 0)) {
            nearest = head.deadlineAt;
            armed = true;
        }
        if (!armed) {
            return POLL_TIMEOUT;
        }
        long left = nearest - clock.getAsLong();
        return left <= 0 ? Duration.ZERO : Duration.ofNanos(Math.min(left, POLL_TIMEOUT.toNanos()));
    }

    /** Answers every request whose deadline has passed: the active ones drain from now on, queued ones are dropped. */
    private void expireDue() {
        if (deadlineNanos == 0) {
            return;
        }
        long now = clock.getAsLong();
        for (Request r : List.copyOf(active)) {
            if (!r.answered && now - r.deadlineAt >= 0) {
                try {
                    expire(r);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.ERROR, "prefetch " + r.id + " failed at its deadline; its locks are"
                            + " released", e);
                    release(r);
                }
            }
        }
        while (!pending.isEmpty() && now - pending.peek().deadlineAt >= 0) {
            expireQueued(pending.poll());
        }
        pendingCount = pending.size();
    }

    /**
     * Answers {@code r} with the prefix its admitted loads hold (0 while looking up) and lets its tasks still
     * out drain: their L1 buffers stay write-locked and their L2 locks held until they are in. Locks nothing
     * will use are released now: read locks past the answered prefix, and the L2 locks of lookups that answered.
     */
    private void expire(Request r) {
        int hits = 0;
        if (r.step == Step.LOOKUP) {
            unlockAnswered(r);
        } else {
            hits = r.loaded.leadingOnes();
            l1.finishRead(readLockedFrom(r, hits));
        }
        deadlineTimeouts++;
        r.draining = true;
        drainingCount++;
        event(Step.EXPIRED, r);
        complete(r, hits);
        LOG.log(System.Logger.Level.DEBUG, () -> "prefetch " + r.id + " answered at its deadline with " + r.loaded
                .leadingOnes() + " of " + r.n + " keys; " + r.awaiting() + " tasks drain");
    }

    /** A request due while still queued: answered with 0, it never reaches L2. */
    private void expireQueued(Request r) {
        deadlineTimeouts++;
        complete(r, 0);
    }

    /** Every late task of {@code r} is in (and admitted): it holds nothing any more. */
    private void retireDrained(Request r) {
        unlockAnswered(r);
        active.remove(r);
        activeCount = active.size();
        r.draining = false;
        drainingCount--;
        event(Step.DRAINED, r);
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

    /**
     * Releases every L1 and L2 lock of the requests in flight; every request not yet answered gets a result
     * (0). A draining request keeps its answer, and its answered prefix stays the caller's.
     */
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
                } else if (r.step == Step.LOADING && admitLoads(r)) {
                    continue; // finished after all: completed normally (or drained)
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
        drainingCount = 0;
        if (released > 0) {
            LOG.log(System.Logger.Level.INFO, "prefetch controller stopped; released the locks of " + released
                    + " requests in flight");
        }
    }

    /**
     * Unlocks every L2 lock, returns every L1 reservation and read lock {@code r} still holds, then completes it
     * with 0 unless it was answered already.
     */
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
            l1.finishRead(readLockedFrom(r, 0));
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "releasing prefetch " + r.id + " failed", e);
        }
        active.remove(r);
        activeCount = active.size();
        if (r.draining) {
            r.draining = false;
            drainingCount--;
        }
        r.step = Step.AFTER_LOAD;
        complete(r, 0);
    }

    /**
     * Stops the thread, releases every L1 and L2 lock held by requests in flight, and completes every
     * unfinished request with 0. Adapters may still be writing into released L1 buffers (of loads in flight,
     * draining ones included): close the adapters before the L1 memory is freed or reused. Idempotent.
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
                + " pending, " + drainingCount + " draining, max " + maxInFlight + "]";
    }
}
