package io.fdpblock.l2;

import io.fdpblock.linux.EventFd;
import io.fdpblock.util.LatencyHistogram;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * What every adapter shares: the three eventfds, task ids, one-shot result tables, listeners, usage by
 * cache salt and the closed state. Subclasses do the storing, tell the listeners, then call
 * {@code complete*}, which records the result and then signals: whoever wakes up on the fd finds the
 * result, and listeners have already heard of it.
 */
public abstract class AbstractL2Adapter implements L2Adapter {
    protected static final System.Logger LOG = System.getLogger("io.fdpblock.l2");

    private final EventFd storeFd;
    private final EventFd lookupFd;
    private final EventFd loadFd;
    private final AtomicLong nextTaskId = new AtomicLong(1);
    private final TaskResults results = new TaskResults();
    private final CopyOnWriteArrayList<L2AdapterListener> listeners = new CopyOnWriteArrayList<>();
    private final ConcurrentHashMap<String, AtomicLong> bytesBySalt = new ConcurrentHashMap<>();
    private final AtomicLong listenerFailures = new AtomicLong();
    private final OpStats storeStats = new OpStats();
    private final OpStats lookupStats = new OpStats();
    private final OpStats loadStats = new OpStats();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Set together, read together: one volatile reference. */
    private volatile BackendIdentity identity = new BackendIdentity("", false);

    /** What {@link #setBackendIdentity} set ({@code ""} until then, as LMCache's default). */
    private record BackendIdentity(String name, boolean shared) {}

    protected AbstractL2Adapter() throws IOException {
        EventFd s = null;
        EventFd l = null;
        try {
            s = EventFd.create();
            l = EventFd.create();
            loadFd = EventFd.create();
        } catch (IOException | RuntimeException e) {
            if (s != null) {
                s.close();
            }
            if (l != null) {
                l.close();
            }
            throw e;
        }
        storeFd = s;
        lookupFd = l;
    }

    /** A short name for messages, e.g. "raw_block adapter on /dev/ng0n1". */
    protected abstract String describe();

    protected abstract long capacityBytes();

    /** Every key held now, with its size: replayed to a new listener. */
    protected abstract Map<ObjectKey, Long> heldKeys();

    /** Backend state for {@link #reportStatus()}. */
    protected abstract Map<String, Object> backendStatus();

    /** Waits for the backend's work in flight and releases it. */
    protected abstract void closeBackend();

    @Override
    public final int storeEventFd() {
        checkOpen();
        return storeFd.fd();
    }

    @Override
    public final int lookupAndLockEventFd() {
        checkOpen();
        return lookupFd.fd();
    }

    @Override
    public final int loadEventFd() {
        checkOpen();
        return loadFd.fd();
    }

    protected final void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(describe() + " is closed");
        }
    }

    protected final boolean isClosed() {
        return closed.get();
    }

    protected final long newTaskId() {
        checkOpen();
        return nextTaskId.getAndIncrement();
    }

    protected static void checkKeys(List<ObjectKey> keys) {
        if (keys == null || keys.isEmpty()) {
            throw new IllegalArgumentException("keys must be a non-empty list");
        }
        for (int i = 0; i < keys.size(); i++) {
            if (keys.get(i) == null) {
                throw new IllegalArgumentException("keys[" + i + "] is null");
            }
        }
    }

    protected static void checkKeysAndObjects(List<ObjectKey> keys, List<MemoryObj> objects) {
        checkKeys(keys);
        if (objects == null || objects.size() != keys.size()) {
            throw new IllegalArgumentException("keys (" + keys.size() + ") and objects ("
                    + (objects == null ? "null" : objects.size()) + ") must be lists of equal length");
        }
        for (int i = 0; i < objects.size(); i++) {
            if (objects.get(i) == null) {
                throw new IllegalArgumentException("objects[" + i + "] is null");
            }
        }
    }

    // ---- results: recorded first, then signalled ----

    /**
     * @param submitNanos {@link System#nanoTime()} at submit: the latency recorded is submit to signal
     */
    protected final void completeStore(long taskId, L2StoreResult result, long submitNanos) {
        results.putStore(taskId, result);
        storeStats.record(submitNanos, result.success() ? 0 : 1, result.bytesWritten());
        storeFd.signal();
    }

    protected final void completeLookup(long taskId, Bitmap hits, long submitNanos) {
        results.putLookup(taskId, hits);
        lookupStats.record(submitNanos, hits.size() - hits.cardinality(), 0);
        lookupFd.signal();
    }

    protected final void completeLoad(long taskId, Bitmap hits, long submitNanos) {
        results.putLoad(taskId, hits);
        loadStats.record(submitNanos, hits.size() - hits.cardinality(), 0);
        loadFd.signal();
    }

    /**
     * A lookup that completes at submit: {@code lookup} answers (and locks) in memory; an internal
     * failure still completes the task, all-zero.
     */
    protected final long lookupAtSubmit(List<ObjectKey> keys, Function<List<ObjectKey>, Bitmap> lookup) {
        checkKeys(keys);
        long id = newTaskId();
        long start = System.nanoTime();
        try {
            completeLookup(id, lookup.apply(keys), start);
        } catch (RuntimeException e) {
            failLookup(id, keys.size(), start, e);
        }
        return id;
    }

    /** An internal failure still completes the task: with an all-zero bitmap of the submitted size. */
    protected final void failLookup(long taskId, int size, long submitNanos, RuntimeException cause) {
        LOG.log(System.Logger.Level.WARNING, describe() + ": lookup task " + taskId + " failed: " + cause.getMessage());
        completeLookup(taskId, new Bitmap(size), submitNanos);
    }

    protected final void failLoad(long taskId, int size, long submitNanos, RuntimeException cause) {
        LOG.log(System.Logger.Level.WARNING, describe() + ": load task " + taskId + " failed: " + cause.getMessage());
        completeLoad(taskId, new Bitmap(size), submitNanos);
    }

    /** The keys whose bits are set. */
    private static List<ObjectKey> hitsOf(Bitmap hits, List<ObjectKey> keys) {
        List<ObjectKey> out = new ArrayList<>(hits.cardinality());
        for (int i : hits.indices()) {
            out.add(keys.get(i));
        }
        return out;
    }

    /** Tasks, misses/failures, bytes and a latency histogram of one operation. */
    static final class OpStats {
        private final LatencyHistogram latencyNanos = new LatencyHistogram();
        private final LongAdder tasks = new LongAdder();
        private final LongAdder misses = new LongAdder();
        private final LongAdder bytes = new LongAdder();

        void record(long submitNanos, long missed, long byteCount) {
            latencyNanos.record(Math.min(TimeUnitHolder.HOUR, Math.max(0, System.nanoTime() - submitNanos)));
            tasks.increment();
            misses.add(missed);
            bytes.add(byteCount);
        }

        Map<String, Object> snapshot(String missesName) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("tasks", tasks.sum());
            m.put(missesName, misses.sum());
            if (bytes.sum() > 0) {
                m.put("bytes", bytes.sum());
            }
            m.put("p50_us", latencyNanos.valueAtPercentile(50) / 1000.0);
            m.put("p99_us", latencyNanos.valueAtPercentile(99) / 1000.0);
            m.put("p999_us", latencyNanos.valueAtPercentile(99.9) / 1000.0);
            m.put("max_us", latencyNanos.max() / 1000.0);
            return m;
        }
    }

    private static final class TimeUnitHolder {
        static final long HOUR = 3_600_000_000_000L;
    }

    /** Deletes through {@link #deleteReporting}, which every adapter here answers key by key. */
    @Override
    public final void delete(List<ObjectKey> keys, boolean force) {
        deleteReporting(keys, force);
    }

    @Override
    public abstract List<L2DeleteResult> deleteReporting(List<ObjectKey> keys, boolean force);

    @Override
    public final Map<Long, L2StoreResult> popCompletedStoreTasks() {
        checkOpen();
        return results.popStores();
    }

    @Override
    public final Bitmap queryLookupAndLockResult(long taskId) {
        checkOpen();
        return results.takeLookup(taskId);
    }

    @Override
    public final Bitmap queryLoadResult(long taskId) {
        checkOpen();
        return results.takeLoad(taskId);
    }

    // ---- listeners ----

    @Override
    public final void registerListener(L2AdapterListener listener) {
        checkOpen();
        if (listener == null) {
            throw new IllegalArgumentException("listener is null");
        }
        listeners.add(listener);
        Map<ObjectKey, Long> held = heldKeys();
        if (!held.isEmpty()) {
            List<ObjectKey> keys = new ArrayList<>(held.keySet());
            List<Long> sizes = new ArrayList<>(held.values());
            call(listener, l -> l.onKeysStored(keys, sizes));
        }
    }

    private void call(L2AdapterListener l, Consumer<L2AdapterListener> hook) {
        try {
            hook.accept(l);
        } catch (Throwable t) {
            listenerFailures.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "an L2 listener of " + describe() + " threw; ignored", t);
        }
    }

    protected final void notifyStored(List<ObjectKey> keys, List<Long> sizes) {
        if (!keys.isEmpty()) {
            for (L2AdapterListener l : listeners) {
                call(l, x -> x.onKeysStored(keys, sizes));
            }
        }
    }

    /** Tells the listeners of a load's {@code hits} among {@code keys}; with none, builds no list of them. */
    protected final void notifyAccessed(Bitmap hits, List<ObjectKey> keys) {
        if (listeners.isEmpty() || hits.cardinality() == 0) {
            return;
        }
        List<ObjectKey> accessed = hitsOf(hits, keys);
        for (L2AdapterListener l : listeners) {
            call(l, x -> x.onKeysAccessed(accessed));
        }
    }

    protected final void notifyDeleted(List<ObjectKey> keys) {
        if (!keys.isEmpty()) {
            for (L2AdapterListener l : listeners) {
                call(l, x -> x.onKeysDeleted(keys));
            }
        }
    }

    // ---- identity ----

    @Override
    public final void setBackendIdentity(String name, boolean shared) {
        checkOpen();
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("backend name " + (name == null ? "null" : "\"\" is empty") + " for "
                    + describe() + ": give the adapter's registered type name, e.g. \"raw_block\"");
        }
        identity = new BackendIdentity(name, shared);
    }

    // ---- usage ----

    protected final void charge(String cacheSalt, long bytes) {
        bytesBySalt.computeIfAbsent(cacheSalt, s -> new AtomicLong()).addAndGet(bytes);
    }

    @Override
    public final AdapterUsage usage() {
        checkOpen();
        Map<String, Long> by = new HashMap<>();
        long total = 0;
        for (Map.Entry<String, AtomicLong> e : bytesBySalt.entrySet()) {
            long v = e.getValue().get();
            if (v > 0) {
                by.put(e.getKey(), v);
                total += v;
            }
        }
        return new AdapterUsage(total, capacityBytes(), by);
    }

    @Override
    public final Map<String, Object> reportStatus() {
        checkOpen();
        Map<String, Object> s = new LinkedHashMap<>(backendStatus());
        s.putIfAbsent("is_healthy", true);
        BackendIdentity id = identity;
        s.put("backend", id.name());
        s.put("backend_shared", id.shared());
        results.putPending(s);
        s.put("listeners", listeners.size());
        s.put("listener_failures", listenerFailures.get());
        s.put("store", storeStats.snapshot("failed_tasks"));
        s.put("lookup", lookupStats.snapshot("misses"));
        s.put("load", loadStats.snapshot("misses"));
        return s;
    }

    @Override
    public final void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            closeBackend();
        } finally {
            storeFd.close();
            lookupFd.close();
            loadFd.close();
        }
    }

    @Override
    public String toString() {
        return describe();
    }
}
