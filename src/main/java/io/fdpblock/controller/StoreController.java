package io.fdpblock.controller;

import io.fdpblock.cache.L1Manager;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.linux.EventFd;
import io.fdpblock.linux.Poller;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Copies what is written to L1 into the L2 adapters, on one background thread (docs/contract.md section 3).
 *
 * <p>L1's listener (inside L1's lock) only queues the keys and signals this controller's eventfd. The
 * thread polls {that fd, every adapter's store fd} (500 ms timeout); new keys are grouped by
 * (model name, kv rank), the {@link StorePolicy} picks the target adapters, and per target the keys are
 * read-locked in L1 ({@link L1Manager#reserveRead}) and submitted; a submission that throws releases
 * its read locks. On a store fd the thread drains it and pops the completed tasks of every adapter
 * (tracked by (adapter index, task id)): read locks are released, and on success the policy's L1
 * deletions are applied; a failed store is logged (best effort, no retry). Temporary L1 objects (the
 * prefetched copies) are never stored. {@link #stop()} releases every read lock still held.
 *
 * <p>Once every store task that carries a key has answered (or none could be submitted: no adapters,
 * no target, the policy failed), the key is handed to L1's eviction ({@link L1Manager#allowEviction}):
 * from then on L1 may evict it when it needs room, so that a store policy that keeps objects in L1
 * (the default) never fills L1 for good. A failed store releases its keys too: nothing retries it, so
 * keeping them pinned would only let a failing L2 fill L1; the failure is counted and logged.
 */
public final class StoreController implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.controller");
    static final Duration POLL_TIMEOUT = Duration.ofMillis(500);

    /** What the store thread just did; package-private test hook, called on the store thread. */
    interface StepHook {
        /** A store task was submitted; its keys are read-locked in L1. */
        default void onSubmitted(int adapterIndex, long taskId, List<ObjectKey> keys) {
        }

        /** A store task finished; its read locks are released and deletions applied. */
        default void onCompleted(int adapterIndex, long taskId, List<ObjectKey> keys, boolean success) {
        }
    }

    private record TaskKey(int adapter, long taskId) {}

    private record Group(String modelName, int kvRank) {}

    private final L1Manager l1;
    private final List<L2Adapter> adapters;
    private final List<AdapterDescriptor> descriptors;
    private final StorePolicy policy;
    private final EventFd wakeFd;
    private final ConcurrentLinkedQueue<ObjectKey> newKeys = new ConcurrentLinkedQueue<>();
    private final L1Manager.Listener listener = this::onKeysWriteFinished;
    /** Store thread only (and the stopping thread after the store thread ended). */
    private final Map<TaskKey, List<ObjectKey>> inFlight = new HashMap<>();
    /** Per key, the store tasks in flight that carry it (store thread only); at 0 L1 may evict it. */
    private final Map<ObjectKey, Integer> pendingStores = new HashMap<>();

    /** Guards the idle bookkeeping below; never held while calling into L1 or an adapter. */
    private final Object idle = new Object();
    private long unprocessedKeys;
    private int inFlightTasks;
    private long completedTasks;
    private long failedTasks;

    private final ControllerThread worker = new ControllerThread("store controller", "fdpblock-store-controller");
    private volatile StepHook hook;

    /**
     * Registers the store listener on {@code l1}; nothing is stored before {@link #start()}.
     *
     * @param adapters the L2 adapters, by index (not owned: never closed here)
     */
    public StoreController(L1Manager l1, List<L2Adapter> adapters, StorePolicy policy) throws IOException {
        if (l1 == null || adapters == null || policy == null) {
            throw new IllegalArgumentException("store controller needs an L1 manager, adapters and a policy");
        }
        this.l1 = l1;
        this.adapters = List.copyOf(adapters);
        this.descriptors = AdapterDescriptor.of(this.adapters);
        this.policy = policy;
        this.wakeFd = EventFd.create();
        l1.addListener(listener);
    }

    /** Package-private test hook (null to remove). */
    void setStepHook(StepHook hook) {
        this.hook = hook;
    }

    /** Starts the background thread. */
    public void start() {
        worker.start(this::run);
    }

    /** The L1 listener: runs inside L1's lock, so it only queues and signals. */
    private void onKeysWriteFinished(List<ObjectKey> keys) {
        if (worker.isStopped()) {
            return;
        }
        newKeys.addAll(keys);
        synchronized (idle) {
            unprocessedKeys += keys.size();
        }
        wakeFd.signal();
    }

    // ------------------------------------------------------------------ thread

    private void run() {
        try (Poller poller = new Poller(1 + adapters.size())) {
            poller.add(wakeFd.fd());
            for (L2Adapter a : adapters) {
                poller.add(a.storeEventFd());
            }
            while (worker.isRunning()) {
                int ready = poller.poll(POLL_TIMEOUT);
                if (!worker.isRunning()) {
                    break;
                }
                // on a timeout look anyway: cheap, and nothing can stall
                boolean storeSignalled = Fds.drainOrDisable(poller, 1,
                        i -> "store fd of " + descriptors.get(i - 1).name()) || ready == 0;
                if (poller.isReadable(0)) {
                    wakeFd.drain();
                }
                processNewKeys();
                if (storeSignalled) {
                    drainCompletions();
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            LOG.log(System.Logger.Level.ERROR, "store controller thread failed; in-flight stores are released", e);
        } finally {
            drainCompletions();
            releaseInFlight();
        }
    }

    private void processNewKeys() {
        List<ObjectKey> batch = new ArrayList<>();
        for (ObjectKey k; (k = newKeys.poll()) != null; ) {
            batch.add(k);
        }
        if (batch.isEmpty()) {
            return;
        }
        try {
            Map<Group, LinkedHashSet<ObjectKey>> groups = new LinkedHashMap<>();
            for (ObjectKey k : batch) {
                groups.computeIfAbsent(new Group(k.modelName(), k.kvRank()), g -> new LinkedHashSet<>()).add(k);
            }
            for (LinkedHashSet<ObjectKey> group : groups.values()) {
                if (adapters.isEmpty()) {
                    break;
                }
                List<ObjectKey> keys = List.copyOf(group);
                Map<Integer, List<ObjectKey>> targets;
                try {
                    targets = policy.selectStoreTargets(keys, descriptors);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "store policy failed on " + keys.size() + " keys; not stored", e);
                    continue;
                }
                if (targets == null) {
                    continue;
                }
                for (Map.Entry<Integer, List<ObjectKey>> t : targets.entrySet()) {
                    Integer idx = t.getKey();
                    if (idx == null || idx < 0 || idx >= adapters.size()) {
                        LOG.log(System.Logger.Level.WARNING, "store policy named adapter " + idx + " of "
                                + adapters.size() + "; ignored");
                        continue;
                    }
                    if (t.getValue() != null && !t.getValue().isEmpty()) {
                        try {
                            submit(idx, t.getValue());
                        } catch (RuntimeException e) { // e.g. L1 closed under the controller
                            LOG.log(System.Logger.Level.WARNING, "store of " + t.getValue().size() + " keys to "
                                    + descriptors.get(idx).name() + " failed before submission", e);
                        }
                    }
                }
            }
        } finally {
            // Keys no store task carries (no adapters, no target, policy or submission failed) are done with L2.
            List<ObjectKey> untargeted = new ArrayList<>();
            for (ObjectKey k : batch) {
                if (!pendingStores.containsKey(k)) {
                    untargeted.add(k);
                }
            }
            allowEviction(untargeted);
            synchronized (idle) {
                unprocessedKeys -= batch.size();
                idle.notifyAll();
            }
        }
    }

    /** Hands keys whose stores are over to L1's eviction. */
    private void allowEviction(List<ObjectKey> keys) {
        if (keys.isEmpty()) {
            return;
        }
        try {
            l1.allowEviction(keys);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "L1 did not take " + keys.size() + " keys for eviction", e);
        }
    }

    private void submit(int adapterIndex, List<ObjectKey> targetKeys) {
        List<MemoryObj> objs = l1.reserveRead(targetKeys, true); // temporary objects are never stored
        List<ObjectKey> keys = new ArrayList<>(targetKeys.size());
        List<MemoryObj> locked = new ArrayList<>(targetKeys.size());
        for (int i = 0; i < targetKeys.size(); i++) {
            if (objs.get(i) != null) {
                keys.add(targetKeys.get(i));
                locked.add(objs.get(i));
            }
        }
        if (keys.isEmpty()) {
            return;
        }
        long id;
        try {
            id = adapters.get(adapterIndex).submitStoreTask(keys, locked);
        } catch (RuntimeException e) {
            l1.finishRead(keys);
            LOG.log(System.Logger.Level.WARNING, "store of " + keys.size() + " keys to "
                    + descriptors.get(adapterIndex).name() + " was not submitted: " + e);
            synchronized (idle) {
                failedTasks++;
            }
            return;
        }
        inFlight.put(new TaskKey(adapterIndex, id), keys);
        for (ObjectKey k : keys) {
            pendingStores.merge(k, 1, Integer::sum);
        }
        synchronized (idle) {
            inFlightTasks = inFlight.size();
        }
        StepHook h = hook;
        if (h != null) {
            h.onSubmitted(adapterIndex, id, keys);
        }
    }

    private void drainCompletions() {
        for (int i = 0; i < adapters.size(); i++) {
            Map<Long, L2StoreResult> done;
            try {
                done = adapters.get(i).popCompletedStoreTasks();
            } catch (RuntimeException e) {
                continue; // closed: its tasks are released at stop
            }
            for (Map.Entry<Long, L2StoreResult> d : done.entrySet()) {
                List<ObjectKey> keys = inFlight.remove(new TaskKey(i, d.getKey()));
                if (keys == null) {
                    LOG.log(System.Logger.Level.DEBUG, "store task " + d.getKey() + " of " + descriptors.get(i).name()
                            + " is not this controller's; ignored");
                    continue;
                }
                finish(i, d.getKey(), keys, d.getValue() != null && d.getValue().success());
            }
        }
        synchronized (idle) {
            inFlightTasks = inFlight.size();
            idle.notifyAll();
        }
    }

    private void finish(int adapterIndex, long taskId, List<ObjectKey> keys, boolean success) {
        l1.finishRead(keys);
        List<ObjectKey> done = new ArrayList<>(keys.size());
        for (ObjectKey k : keys) {
            if (pendingStores.merge(k, -1, Integer::sum) <= 0) {
                pendingStores.remove(k);
                done.add(k);
            }
        }
        allowEviction(done); // before the policy's deletions: a deleted key is simply skipped
        if (success) {
            try {
                List<ObjectKey> deletions = policy.selectL1Deletions(keys);
                if (deletions != null && !deletions.isEmpty()) {
                    l1.delete(deletions);
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "store policy L1 deletions failed; nothing deleted", e);
            }
        } else {
            LOG.log(System.Logger.Level.WARNING, "store task " + taskId + " of " + keys.size() + " keys to "
                    + descriptors.get(adapterIndex).name() + " failed; not retried");
        }
        synchronized (idle) {
            completedTasks++;
            if (!success) {
                failedTasks++;
            }
        }
        StepHook h = hook;
        if (h != null) {
            h.onCompleted(adapterIndex, taskId, keys, success);
        }
    }

    private void releaseInFlight() {
        int n = 0;
        for (List<ObjectKey> keys : inFlight.values()) {
            l1.finishRead(keys);
            n += keys.size();
        }
        // Nothing will copy these to L2 any more: L1 may evict them (when it outlives this controller).
        List<ObjectKey> abandoned = new ArrayList<>(pendingStores.keySet());
        for (ObjectKey k; (k = newKeys.poll()) != null; ) {
            abandoned.add(k);
        }
        pendingStores.clear();
        allowEviction(abandoned);
        if (!inFlight.isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "store controller stopped with " + inFlight.size()
                    + " store tasks in flight; released " + n + " L1 read locks");
        }
        inFlight.clear();
        newKeys.clear();
        synchronized (idle) {
            inFlightTasks = 0;
            unprocessedKeys = 0;
            idle.notifyAll();
        }
    }

    // ------------------------------------------------------------------ status, lifecycle

    /**
     * Waits until every key written so far has been submitted and every submitted store has completed
     * (or the controller stopped).
     *
     * @return false when the timeout passed first
     */
    public boolean awaitIdle(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (idle) {
            while (!worker.isStopped() && (unprocessedKeys > 0 || inFlightTasks > 0)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                idle.wait(Math.max(1, left / 1_000_000));
            }
            return true;
        }
    }

    /** Store tasks submitted and not yet completed. */
    public int inFlightTasks() {
        synchronized (idle) {
            return inFlightTasks;
        }
    }

    /** Store tasks completed (success or failure). */
    public long completedTasks() {
        synchronized (idle) {
            return completedTasks;
        }
    }

    /** Store tasks that failed, at submission or in the adapter. */
    public long failedTasks() {
        synchronized (idle) {
            return failedTasks;
        }
    }

    public List<AdapterDescriptor> adapters() {
        return descriptors;
    }

    /**
     * Stops the thread and releases every L1 read lock held by stores in flight (their adapters may
     * still be reading: close the adapters before the L1 memory is freed or reused). Idempotent.
     */
    public void stop() {
        boolean stoppedNow = worker.stopAndJoin(() -> {
            l1.removeListener(listener);
            wakeFd.signal();
        }, this::releaseInFlight);
        if (!stoppedNow) {
            return;
        }
        wakeFd.close();
        synchronized (idle) {
            idle.notifyAll();
        }
    }

    @Override
    public void close() {
        stop();
    }

    @Override
    public String toString() {
        return "StoreController[" + adapters.size() + " adapters, " + inFlightTasks() + " in flight]";
    }
}
