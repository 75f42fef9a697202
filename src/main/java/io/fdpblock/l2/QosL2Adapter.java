package io.fdpblock.l2;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.linux.EventFd;
import io.fdpblock.linux.Poller;
import io.fdpblock.util.Segments;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A wrapper that admits stores, lookups and loads to its inner adapter in weighted order per cache salt
 * (type {@code qos}, LMCache's QoS adapter; the order is {@link QosScheduler}'s). A submit returns this
 * wrapper's task id at once and queues the operation; admission submits it to the inner adapter; the
 * inner adapter's completion becomes this wrapper's result (docs/contract.md section 8).
 *
 * <ul>
 * <li>A task whose keys have several cache salts is split into one operation per salt (keys in their
 *     order), each admitted by its salt's weight; the caller sees one task: a lookup's or load's bitmap
 *     is put back together by position, a store succeeds only when every part does.
 * <li>The wrapper's three eventfds are its own. A thread of the wrapper polls the inner adapter's fds and
 *     collects what completed; a wrapper fd is signalled (after the result is recorded) only when one of
 *     the wrapper's tasks completes as a whole: not at admission, not for a part.
 * <li>Unlock, delete, listeners, usage, memory registration and group eviction go straight to the inner
 *     adapter: they never wait for admission.
 * <li>An operation waiting for admission has not reached the inner adapter: its buffers are not read or
 *     written until it is admitted, and a load's buffers only by the inner adapter's load. Buffers must
 *     be usable from any thread (admission may run on another one): a confined, closed or (for a load)
 *     read-only segment is refused at submit.
 * <li>An inner adapter that refuses an operation at its submit (e.g. a load buffer smaller than the
 *     stored payload) fails that part: a store task fails, a lookup's or load's keys read as misses; it is
 *     logged and counted ({@code qos.refused_by_inner}). As in LMCache, such a refusal comes after
 *     admission, so it does not throw at this wrapper's submit.
 * </ul>
 *
 * <p>The inner adapter is the wrapper's alone: it collects every store result the inner adapter pops.
 * Closing the wrapper drops the operations still waiting (their buffers untouched), closes the inner
 * adapter (which waits for what it was given) and then releases their share of the scheduler.
 */
public final class QosL2Adapter extends ForwardingL2Adapter {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.l2");
    private static final AtomicInteger RELAYS = new AtomicInteger();
    /**
     * Salts whose admissions are counted one by one in the status; those of further salts are summed
     * together, so that many short-lived salts leave bounded state (as the scheduler forgets them).
     */
    static final int MAX_COUNTED_SALTS = 1024;

    private enum Op { STORE, LOOKUP, LOAD }

    private final QosScheduler scheduler;
    private final String resourceGroup;
    private final Runnable onClose;
    private final EventFd storeFd;
    private final EventFd lookupFd;
    private final EventFd loadFd;
    private final EventFd wakeFd;
    private final AtomicLong nextTaskId = new AtomicLong(1);
    private final TaskResults results = new TaskResults();
    /** Parts at the inner adapter, by the inner adapter's task id. */
    private final ConcurrentHashMap<Long, Part> innerStores = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Part> innerLookups = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Part> innerLoads = new ConcurrentHashMap<>();
    /**
     * Store results popped before their part's inner id was recorded (the inner adapter may complete a
     * store inside its submit); guarded by itself, with {@link #innerStores} changes that must agree.
     */
    private final Map<Long, L2StoreResult> earlyStores = new HashMap<>();
    private final LongAdder refusedByInner = new LongAdder();
    private final LongAdder splitTasks = new LongAdder();
    private final ConcurrentHashMap<String, Admitted> admittedBySalt = new ConcurrentHashMap<>();
    private final Admitted admittedOtherSalts = new Admitted();
    private final Thread relay;
    private volatile boolean stopping;

    private QosL2Adapter(L2Adapter inner, QosScheduler scheduler, String resourceGroup, Runnable onClose)
            throws IOException {
        super(inner);
        if (scheduler == null) {
            throw new IllegalArgumentException("qos adapter over " + inner + " needs a scheduler; got null");
        }
        this.scheduler = scheduler;
        this.resourceGroup = resourceGroup;
        this.onClose = onClose;
        int[] innerFds = {inner.storeEventFd(), inner.lookupAndLockEventFd(), inner.loadEventFd()}; // first: may throw
        List<EventFd> fds = new ArrayList<>(4);
        try {
            for (int i = 0; i < 4; i++) {
                fds.add(EventFd.create());
            }
        } catch (IOException | RuntimeException e) {
            fds.forEach(EventFd::close);
            throw e;
        }
        storeFd = fds.get(0);
        lookupFd = fds.get(1);
        loadFd = fds.get(2);
        wakeFd = fds.get(3);
        relay = Thread.ofPlatform().daemon().name("fdpblock-qos-relay-" + RELAYS.incrementAndGet())
                .start(() -> relay(innerFds));
    }

    /** Wraps {@code inner} (which the wrapper then owns) with a scheduler of its own, default settings. */
    public static QosL2Adapter wrap(L2Adapter inner) throws IOException {
        return wrap(inner, QosScheduler.builder().build());
    }

    /**
     * Wraps {@code inner} (which the wrapper then owns) under {@code scheduler}; wrappers given the same
     * scheduler share its queues and in-flight limits (adapters that contend for one device).
     */
    public static QosL2Adapter wrap(L2Adapter inner, QosScheduler scheduler) throws IOException {
        return new QosL2Adapter(inner, scheduler, null, () -> { });
    }

    /** The scheduler: its weights can be changed at run time. */
    public QosScheduler scheduler() {
        return scheduler;
    }

    @Override
    protected String kind() {
        return "qos";
    }

    @Override
    public int storeEventFd() {
        checkOpen();
        return storeFd.fd();
    }

    @Override
    public int lookupAndLockEventFd() {
        checkOpen();
        return lookupFd.fd();
    }

    @Override
    public int loadEventFd() {
        checkOpen();
        return loadFd.fd();
    }

    // ---- tasks and their parts ----

    /** One task of this wrapper: its parts' results merged into one. */
    private static final class Task {
        final Op op;
        final long id;
        final int keyCount;
        /** Parts not yet completed; guarded by the task. */
        int remaining;
        boolean success = true;
        long bytes;
        Bitmap merged;

        Task(Op op, long id, int keyCount, int parts) {
            this.op = op;
            this.id = id;
            this.keyCount = keyCount;
            this.remaining = parts;
        }
    }

    /** The keys of one cache salt of a task: one operation of the inner adapter. */
    private final class Part extends QosScheduler.Ticket {
        final Task task;
        final List<ObjectKey> keys;
        final List<MemoryObj> objects;
        /** The task's key positions of this part's keys; null when the part is the whole task. */
        final int[] positions;

        Part(Task task, String salt, long cost, List<ObjectKey> keys, List<MemoryObj> objects, int[] positions) {
            super(QosL2Adapter.this, salt, cost);
            this.task = task;
            this.keys = keys;
            this.objects = objects;
            this.positions = positions;
        }

        @Override
        void admit() {
            QosL2Adapter.this.admit(this);
        }
    }

    /** What admission handed to the inner adapter for one salt (or for the salts past the counted ones). */
    private static final class Admitted {
        /** Operations: stores, lookups and loads (a part of a mixed-salt task counts as one of its salt). */
        final LongAdder tasks = new LongAdder();
        /** Store and load buffer bytes. */
        final LongAdder bytes = new LongAdder();
        final LongAdder lookupKeys = new LongAdder();

        Map<String, Object> snapshot() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("tasks", tasks.sum());
            m.put("bytes", bytes.sum());
            m.put("lookup_keys", lookupKeys.sum());
            return m;
        }
    }

    private void countAdmitted(Part p) {
        Admitted a = admittedBySalt.get(p.salt);
        if (a == null) { // admission runs one thread at a time: the bound is not overrun
            a = admittedBySalt.size() < MAX_COUNTED_SALTS ? admittedBySalt.computeIfAbsent(p.salt, s -> new Admitted())
                    : admittedOtherSalts;
        }
        a.tasks.increment();
        if (p.task.op == Op.LOOKUP) {
            a.lookupKeys.add(p.keys.size());
        } else {
            a.bytes.add(bytesOf(p.objects));
        }
    }

    private static long bytesOf(List<MemoryObj> objects) {
        long total = 0;
        for (MemoryObj o : objects) {
            total += o.size();
        }
        return total;
    }

    private long submit(Op op, List<ObjectKey> keys, List<MemoryObj> objects) {
        checkOpen();
        if (op == Op.LOOKUP) {
            AbstractL2Adapter.checkKeys(keys);
        } else {
            AbstractL2Adapter.checkKeysAndObjects(keys, objects);
            checkBuffers(op, keys, objects);
        }
        String salt = keys.get(0).cacheSalt();
        boolean oneSalt = true;
        for (int i = 1; i < keys.size() && oneSalt; i++) {
            oneSalt = keys.get(i).cacheSalt().equals(salt);
        }
        long id = nextTaskId.getAndIncrement();
        List<Part> parts;
        if (oneSalt) { // the usual case: the caller's lists as they are
            Task task = new Task(op, id, keys.size(), 1);
            parts = List.of(new Part(task, salt, op == Op.LOOKUP ? keys.size() : bytesOf(objects), keys, objects, null));
        } else {
            parts = split(op, id, keys, objects);
            splitTasks.increment();
        }
        scheduler.enqueue(parts);
        scheduler.pump();
        return id;
    }

    /** One part per cache salt, in the order the salts first appear; keys keep their order. */
    private List<Part> split(Op op, long id, List<ObjectKey> keys, List<MemoryObj> objects) {
        Map<String, List<Integer>> bySalt = new LinkedHashMap<>();
        for (int i = 0; i < keys.size(); i++) {
            bySalt.computeIfAbsent(keys.get(i).cacheSalt(), s -> new ArrayList<>()).add(i);
        }
        Task task = new Task(op, id, keys.size(), bySalt.size());
        List<Part> parts = new ArrayList<>(bySalt.size());
        for (Map.Entry<String, List<Integer>> e : bySalt.entrySet()) {
            int[] positions = e.getValue().stream().mapToInt(Integer::intValue).toArray();
            List<ObjectKey> partKeys = new ArrayList<>(positions.length);
            List<MemoryObj> partObjects = objects == null ? null : new ArrayList<>(positions.length);
            for (int p : positions) {
                partKeys.add(keys.get(p));
                if (partObjects != null) {
                    partObjects.add(objects.get(p));
                }
            }
            long cost = op == Op.LOOKUP ? positions.length : bytesOf(partObjects);
            parts.add(new Part(task, e.getKey(), cost, partKeys, partObjects, positions));
        }
        return parts;
    }

    /** What the inner adapter may be handed from another thread (the one that admits). */
    private void checkBuffers(Op op, List<ObjectKey> keys, List<MemoryObj> objects) {
        for (int i = 0; i < objects.size(); i++) {
            MemorySegment s = objects.get(i).segment();
            String problem = !s.scope().isAlive() ? "belongs to an arena that is closed"
                    : Segments.isConfined(s) ? "is confined to one thread (Arena.ofConfined())"
                    : op == Op.LOAD && s.isReadOnly() ? "is read-only" : null;
            if (problem != null) {
                throw new IllegalArgumentException(this + ": the " + (op == Op.LOAD ? "load" : "store") + " buffer of "
                        + keys.get(i) + " " + problem + "; admission may hand it to the inner adapter from another "
                        + "thread: use memory of a shared arena (IoMemory.allocate, Arena.ofShared())");
            }
        }
    }

    @Override
    public long submitStoreTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        return submit(Op.STORE, keys, objects);
    }

    @Override
    public long submitLookupAndLockTask(List<ObjectKey> keys) {
        return submit(Op.LOOKUP, keys, null);
    }

    @Override
    public long submitLoadTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        return submit(Op.LOAD, keys, objects);
    }

    @Override
    public Map<Long, L2StoreResult> popCompletedStoreTasks() {
        checkOpen();
        return results.popStores();
    }

    @Override
    public Bitmap queryLookupAndLockResult(long taskId) {
        checkOpen();
        return results.takeLookup(taskId);
    }

    @Override
    public Bitmap queryLoadResult(long taskId) {
        checkOpen();
        return results.takeLoad(taskId);
    }

    // ---- admission and completion ----

    /** The scheduler admitted {@code p}: hand it to the inner adapter (on the pumping thread). */
    private void admit(Part p) {
        if (isClosed()) { // closing: never reaches the inner adapter
            scheduler.complete(p);
            return;
        }
        countAdmitted(p);
        long innerId;
        try {
            innerId = switch (p.task.op) {
                case STORE -> inner().submitStoreTask(p.keys, p.objects);
                case LOOKUP -> inner().submitLookupAndLockTask(p.keys);
                case LOAD -> inner().submitLoadTask(p.keys, p.objects);
            };
        } catch (RuntimeException e) {
            refusedByInner.increment();
            LOG.log(System.Logger.Level.WARNING, this + ": the inner adapter refused a " + p.task.op.name().toLowerCase()
                    + " of " + p.keys.size() + " keys of cache salt '" + p.salt + "' at admission (" + e
                    + "); it completes as failed");
            finish(p, p.task.op == Op.STORE ? L2StoreResult.failed() : new Bitmap(p.keys.size()));
            return;
        }
        switch (p.task.op) {
            case STORE -> {
                L2StoreResult early;
                synchronized (earlyStores) {
                    early = earlyStores.remove(innerId);
                    if (early == null) {
                        innerStores.put(innerId, p);
                    }
                }
                if (early != null) {
                    finish(p, early);
                }
            }
            case LOOKUP -> collect(innerLookups, innerId, p, inner()::queryLookupAndLockResult);
            case LOAD -> collect(innerLoads, innerId, p, inner()::queryLoadResult);
        }
    }

    private interface Query {
        Bitmap query(long innerId);
    }

    /**
     * Records the part under its inner id, then asks once: the inner adapter may have completed it (and
     * signalled) before the id was known to the relay. Results are one-shot, so exactly one of this and
     * the relay gets it.
     */
    private void collect(ConcurrentHashMap<Long, Part> at, long innerId, Part p, Query query) {
        at.put(innerId, p);
        Bitmap b = queryQuietly(query, innerId);
        if (b != null) {
            at.remove(innerId);
            finish(p, b);
        }
    }

    private Bitmap queryQuietly(Query query, long innerId) {
        try {
            return query.query(innerId);
        } catch (RuntimeException e) { // the inner adapter closed under a closing wrapper
            if (!isClosed()) {
                LOG.log(System.Logger.Level.WARNING, this + ": querying the inner adapter's task " + innerId + " failed", e);
            }
            return null;
        }
    }

    /** A part completed: merge it into its task, publish the task when it is whole, admit what may go next. */
    private void finish(Part p, Object result) {
        Task t = p.task;
        Object whole = null;
        if (p.positions == null) {
            whole = result;
        } else {
            synchronized (t) {
                if (t.op == Op.STORE) {
                    L2StoreResult r = (L2StoreResult) result;
                    t.success &= r.success();
                    t.bytes += r.bytesWritten();
                } else {
                    if (t.merged == null) {
                        t.merged = new Bitmap(t.keyCount);
                    }
                    for (int i : ((Bitmap) result).indices()) {
                        t.merged.set(p.positions[i]);
                    }
                }
                if (--t.remaining == 0) {
                    whole = t.op == Op.STORE ? (t.success ? new L2StoreResult(true, t.bytes) : L2StoreResult.failed())
                            : t.merged;
                }
            }
        }
        if (whole != null) {
            switch (t.op) { // recorded first, then signalled
                case STORE -> {
                    results.putStore(t.id, (L2StoreResult) whole);
                    storeFd.signal();
                }
                case LOOKUP -> {
                    results.putLookup(t.id, (Bitmap) whole);
                    lookupFd.signal();
                }
                case LOAD -> {
                    results.putLoad(t.id, (Bitmap) whole);
                    loadFd.signal();
                }
            }
        }
        scheduler.complete(p);
    }

    // ---- the relay: the inner adapter's completions ----

    private void relay(int[] innerFds) {
        try (Poller poller = Poller.of(innerFds[0], innerFds[1], innerFds[2], wakeFd.fd())) {
            while (!stopping) {
                poller.poll(null); // the wake fd ends the wait at close
                if (stopping) {
                    return;
                }
                for (int i = 0; i < 3; i++) {
                    if (poller.isInvalid(i)) {
                        LOG.log(System.Logger.Level.ERROR, this + ": the inner adapter's eventfd " + innerFds[i]
                                + " is not open; no completion of it is collected any more");
                        return;
                    }
                }
                if (poller.isReadable(0)) {
                    EventFd.drainFd(innerFds[0]);
                    collectStores();
                }
                if (poller.isReadable(1)) {
                    EventFd.drainFd(innerFds[1]);
                    collectAll(innerLookups, inner()::queryLookupAndLockResult);
                }
                if (poller.isReadable(2)) {
                    EventFd.drainFd(innerFds[2]);
                    collectAll(innerLoads, inner()::queryLoadResult);
                }
                if (poller.isReadable(3)) {
                    wakeFd.drain();
                }
            }
        } catch (IOException | RuntimeException e) {
            if (!stopping) {
                LOG.log(System.Logger.Level.ERROR, this + ": its relay stopped; tasks at the inner adapter no longer "
                        + "complete", e);
            }
        }
    }

    private void collectStores() {
        Map<Long, L2StoreResult> done;
        try {
            done = inner().popCompletedStoreTasks();
        } catch (RuntimeException e) {
            if (!isClosed()) {
                LOG.log(System.Logger.Level.WARNING, this + ": popping the inner adapter's stores failed", e);
            }
            return;
        }
        for (Map.Entry<Long, L2StoreResult> e : done.entrySet()) {
            Part p;
            synchronized (earlyStores) {
                p = innerStores.remove(e.getKey());
                if (p == null) {
                    earlyStores.put(e.getKey(), e.getValue());
                }
            }
            if (p != null) {
                finish(p, e.getValue());
            }
        }
    }

    private void collectAll(ConcurrentHashMap<Long, Part> at, Query query) {
        for (Iterator<Map.Entry<Long, Part>> it = at.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Long, Part> e = it.next();
            Bitmap b = queryQuietly(query, e.getKey());
            if (b != null) {
                it.remove();
                finish(e.getValue(), b);
            }
        }
    }

    // ---- status and close ----

    /**
     * The inner adapter's status, plus {@code qos}: the scheduler's snapshot and this wrapper's counters,
     * among them what it admitted per cache salt ({@code admitted_by_cache_salt}: tasks, store and load
     * bytes, lookup keys; salts past {@link #MAX_COUNTED_SALTS} summed in {@code admitted_other_salts}).
     */
    @Override
    public Map<String, Object> reportStatus() {
        Map<String, Object> s = new LinkedHashMap<>(super.reportStatus());
        Map<String, Object> q = new LinkedHashMap<>(scheduler.snapshot());
        if (resourceGroup != null) {
            s.put("qos_resource_group", resourceGroup);
        }
        q.put("at_inner_stores", innerStores.size());
        q.put("at_inner_lookups", innerLookups.size());
        q.put("at_inner_loads", innerLoads.size());
        results.putPending(q);
        q.put("split_tasks", splitTasks.sum());
        q.put("refused_by_inner", refusedByInner.sum());
        Map<String, Object> bySalt = new TreeMap<>();
        admittedBySalt.forEach((salt, a) -> bySalt.put(salt, a.snapshot()));
        q.put("admitted_by_cache_salt", bySalt);
        q.put("admitted_other_salts", admittedOtherSalts.snapshot());
        synchronized (earlyStores) {
            q.put("unclaimed_inner_store_results", earlyStores.size());
        }
        s.put("qos", q);
        return s;
    }

    @Override
    protected void beforeInnerClose() {
        scheduler.cancel(this); // never admitted: their buffers were never touched
        stopping = true;
        wakeFd.signal();
        if (Thread.currentThread() != relay) {
            try {
                relay.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    protected void afterInnerClose() {
        try {
            scheduler.forget(this); // the inner adapter is closed: nothing of this wrapper is in flight
        } finally {
            storeFd.close();
            lookupFd.close();
            loadFd.close();
            wakeFd.close();
            onClose.run();
        }
    }

    /**
     * Registered for {@code "type": "qos"}: {@code inner} (required: the wrapped adapter's own JSON),
     * {@code default_sched_weight}, {@code sched_weights} (cache salt to weight), {@code quantum_bytes},
     * {@code max_inflight_tasks}, {@code max_inflight_bytes}, {@code qos_resource_group} (adapters naming
     * the same group share one scheduler; they must give it the same settings).
     */
    public static final class Factory implements L2AdapterFactory {
        private static final String KNOWN = "type, inner, default_sched_weight, sched_weights, quantum_bytes, "
                + "max_inflight_tasks, max_inflight_bytes, qos_resource_group";
        /** Named resource groups of the process, with the adapters using each. */
        private static final Map<String, Group> GROUPS = new HashMap<>();

        private record Settings(long quantumBytes, int maxInflightTasks, long maxInflightBytes, int defaultWeight,
                Map<String, Integer> weights) {
            QosScheduler scheduler() {
                QosScheduler.Builder b = QosScheduler.builder().quantumBytes(quantumBytes)
                        .maxInflightTasks(maxInflightTasks).maxInflightBytes(maxInflightBytes).defaultWeight(defaultWeight);
                weights.forEach(b::weight);
                return b.build();
            }
        }

        private static final class Group {
            final Settings settings;
            final QosScheduler scheduler;
            int members;

            Group(Settings settings) {
                this.settings = settings;
                this.scheduler = settings.scheduler();
            }
        }

        @Override
        public String type() {
            return "qos";
        }

        @Override
        public L2Adapter create(JsonNode config) throws IOException {
            long quantum = QosScheduler.DEFAULT_QUANTUM_BYTES;
            int maxTasks = QosScheduler.DEFAULT_MAX_INFLIGHT_TASKS;
            long maxBytes = 0;
            int defaultWeight = QosScheduler.DEFAULT_WEIGHT;
            Map<String, Integer> weights = new TreeMap<>();
            String group = null;
            JsonNode inner = config.get("inner");
            for (Map.Entry<String, JsonNode> e : ForwardingL2Adapter.wrapperOptions(config)) {
                JsonNode v = e.getValue();
                switch (e.getKey()) {
                    case "default_sched_weight" -> defaultWeight = (int) integer(e.getKey(), v, Integer.MAX_VALUE);
                    case "quantum_bytes" -> quantum = integer(e.getKey(), v, Long.MAX_VALUE);
                    case "max_inflight_tasks" -> maxTasks = (int) integer(e.getKey(), v, Integer.MAX_VALUE);
                    case "max_inflight_bytes" -> maxBytes = integer(e.getKey(), v, Long.MAX_VALUE);
                    case "sched_weights" -> {
                        if (!v.isObject()) {
                            throw new IllegalArgumentException("qos: sched_weights = " + v
                                    + " must be an object of cache salt to weight, e.g. {\"tenant-a\": 300, \"\": 100}");
                        }
                        for (Map.Entry<String, JsonNode> w : v.properties()) {
                            weights.put(w.getKey(), (int) integer("sched_weights[\"" + w.getKey() + "\"]", w.getValue(),
                                    Integer.MAX_VALUE));
                        }
                    }
                    case "qos_resource_group" -> {
                        if (!v.isTextual() || v.textValue().isBlank()) {
                            throw new IllegalArgumentException("qos: qos_resource_group = " + v
                                    + " must be a non-empty string (the name adapters on one device share)");
                        }
                        group = v.textValue();
                    }
                    default -> throw new IllegalArgumentException("qos: unknown key '" + e.getKey() + "'; known keys: "
                            + KNOWN);
                }
            }
            Settings settings = new Settings(quantum, maxTasks, maxBytes, defaultWeight, Map.copyOf(weights));
            QosScheduler own = settings.scheduler(); // validates every setting before anything is opened
            L2Adapter innerAdapter = ForwardingL2Adapter.createInner("qos", inner);
            try {
                if (group == null) {
                    return new QosL2Adapter(innerAdapter, own, null, () -> { });
                }
                String name = group;
                QosScheduler shared = join(name, settings);
                try {
                    return new QosL2Adapter(innerAdapter, shared, name, () -> leave(name));
                } catch (IOException | RuntimeException e) {
                    leave(name);
                    throw e;
                }
            } catch (IOException | RuntimeException e) {
                innerAdapter.close();
                throw e;
            }
        }

        private static QosScheduler join(String name, Settings settings) {
            synchronized (GROUPS) {
                Group g = GROUPS.get(name);
                if (g == null) {
                    g = new Group(settings);
                    GROUPS.put(name, g);
                } else if (!g.settings.equals(settings)) {
                    throw new IllegalArgumentException("qos: qos_resource_group '" + name + "' is already used with "
                            + g.settings + "; this adapter gives " + settings
                            + "; give every adapter of a group the same QoS settings");
                }
                g.members++;
                return g.scheduler;
            }
        }

        private static void leave(String name) {
            synchronized (GROUPS) {
                Group g = GROUPS.get(name);
                if (g != null && --g.members == 0) {
                    GROUPS.remove(name);
                }
            }
        }

        private static long integer(String key, JsonNode v, long max) {
            if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 0 || v.asLong() > max) {
                throw new IllegalArgumentException("qos: " + key + " = " + v + " must be an integer in [0, " + max + "]");
            }
            return v.asLong();
        }
    }
}
