package io.fdpblock.l2;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * LMCache's asynchronous L2 adapter contract (docs/contract.md section 2). Every method is thread-safe and
 * non-blocking. Results are recorded before the matching eventfd is signalled; signals coalesce, so a
 * consumer reads the fd once per wake-up and then drains every result.
 */
public interface L2Adapter extends AutoCloseable {
    /** Eventfd signalled when store tasks complete; distinct from every other fd in the process. */
    int storeEventFd();

    int lookupAndLockEventFd();

    int loadEventFd();

    /**
     * Stores {@code objects[i]} under {@code keys[i]}; all-or-nothing at task level.
     *
     * @return a task id unique within this adapter
     * @throws IllegalArgumentException for empty or unequal lists
     * @throws IllegalStateException after close
     */
    long submitStoreTask(List<ObjectKey> keys, List<MemoryObj> objects);

    /** Every store task completed since the last call, each exactly once. */
    Map<Long, L2StoreResult> popCompletedStoreTasks();

    /** Finds which keys exist and locks each hit (refcount +1) against deletion until unlocked. */
    long submitLookupAndLockTask(List<ObjectKey> keys);

    /** @return the hit bitmap once; null while pending, for unknown ids, and after it was returned */
    Bitmap queryLookupAndLockResult(long taskId);

    /** Refcount -1 per key; unknown keys and underflow are no-ops. Fire-and-forget. */
    void submitUnlock(List<ObjectKey> keys);

    /**
     * Loads each found key into its object; a key that is not there leaves its buffer untouched. An
     * adapter that reads straight into the buffer may report a key whose bytes fail their check as a
     * miss after writing into it (the raw-block adapter does: zero-copy loads).
     */
    long submitLoadTask(List<ObjectKey> keys, List<MemoryObj> objects);

    Bitmap queryLoadResult(long taskId);

    /** Removes keys; locked keys are kept. Listeners hear only of keys really removed. */
    default void delete(List<ObjectKey> keys) {
        delete(keys, false);
    }

    /**
     * Removes keys; a locked key is kept unless {@code force}. Listeners hear only of keys really
     * removed.
     */
    void delete(List<ObjectKey> keys, boolean force);

    /**
     * {@link #delete(List, boolean)}, also saying per key what it did, so that a caller (an eviction
     * policy) knows what it freed without inferring it from its listener. Not in LMCache's contract: the
     * default deletes and answers {@link L2DeleteResult#UNKNOWN} for every key.
     *
     * @return one result per key, in order
     */
    default List<L2DeleteResult> deleteReporting(List<ObjectKey> keys, boolean force) {
        delete(keys, force);
        return Collections.nCopies(keys == null ? 0 : keys.size(), L2DeleteResult.UNKNOWN);
    }

    /**
     * Tells the adapter that stores and loads will use buffers inside {@code region} (e.g. a caller's
     * buffer pool), so that it can register the region for zero-copy I/O (io_uring fixed buffers). The
     * caller keeps the region alive until {@link #unregisterMemory} or {@link #close()}.
     *
     * @return true when the adapter registered it; false when it has no use for it (the default)
     * @throws IOException when registering failed (I/O on the region still works, without the fast path)
     */
    default boolean registerMemory(MemorySegment region) throws IOException {
        return false;
    }

    /** Undoes {@link #registerMemory}; call it before freeing the region. No-op by default. */
    default void unregisterMemory(MemorySegment region) throws IOException {
    }

    /** Registers a listener and replays the keys already held to it as stored. */
    void registerListener(L2AdapterListener listener);

    /**
     * Names this adapter as the layer that built it knows it (LMCache's {@code set_backend_identity}):
     * {@code name} is its registered type (e.g. {@code "raw_block"}), {@code shared} whether the storage
     * behind it is one pool that several instances use. LMCache's storage manager sets it right after it
     * builds an adapter and tags the adapter's cache events with it; {@link L2Adapters#create} sets it to
     * the JSON's type, not shared, and {@link #reportStatus()} reports it ({@code backend},
     * {@code backend_shared}). An adapter that wraps another forwards it to the one it wraps. May be set
     * again; the last identity counts.
     *
     * @throws IllegalArgumentException for a null or empty name (the identity is then unchanged)
     * @throws IllegalStateException after close
     */
    void setBackendIdentity(String name, boolean shared);

    AdapterUsage usage();

    /** A snapshot of state and counters; has {@code is_healthy}. */
    Map<String, Object> reportStatus();

    /** Waits for work in flight, persists what must be, closes the eventfds. Idempotent. */
    @Override
    void close();
}
