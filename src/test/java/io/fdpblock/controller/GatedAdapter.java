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
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An adapter around a real one that can fail submissions or swallow tasks (they never complete), so
 * tests can hold a request at a step or make a step fail. Swallowed tasks get ids the delegate never
 * hands out; their fds are the delegate's.
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

    GatedAdapter(L2Adapter delegate) {
        this.delegate = delegate;
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
        return stallLookups ? swallow() : delegate.submitLookupAndLockTask(keys);
    }

    @Override
    public Bitmap queryLookupAndLockResult(long taskId) {
        return delegate.queryLookupAndLockResult(taskId);
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
        long id = delegate.submitLoadTask(keys, objects);
        loadKeys.put(id, List.copyOf(keys));
        return id;
    }

    @Override
    public Bitmap queryLoadResult(long taskId) {
        Bitmap b = delegate.queryLoadResult(taskId);
        List<ObjectKey> keys = loadKeys.get(taskId);
        if (b == null || keys == null) {
            return b;
        }
        loadKeys.remove(taskId);
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
