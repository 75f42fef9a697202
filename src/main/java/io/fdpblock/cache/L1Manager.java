package io.fdpblock.cache;

import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.linux.IoMemory;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.IntToLongFunction;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;

/**
 * The L1 tier: a pool of aligned off-heap chunks (one region allocated up front, 4096-aligned, sliced
 * into fixed-size chunks) and, per key, the object stored in one chunk with its state and locks.
 *
 * <p>Per key: a <em>write lock</em> (the object is reserved for writing: {@link #reserveWrite} until
 * {@link #finishWrite}), a <em>read-lock count</em> (taken by {@link #reserveRead}, released by
 * {@link #finishRead}), and a <em>temporary</em> flag. Only ready objects (written, not write-locked)
 * can be read-locked. A key is either absent, write-locked, or ready.
 *
 * <p><b>Eviction decision.</b> When the pool is exhausted, {@code reserveWrite} evicts a ready, unlocked
 * object that is <em>evictable</em>, the one that became so first (a read lock taken and released
 * moves it to the back): <em>temporary</em> objects (prefetched copies of what L2 holds) are evictable
 * from the start; a non-temporary object only once {@link #allowEviction} says its stores to L2 are
 * over (the store controller calls it when every target adapter has answered; until then it may be
 * the only copy). When nothing can be evicted the reservation of that key fails (a {@code null} in
 * the result), the pool is unchanged, and the refusal is counted ({@link #refusedStores()},
 * {@link #refusedPrefetches()}) and logged once, so that a full L1 is never silent.
 *
 * <p><b>Listeners</b> run inside L1's lock when a non-temporary object becomes ready (finishWrite):
 * they must only queue and signal, never call back into L1 (docs/contract.md invariant 6).
 *
 * <p>All methods are thread-safe. {@link #region()} is what an io_uring-backed device registers
 * ({@link #registerWith}) so that stores and loads on L1 buffers use fixed-buffer I/O.
 */
public final class L1Manager implements AutoCloseable {
    /** Every chunk starts at a multiple of this (O_DIRECT and NVMe passthru need it). */
    public static final int ALIGNMENT = 4096;

    private static final System.Logger LOG = System.getLogger("io.fdpblock.cache");

    /** Hears of non-temporary objects that became ready. Runs inside L1's lock: queue and signal only. */
    @FunctionalInterface
    public interface Listener {
        void onKeysWriteFinished(List<ObjectKey> keys);
    }

    private static final class Entry {
        final ObjectKey key;
        final int chunk;
        final MemoryObj obj;
        final boolean temporary;
        /** Non-temporary and done with L2 ({@link #allowEviction}): evictable like a temporary object. */
        boolean released;
        boolean writing = true;
        int readers;

        Entry(ObjectKey key, int chunk, MemoryObj obj, boolean temporary) {
            this.key = key;
            this.chunk = chunk;
            this.obj = obj;
            this.temporary = temporary;
        }

        boolean evictable() {
            return (temporary || released) && !writing && readers == 0;
        }
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final Arena arena = Arena.ofShared();
    private final MemorySegment region;
    private final MemorySegment[] chunks;
    private final int chunkBytes;
    private final long stride;
    private final int[] free;
    private int freeCount;
    private final LinkedHashMap<ObjectKey, Entry> entries = new LinkedHashMap<>();
    /** Ready, unlocked, evictable keys, in the order they became evictable. */
    private final LinkedHashSet<ObjectKey> evictable = new LinkedHashSet<>();
    private final CopyOnWriteArrayList<Listener> listeners = new CopyOnWriteArrayList<>();
    private final List<L2Adapter> registeredWith = new ArrayList<>();
    private long evictions;
    private long refusedStores;
    private long refusedPrefetches;
    private boolean fullLogged;
    private boolean closed;

    /**
     * @param chunkBytes bytes per chunk (the largest object); each chunk starts 4096-aligned, so a
     *        multiple of 4096 wastes nothing and lets O_DIRECT devices read and write it in place
     * @param chunkCount how many chunks (objects) L1 holds
     */
    public L1Manager(int chunkBytes, int chunkCount) {
        if (chunkBytes <= 0) {
            throw new IllegalArgumentException("L1 chunk size " + chunkBytes + " must be > 0");
        }
        if (chunkCount <= 0) {
            throw new IllegalArgumentException("L1 chunk count " + chunkCount + " must be > 0");
        }
        this.chunkBytes = chunkBytes;
        this.stride = (chunkBytes + (long) ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        this.region = IoMemory.allocate(arena, stride * chunkCount, ALIGNMENT); // huge pages: few DMA segments per chunk
        this.chunks = new MemorySegment[chunkCount];
        this.free = new int[chunkCount];
        for (int i = 0; i < chunkCount; i++) {
            chunks[i] = region.asSlice(i * stride, chunkBytes);
            free[i] = chunkCount - 1 - i;
        }
        this.freeCount = chunkCount;
    }

    // ------------------------------------------------------------------ pool

    /** The whole pool (what a device registers for fixed-buffer I/O). */
    public MemorySegment region() {
        return region;
    }

    public int chunkBytes() {
        return chunkBytes;
    }

    /** How many chunks the pool has. */
    public int capacity() {
        return chunks.length;
    }

    public int freeChunks() {
        lock.lock();
        try {
            return freeCount;
        } finally {
            lock.unlock();
        }
    }

    /** How many evictable objects were evicted to make room. */
    public long evictions() {
        return count(() -> evictions);
    }

    /**
     * Non-temporary reservations (stores) refused because the pool was full and nothing in it could be
     * evicted (keys already in L1 are not counted: they need no room).
     */
    public long refusedStores() {
        return count(() -> refusedStores);
    }

    /** Temporary reservations (prefetches) refused because the pool was full and nothing could be evicted. */
    public long refusedPrefetches() {
        return count(() -> refusedPrefetches);
    }

    private long count(LongSupplier counter) {
        lock.lock();
        try {
            return counter.getAsLong();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Offers the pool to {@code adapter} ({@link L2Adapter#registerMemory}: a raw-block adapter on
     * io_uring then reads and writes L1 buffers with fixed-buffer I/O). {@link #unregisterAll()} undoes it.
     *
     * @return false when the adapter has no use for it
     */
    public boolean registerWith(L2Adapter adapter) throws IOException {
        lock.lock();
        try {
            checkOpen();
            if (registeredWith.contains(adapter)) {
                return true;
            }
        } finally {
            lock.unlock();
        }
        boolean ok = adapter.registerMemory(region);
        if (ok) {
            lock.lock();
            try {
                registeredWith.add(adapter);
            } finally {
                lock.unlock();
            }
        }
        return ok;
    }

    /** Undoes every {@link #registerWith}; adapters already closed are skipped. Idempotent. */
    public void unregisterAll() {
        List<L2Adapter> adapters;
        lock.lock();
        try {
            adapters = new ArrayList<>(registeredWith);
            registeredWith.clear();
        } finally {
            lock.unlock();
        }
        for (L2Adapter a : adapters) {
            try {
                a.unregisterMemory(region);
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "L1 pool not unregistered from " + a + ": " + e.getMessage());
            }
        }
    }

    // ------------------------------------------------------------------ listeners

    public void addListener(Listener listener) {
        if (listener == null) {
            throw new IllegalArgumentException("listener is null");
        }
        listeners.add(listener);
    }

    public void removeListener(Listener listener) {
        listeners.remove(listener);
    }

    /** For tests: whether the calling thread holds L1's lock (listeners run with it held). */
    boolean lockHeldByCurrentThread() {
        return lock.isHeldByCurrentThread();
    }

    // ------------------------------------------------------------------ write

    /**
     * Reserves one chunk per key and write-locks it, every object of {@code layout}'s size and metadata.
     *
     * @return per key the object to fill, or {@code null} when that key could not be reserved: it is
     *         already in L1 (any state; mode "new"), it repeats an earlier key of the call, or no chunk
     *         is free even after evicting temporary objects. Other keys are unaffected.
     * @throws IllegalArgumentException when the layout's objects do not fit in a chunk
     */
    public List<MemoryObj> reserveWrite(List<ObjectKey> keys, KvLayout layout, boolean temporary) {
        if (layout == null) {
            throw new IllegalArgumentException("layout is null");
        }
        checkSize(layout.objectBytes());
        return reserve(keys, i -> layout.objectBytes(), layout, temporary);
    }

    /**
     * Like {@link #reserveWrite(List, KvLayout, boolean)} with a size per key and no metadata.
     *
     * @throws IllegalArgumentException when the lists differ in length or a size is not in 1..chunkBytes
     */
    public List<MemoryObj> reserveWrite(List<ObjectKey> keys, List<Long> sizes, boolean temporary) {
        if (sizes == null || keys == null || sizes.size() != keys.size()) {
            throw new IllegalArgumentException("keys (" + (keys == null ? "null" : keys.size()) + ") and sizes ("
                    + (sizes == null ? "null" : sizes.size()) + ") must be lists of equal length");
        }
        for (Long s : sizes) {
            checkSize(s == null ? 0 : s);
        }
        return reserve(keys, sizes::get, null, temporary);
    }

    private void checkSize(long size) {
        if (size <= 0 || size > chunkBytes) {
            throw new IllegalArgumentException("L1 object of " + size + " bytes does not fit a chunk of "
                    + chunkBytes + " bytes");
        }
    }

    private List<MemoryObj> reserve(List<ObjectKey> keys, IntToLongFunction size,
            KvLayout layout, boolean temporary) {
        checkKeys(keys);
        List<MemoryObj> out = new ArrayList<>(keys.size());
        int refused = 0;
        boolean logFull = false;
        lock.lock();
        try {
            checkOpen();
            for (int i = 0; i < keys.size(); i++) {
                ObjectKey k = keys.get(i);
                if (entries.containsKey(k)) {
                    out.add(null);
                    continue;
                }
                if (freeCount == 0 && !evictOne()) {
                    out.add(null);
                    refused++;
                    continue;
                }
                int c = free[--freeCount];
                MemorySegment seg = chunks[c].asSlice(0, size.applyAsLong(i));
                MemoryObj obj = layout == null ? MemoryObj.of(seg) : layout.wrap(seg);
                entries.put(k, new Entry(k, c, obj, temporary));
                out.add(obj);
            }
            if (refused > 0) {
                if (temporary) {
                    refusedPrefetches += refused;
                } else {
                    refusedStores += refused;
                }
                logFull = !fullLogged;
                fullLogged = true;
            }
        } finally {
            lock.unlock();
        }
        if (logFull) {
            LOG.log(System.Logger.Level.WARNING, "L1 is full (" + chunks.length + " chunks of " + chunkBytes
                    + " bytes) and nothing in it can be evicted (every object is locked, being written, or not yet"
                    + " stored to every L2 target): " + refused + " " + (temporary ? "prefetch" : "store")
                    + " reservations refused; later refusals are counted (refusedStores, refusedPrefetches) but not"
                    + " logged. Give L1 more chunks, or release read locks sooner");
        }
        return out;
    }

    /** Evicts the ready, unlocked, evictable object that became evictable first. Lock held. */
    private boolean evictOne() {
        Iterator<ObjectKey> it = evictable.iterator();
        if (!it.hasNext()) {
            return false;
        }
        ObjectKey k = it.next();
        it.remove();
        Entry e = entries.remove(k);
        free[freeCount++] = e.chunk;
        evictions++;
        return true;
    }

    private void track(Entry e) {
        if (e.evictable()) {
            evictable.add(e.key);
        } else {
            evictable.remove(e.key);
        }
    }

    /**
     * Lets L1 evict these non-temporary objects when it needs room (once they are unlocked): their
     * stores to L2 are over. Absent and temporary keys are skipped.
     *
     * @return how many keys became evictable
     */
    public int allowEviction(List<ObjectKey> keys) {
        return changeEach(keys, e -> {
            if (e.temporary || e.released) {
                return false;
            }
            e.released = true;
            return true;
        });
    }

    /** Whether {@code key} is in L1 and may be evicted once unlocked (temporary, or allowed). */
    public boolean isEvictionAllowed(ObjectKey key) {
        return about(key, e -> e != null && (e.temporary || e.released));
    }

    /**
     * Ends the writes of {@code keys}: they become ready. The non-temporary ones are announced to the
     * listeners (inside L1's lock). Keys that are not write-locked are skipped.
     *
     * @return how many keys became ready
     */
    public int finishWrite(List<ObjectKey> keys) {
        int n = 0;
        for (MemoryObj o : finishWrite(keys, false)) {
            n += o == null ? 0 : 1;
        }
        return n;
    }

    /**
     * Ends the writes of {@code keys} and read-locks them in one step, so that nothing can evict them
     * in between (docs/contract.md invariant 8). Non-temporary keys are announced like in
     * {@link #finishWrite}. Keys that are not write-locked are skipped ({@code null}).
     *
     * @return per key its object, now read-locked, or null
     */
    public List<MemoryObj> finishWriteAndReserveRead(List<ObjectKey> keys) {
        return finishWrite(keys, true);
    }

    private List<MemoryObj> finishWrite(List<ObjectKey> keys, boolean andRead) {
        if (keys == null || keys.isEmpty()) {
            return List.of();
        }
        List<MemoryObj> out = new ArrayList<>(keys.size());
        List<ObjectKey> announce = new ArrayList<>(keys.size());
        lock.lock();
        try {
            for (ObjectKey k : keys) {
                Entry e = closed ? null : entries.get(k);
                if (e == null || !e.writing) {
                    out.add(null);
                    continue;
                }
                e.writing = false;
                if (andRead) {
                    e.readers++;
                }
                track(e);
                out.add(e.obj);
                if (!e.temporary) {
                    announce.add(k);
                }
            }
            if (!announce.isEmpty()) {
                List<ObjectKey> view = Collections.unmodifiableList(announce);
                for (Listener l : listeners) {
                    try {
                        l.onKeysWriteFinished(view);
                    } catch (RuntimeException ex) {
                        LOG.log(System.Logger.Level.WARNING, "an L1 listener threw; ignored", ex);
                    }
                }
            }
        } finally {
            lock.unlock();
        }
        return out;
    }

    // ------------------------------------------------------------------ read

    /**
     * Read-locks the ready objects among {@code keys} (+1 per key per call).
     *
     * @return per key its object, or null when the key is absent or still write-locked
     */
    public List<MemoryObj> reserveRead(List<ObjectKey> keys) {
        return reserveRead(keys, false);
    }

    /**
     * Like {@link #reserveRead(List)}; with {@code nonTemporaryOnly} temporary objects are skipped too
     * (the store controller reads only what L2 may not hold yet).
     */
    public List<MemoryObj> reserveRead(List<ObjectKey> keys, boolean nonTemporaryOnly) {
        checkKeys(keys);
        return objectsOf(keys, (k, e) -> {
            if (e == null || e.writing || (nonTemporaryOnly && e.temporary)) {
                return null;
            }
            e.readers++;
            track(e);
            return e.obj;
        });
    }

    /**
     * Counts the contiguous prefix of {@code keys} that is ready in L1 and read-locks exactly those
     * keys, atomically (what a prefetch does for its L1 hits, so they cannot be evicted before use).
     */
    public int reservePrefixRead(List<ObjectKey> keys) {
        checkKeys(keys);
        lock.lock();
        try {
            checkOpen();
            int n = prefixHitsLocked(keys);
            for (int i = 0; i < n; i++) {
                Entry e = entries.get(keys.get(i));
                e.readers++;
                track(e);
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    /** Releases one read lock per key (per occurrence); absent keys and underflow are no-ops. */
    public int finishRead(List<ObjectKey> keys) {
        return changeEach(keys, e -> {
            if (e.readers == 0) {
                return false;
            }
            e.readers--;
            return true;
        });
    }

    /**
     * Under the lock, offers the entry of each present key (per occurrence) to {@code change}; an entry
     * it changed is tracked again for eviction. Closed: nothing happens.
     *
     * @return how many entries were changed
     */
    private int changeEach(List<ObjectKey> keys, Predicate<Entry> change) {
        if (keys == null || keys.isEmpty()) {
            return 0;
        }
        int n = 0;
        lock.lock();
        try {
            if (closed) {
                return 0;
            }
            for (ObjectKey k : keys) {
                Entry e = entries.get(k);
                if (e != null && change.test(e)) {
                    track(e);
                    n++;
                }
            }
        } finally {
            lock.unlock();
        }
        return n;
    }

    /**
     * The objects of keys the caller holds read locks on (no lock is taken or released).
     *
     * @throws IllegalStateException naming the first key that is not read-locked
     */
    public List<MemoryObj> readLockedObjects(List<ObjectKey> keys) {
        return objectsOf(keys, (k, e) -> {
            if (e == null || e.readers == 0) {
                throw new IllegalStateException(k + " is not read-locked in L1" + (e == null ? " (not in L1)" : ""));
            }
            return e.obj;
        });
    }

    /** Under the lock, when open: per key what {@code answer} makes of it and its entry (null: absent). */
    private List<MemoryObj> objectsOf(List<ObjectKey> keys, BiFunction<ObjectKey, Entry, MemoryObj> answer) {
        List<MemoryObj> out = new ArrayList<>(keys.size());
        lock.lock();
        try {
            checkOpen();
            for (ObjectKey k : keys) {
                out.add(answer.apply(k, entries.get(k)));
            }
        } finally {
            lock.unlock();
        }
        return out;
    }

    // ------------------------------------------------------------------ delete, queries

    /**
     * Removes keys and returns their chunks to the pool. Keys that are read- or write-locked are
     * refused (kept).
     *
     * @return the keys really removed
     */
    public List<ObjectKey> delete(List<ObjectKey> keys) {
        if (keys == null || keys.isEmpty()) {
            return List.of();
        }
        List<ObjectKey> gone = new ArrayList<>();
        lock.lock();
        try {
            if (closed) {
                return List.of();
            }
            for (ObjectKey k : keys) {
                Entry e = entries.get(k);
                if (e == null || e.writing || e.readers > 0) {
                    continue;
                }
                entries.remove(k);
                evictable.remove(k);
                free[freeCount++] = e.chunk;
                gone.add(k);
            }
        } finally {
            lock.unlock();
        }
        return gone;
    }

    /** How many leading keys are ready in L1 (the usable prefix); nothing is locked. */
    public int prefixHits(List<ObjectKey> keys) {
        lock.lock();
        try {
            return prefixHitsLocked(keys);
        } finally {
            lock.unlock();
        }
    }

    private int prefixHitsLocked(List<ObjectKey> keys) {
        int n = 0;
        for (ObjectKey k : keys) {
            Entry e = entries.get(k);
            if (e == null || e.writing) {
                break;
            }
            n++;
        }
        return n;
    }

    public boolean contains(ObjectKey key) {
        return about(key, e -> e != null);
    }

    /** Present and not write-locked. */
    public boolean isReady(ObjectKey key) {
        return about(key, e -> e != null && !e.writing);
    }

    public boolean isWriteLocked(ObjectKey key) {
        return about(key, e -> e != null && e.writing);
    }

    public int readLockCount(ObjectKey key) {
        return about(key, e -> e == null ? 0 : e.readers);
    }

    public boolean isReadLocked(ObjectKey key) {
        return readLockCount(key) > 0;
    }

    public boolean isTemporary(ObjectKey key) {
        return about(key, e -> e != null && e.temporary);
    }

    /** The size of {@code key}'s object in bytes (in any state); 0 when it is absent. */
    public long objectBytes(ObjectKey key) {
        return about(key, e -> e == null ? 0L : e.obj.size());
    }

    /** How many keys L1 holds (any state). */
    public int size() {
        return sumOver(e -> 1);
    }

    /** The sum of every key's read-lock count. */
    public int totalReadLocks() {
        return sumOver(e -> e.readers);
    }

    /** How many keys are write-locked. */
    public int writeLockedKeys() {
        return sumOver(e -> e.writing ? 1 : 0);
    }

    /** A question about one key's entry (null when absent), answered under the lock. */
    private <T> T about(ObjectKey key, Function<Entry, T> question) {
        lock.lock();
        try {
            return question.apply(entries.get(key));
        } finally {
            lock.unlock();
        }
    }

    private int sumOver(ToIntFunction<Entry> count) {
        lock.lock();
        try {
            int n = 0;
            for (Entry e : entries.values()) {
                n += count.applyAsInt(e);
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ lifecycle

    private static void checkKeys(List<ObjectKey> keys) {
        if (keys == null) {
            throw new IllegalArgumentException("keys is null");
        }
        for (int i = 0; i < keys.size(); i++) {
            if (keys.get(i) == null) {
                throw new IllegalArgumentException("keys[" + i + "] is null");
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("L1Manager is closed");
        }
    }

    /**
     * Unregisters the pool from every device, then frees it. Idempotent. Whoever may still do I/O on
     * L1 buffers (adapters) must be closed first; after close, release calls are no-ops and reserve
     * calls fail.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            entries.clear();
            evictable.clear();
        } finally {
            lock.unlock();
        }
        listeners.clear();
        unregisterAll();
        arena.close();
    }

    @Override
    public String toString() {
        lock.lock();
        try {
            return "L1Manager[" + chunks.length + " x " + chunkBytes + " B, " + entries.size() + " keys, " + freeCount
                    + " free" + (closed ? ", closed]" : "]");
        } finally {
            lock.unlock();
        }
    }
}
