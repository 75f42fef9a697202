package io.fdpblock.l2;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The L2 contract in memory: for tests of the controllers and services above, and as a reference of
 * the contract. Optional capacity (a store that does not fit fails) and simulated bandwidth (stores
 * and loads complete after size / bandwidth, on a timer thread); without bandwidth everything
 * completes at submit. {@link #holdLoads()} makes it the slow adapter of a test deterministically: loads
 * wait, untouched, until {@link #releaseLoads()}.
 */
public final class MockL2Adapter extends AbstractL2Adapter {
    private record Stored(byte[] data, ObjectMeta meta) {}

    private final long capacityBytes;
    private final long bandwidthBytesPerSec;
    private final Map<ObjectKey, Stored> store = new HashMap<>();
    private final Map<ObjectKey, Integer> locks = new HashMap<>();
    private long usedBytes;
    private final ScheduledExecutorService timer;
    private volatile boolean broken;
    /** While true, loads wait in {@link #heldLoads} (both guarded by this). */
    private boolean holdingLoads;
    private final List<Runnable> heldLoads = new ArrayList<>();

    /**
     * @param capacityBytes 0 = unlimited
     * @param bandwidthBytesPerSec 0 = instant
     */
    public MockL2Adapter(long capacityBytes, long bandwidthBytesPerSec) throws IOException {
        if (capacityBytes < 0 || bandwidthBytesPerSec < 0) {
            throw new IllegalArgumentException("mock adapter: capacity_bytes " + capacityBytes
                    + " and bandwidth_bytes_per_sec " + bandwidthBytesPerSec + " must be >= 0");
        }
        this.capacityBytes = capacityBytes;
        this.bandwidthBytesPerSec = bandwidthBytesPerSec;
        this.timer = bandwidthBytesPerSec > 0
                ? Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("fdpblock-mock-l2")
                        .unstarted(r))
                : null;
    }

    public MockL2Adapter() throws IOException {
        this(0, 0);
    }

    /**
     * From now on loads are held back: a load is accepted at submit as usual (its buffers are the adapter's
     * from then on), but nothing is copied into them and nothing is answered until {@link #releaseLoads()}.
     * A test thus has a load in flight for as long as it needs, without timing.
     */
    public synchronized void holdLoads() {
        holdingLoads = true;
    }

    /**
     * Stops holding loads and carries out those held, in submission order (each after its simulated
     * transfer time when there is a bandwidth); on return, without a bandwidth, each has been answered.
     *
     * @return how many loads were held
     */
    public int releaseLoads() {
        List<Runnable> run;
        synchronized (this) {
            holdingLoads = false;
            run = List.copyOf(heldLoads);
            heldLoads.clear();
        }
        run.forEach(Runnable::run);
        return run.size();
    }

    /** Loads held back now ({@link #holdLoads()}). */
    public synchronized int heldLoads() {
        return heldLoads.size();
    }

    /** Test hook: every later lookup and load fails inside the adapter (and completes all-zero). */
    void breakInternals() {
        broken = true;
    }

    @Override
    protected String describe() {
        return "mock L2 adapter";
    }

    @Override
    protected long capacityBytes() {
        return capacityBytes;
    }

    private void later(long bytes, Runnable work) {
        if (timer == null) {
            work.run();
        } else {
            timer.schedule(work, bytes * 1_000_000_000L / bandwidthBytesPerSec, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public long submitStoreTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        checkKeysAndObjects(keys, objects);
        long id = newTaskId();
        long start = System.nanoTime();
        long total = 0;
        List<byte[]> copies = new ArrayList<>(keys.size());
        for (MemoryObj o : objects) { // copied at submit: the caller may reuse its buffers after completion only
            copies.add(o.segment().toArray(ValueLayout.JAVA_BYTE));
            total += o.size();
        }
        later(total, () -> {
            boolean ok = true;
            long bytes = 0;
            List<ObjectKey> stored = new ArrayList<>();
            List<Long> sizes = new ArrayList<>();
            synchronized (this) {
                for (int i = 0; i < keys.size(); i++) {
                    ObjectKey k = keys.get(i);
                    if (store.containsKey(k)) {
                        continue; // already held: the original stays
                    }
                    byte[] data = copies.get(i);
                    if (capacityBytes > 0 && usedBytes + data.length > capacityBytes) {
                        ok = false;
                        continue;
                    }
                    store.put(k, new Stored(data, objects.get(i).meta()));
                    usedBytes += data.length;
                    bytes += data.length;
                    stored.add(k);
                    sizes.add((long) data.length);
                }
            }
            for (int i = 0; i < stored.size(); i++) {
                charge(stored.get(i).cacheSalt(), sizes.get(i));
            }
            notifyStored(stored, sizes);
            completeStore(id, ok ? new L2StoreResult(true, bytes) : L2StoreResult.failed(), start);
        });
        return id;
    }

    @Override
    public long submitLookupAndLockTask(List<ObjectKey> keys) {
        return lookupAtSubmit(keys, k -> {
            if (broken) {
                throw new IllegalStateException("injected internal failure");
            }
            Bitmap hits = new Bitmap(k.size());
            synchronized (this) {
                for (int i = 0; i < k.size(); i++) {
                    if (store.containsKey(k.get(i))) {
                        hits.set(i);
                        locks.merge(k.get(i), 1, Integer::sum);
                    }
                }
            }
            return hits;
        });
    }

    @Override
    public void submitUnlock(List<ObjectKey> keys) {
        checkOpen();
        if (keys == null) {
            return;
        }
        synchronized (this) {
            for (ObjectKey k : keys) {
                locks.computeIfPresent(k, (x, n) -> n > 1 ? n - 1 : null);
            }
        }
    }

    /** The L2 lock count of a key (tests check lock invariants through it). */
    public synchronized int lockCount(ObjectKey key) {
        return locks.getOrDefault(key, 0);
    }

    @Override
    public long submitLoadTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        checkKeysAndObjects(keys, objects);
        long total = 0;
        synchronized (this) {
            for (int i = 0; i < keys.size(); i++) {
                Stored s = store.get(keys.get(i));
                if (s != null && objects.get(i).size() < s.data().length) {
                    throw new IllegalArgumentException("load " + keys.get(i) + ": buffer of " + objects.get(i).size()
                            + " bytes is smaller than the stored " + s.data().length + " bytes");
                }
                total += s == null ? 0 : s.data().length;
            }
        }
        long id = newTaskId();
        long start = System.nanoTime();
        long bytes = total;
        Runnable load = () -> later(bytes, () -> {
            Bitmap hits = new Bitmap(keys.size());
            try {
                if (broken) {
                    throw new IllegalStateException("injected internal failure");
                }
                synchronized (this) {
                    for (int i = 0; i < keys.size(); i++) {
                        Stored s = store.get(keys.get(i));
                        if (s != null) {
                            MemorySegment.copy(s.data(), 0, objects.get(i).segment(), ValueLayout.JAVA_BYTE, 0,
                                    s.data().length);
                            hits.set(i);
                        }
                    }
                }
            } catch (RuntimeException e) {
                failLoad(id, keys.size(), start, e);
                return;
            }
            notifyAccessed(hits, keys);
            completeLoad(id, hits, start);
        });
        synchronized (this) {
            if (holdingLoads) {
                heldLoads.add(load);
                return id;
            }
        }
        load.run();
        return id;
    }

    @Override
    public List<L2DeleteResult> deleteReporting(List<ObjectKey> keys, boolean force) {
        checkOpen();
        if (keys == null) {
            return List.of();
        }
        List<ObjectKey> gone = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        List<L2DeleteResult> results = new ArrayList<>(keys.size());
        synchronized (this) {
            for (ObjectKey k : keys) {
                if (locks.getOrDefault(k, 0) > 0 && store.containsKey(k)) {
                    if (!force) {
                        results.add(L2DeleteResult.LOCKED);
                        continue;
                    }
                    locks.remove(k);
                }
                Stored s = store.remove(k);
                if (s != null) {
                    usedBytes -= s.data().length;
                    gone.add(k);
                    sizes.add((long) s.data().length);
                }
                results.add(s != null ? L2DeleteResult.REMOVED : L2DeleteResult.NOT_HELD);
            }
        }
        for (int i = 0; i < gone.size(); i++) {
            charge(gone.get(i).cacheSalt(), -sizes.get(i));
        }
        notifyDeleted(gone);
        return results;
    }

    @Override
    protected synchronized Map<ObjectKey, Long> heldKeys() {
        Map<ObjectKey, Long> out = new LinkedHashMap<>();
        store.forEach((k, s) -> out.put(k, (long) s.data().length));
        return out;
    }

    @Override
    protected synchronized Map<String, Object> backendStatus() {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("type", "mock");
        s.put("keys", store.size());
        s.put("used_bytes", usedBytes);
        s.put("capacity_bytes", capacityBytes);
        s.put("bandwidth_bytes_per_sec", bandwidthBytesPerSec);
        s.put("held_loads", heldLoads.size());
        return s;
    }

    @Override
    protected void closeBackend() {
        releaseLoads(); // close waits for the work in flight: held loads are carried out, not dropped
        if (timer != null) {
            timer.shutdown(); // lets the scheduled completions run
            try {
                timer.awaitTermination(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Registered for {@code "type": "mock"}: optional {@code capacity_bytes}, {@code bandwidth_bytes_per_sec}. */
    public static final class Factory implements L2AdapterFactory {
        @Override
        public String type() {
            return "mock";
        }

        @Override
        public L2Adapter create(JsonNode config) throws IOException {
            long capacity = 0;
            long bandwidth = 0;
            for (Iterator<Map.Entry<String, JsonNode>> it = config.properties().iterator(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                switch (e.getKey()) {
                    case "type" -> { }
                    case "capacity_bytes" -> capacity = nonNegative(e);
                    case "bandwidth_bytes_per_sec" -> bandwidth = nonNegative(e);
                    default -> throw new IllegalArgumentException("mock adapter: unknown key '" + e.getKey()
                            + "'; known keys: type, capacity_bytes, bandwidth_bytes_per_sec");
                }
            }
            return new MockL2Adapter(capacity, bandwidth);
        }

        private static long nonNegative(Map.Entry<String, JsonNode> e) {
            if (!e.getValue().isIntegralNumber() || e.getValue().asLong() < 0) {
                throw new IllegalArgumentException("mock adapter: " + e.getKey() + " = " + e.getValue()
                        + " must be an integer >= 0");
            }
            return e.getValue().asLong();
        }
    }
}
