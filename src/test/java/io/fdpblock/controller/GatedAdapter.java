package io.fdpblock.controller;

import io.fdpblock.l2.AdapterUsage;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;
import io.fdpblock.l2.L2DeleteResult;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * An adapter around a real one that can fail submissions, swallow tasks (they never complete) or hold
 * them back (they reach the delegate only at {@link #releaseHeld()}), so tests can keep a request at a
 * step, make a step fail, or make this adapter the slow one. Swallowed and held tasks get ids the
 * delegate never hands out; their fds are the delegate's.
 */
final class GatedAdapter implements L2Adapter {
    final L2Adapter delegate;
    volatile boolean failStoreSubmit;
    volatile boolean stallStores;
    volatile boolean stallLookups;
    volatile boolean stallLoads;
    volatile boolean failLoadSubmit;
    /** close() closes the delegate, then throws (as a store whose final checkpoint failed does). */
    volatile boolean failClose;
    /** Loads of these keys are reported as misses (as if the payload failed its checksum). */
    final Set<ObjectKey> loadMisses = ConcurrentHashMap.newKeySet();
    private final Map<Long, List<ObjectKey>> loadKeys = new ConcurrentHashMap<>();
    /**
     * While set, listeners hear of deleted keys only at {@link #deliverDeletes()} (as a listener does that
     * hears late, or not at all).
     */
    volatile boolean holdDeletes;
    private final List<Runnable> heldDeletes = new CopyOnWriteArrayList<>();
    /** deleteReporting says nothing per key (as an adapter with only LMCache's delete). */
    volatile boolean hideDeleteResults;
    /** Runs at the start of every delete, before the delegate's (e.g. to stop a controller mid-round). */
    volatile Runnable beforeDelete;
    final AtomicLong swallowed = new AtomicLong();
    private final AtomicLong nextStalledId = new AtomicLong(Long.MAX_VALUE / 2);
    /** While set, lookups (loads) are held: submitted to the delegate only at {@link #releaseHeld()}. */
    volatile boolean holdLookups;
    volatile boolean holdLoads;
    /** Guards {@link #held} and {@link #heldIds}: a query waits for a release that is mapping its id. */
    private final Object holdLock = new Object();
    private final List<Runnable> held = new ArrayList<>();
    /** Held task id -> the delegate's id, once released. */
    private final Map<Long, Long> heldIds = new HashMap<>();

    GatedAdapter(L2Adapter delegate) {
        this.delegate = delegate;
    }

    /** Submits every held task to the delegate, in order, and stops holding. @return how many */
    int releaseHeld() {
        synchronized (holdLock) {
            holdLookups = false;
            holdLoads = false;
            held.forEach(Runnable::run);
            int n = held.size();
            held.clear();
            return n;
        }
    }

    /** Keeps {@code submit} for {@link #releaseHeld()}, under an id of its own. */
    private long hold(LongSupplier submit) {
        synchronized (holdLock) {
            long id = nextStalledId.getAndIncrement();
            held.add(() -> heldIds.put(id, submit.getAsLong()));
            return id;
        }
    }

    /** The delegate's id of a task (a held one's once released). */
    private long delegateId(long taskId) {
        synchronized (holdLock) {
            return heldIds.getOrDefault(taskId, taskId);
        }
    }

    private long swallow() {
        swallowed.incrementAndGet();
        return nextStalledId.getAndIncrement();
    }

    @Override
    public int storeEventFd() {
        return delegate.storeEventFd();
    }

    @Override
    public int lookupAndLockEventFd() {
        return delegate.lookupAndLockEventFd();
    }

    @Override
    public int loadEventFd() {
        return delegate.loadEventFd();
    }

    @Override
    public long submitStoreTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        if (failStoreSubmit) {
            throw new IllegalStateException("injected store submission failure");
        }
        return stallStores ? swallow() : delegate.submitStoreTask(keys, objects);
    }

    @Override
    public Map<Long, L2StoreResult> popCompletedStoreTasks() {
        return delegate.popCompletedStoreTasks();
    }

    @Override
    public long submitLookupAndLockTask(List<ObjectKey> keys) {
        if (holdLookups) {
            return hold(() -> delegate.submitLookupAndLockTask(keys));
        }
        return stallLookups ? swallow() : delegate.submitLookupAndLockTask(keys);
    }

    @Override
    public Bitmap queryLookupAndLockResult(long taskId) {
        return delegate.queryLookupAndLockResult(delegateId(taskId));
    }

    @Override
    public void submitUnlock(List<ObjectKey> keys) {
        delegate.submitUnlock(keys);
    }

    @Override
    public long submitLoadTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        if (failLoadSubmit) {
            throw new IllegalStateException("injected load submission failure");
        }
        if (stallLoads) {
            return swallow();
        }
        if (holdLoads) {
            return hold(() -> submitLoadToDelegate(keys, objects));
        }
        return submitLoadToDelegate(keys, objects);
    }

    private long submitLoadToDelegate(List<ObjectKey> keys, List<MemoryObj> objects) {
        long id = delegate.submitLoadTask(keys, objects);
        loadKeys.put(id, List.copyOf(keys));
        return id;
    }

    @Override
    public Bitmap queryLoadResult(long taskId) {
        long id = delegateId(taskId);
        Bitmap b = delegate.queryLoadResult(id);
        List<ObjectKey> keys = loadKeys.get(id);
        if (b == null || keys == null) {
            return b;
        }
        loadKeys.remove(id);
        for (int i = 0; i < keys.size(); i++) {
            if (loadMisses.contains(keys.get(i))) {
                b.clear(i);
            }
        }
        return b;
    }

    @Override
    public void delete(List<ObjectKey> keys, boolean force) {
        Runnable hook = beforeDelete;
        if (hook != null) {
            hook.run();
        }
        delegate.delete(keys, force);
    }

    @Override
    public List<L2DeleteResult> deleteReporting(List<ObjectKey> keys, boolean force) {
        if (hideDeleteResults) {
            return L2Adapter.super.deleteReporting(keys, force); // delete(), then UNKNOWN for every key
        }
        Runnable hook = beforeDelete;
        if (hook != null) {
            hook.run();
        }
        return delegate.deleteReporting(keys, force);
    }

    @Override
    public void registerListener(L2AdapterListener listener) {
        delegate.registerListener(new L2AdapterListener() {
            @Override
            public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
                listener.onKeysStored(keys, sizes);
            }

            @Override
            public void onKeysAccessed(List<ObjectKey> keys) {
                listener.onKeysAccessed(keys);
            }

            @Override
            public void onKeysDeleted(List<ObjectKey> keys) {
                if (holdDeletes) {
                    heldDeletes.add(() -> listener.onKeysDeleted(keys));
                } else {
                    listener.onKeysDeleted(keys);
                }
            }
        });
    }

    /** Delivers the deletes held back by {@link #holdDeletes}, in order. */
    void deliverDeletes() {
        holdDeletes = false;
        for (Runnable r : heldDeletes) {
            r.run();
        }
        heldDeletes.clear();
    }

    @Override
    public void setBackendIdentity(String name, boolean shared) {
        delegate.setBackendIdentity(name, shared);
    }

    @Override
    public AdapterUsage usage() {
        return delegate.usage();
    }

    @Override
    public Map<String, Object> reportStatus() {
        return delegate.reportStatus();
    }

    @Override
    public void close() {
        delegate.close();
        if (failClose) {
            throw new UncheckedIOException(new IOException("injected: final checkpoint failed"));
        }
    }

    @Override
    public String toString() {
        return "gated " + delegate;
    }
}
