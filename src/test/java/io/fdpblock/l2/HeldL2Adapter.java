package io.fdpblock.l2;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An adapter whose stores, lookups and loads wait until the test releases them, one by one and in any
 * order, so that a wrapper above it can be driven step by step. Released operations run on a
 * {@link MockL2Adapter} (the data and the locks), then complete here: recorded, then this adapter's own
 * eventfds signalled. Unlock and delete go to the mock at once. Its listeners hear nothing.
 */
final class HeldL2Adapter extends AbstractL2Adapter {
    enum Op { STORE, LOOKUP, LOAD }

    /** One submission, in the order they came. */
    record Held(Op op, long id, List<ObjectKey> keys, List<MemoryObj> objects, long submitNanos) {
        String salt() {
            return keys.getFirst().cacheSalt();
        }
    }

    final MockL2Adapter backing;
    private final List<Held> submitted = new ArrayList<>(); // guarded by this
    private final List<Held> waiting = new ArrayList<>(); // guarded by this

    HeldL2Adapter() throws IOException {
        backing = new MockL2Adapter();
    }

    private long hold(Op op, List<ObjectKey> keys, List<MemoryObj> objects) {
        if (op == Op.LOOKUP) {
            checkKeys(keys);
        } else {
            checkKeysAndObjects(keys, objects);
        }
        long id = newTaskId();
        Held h = new Held(op, id, List.copyOf(keys), objects == null ? null : List.copyOf(objects), System.nanoTime());
        synchronized (this) {
            submitted.add(h);
            waiting.add(h);
            notifyAll();
        }
        return id;
    }

    @Override
    public long submitStoreTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        return hold(Op.STORE, keys, objects);
    }

    @Override
    public long submitLookupAndLockTask(List<ObjectKey> keys) {
        return hold(Op.LOOKUP, keys, null);
    }

    @Override
    public long submitLoadTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        return hold(Op.LOAD, keys, objects);
    }

    @Override
    public void submitUnlock(List<ObjectKey> keys) {
        checkOpen();
        backing.submitUnlock(keys);
    }

    @Override
    public List<L2DeleteResult> deleteReporting(List<ObjectKey> keys, boolean force) {
        checkOpen();
        return backing.deleteReporting(keys, force);
    }

    /** Every submission so far, in order. */
    synchronized List<Held> submitted() {
        return List.copyOf(submitted);
    }

    /** Submissions not released yet. */
    synchronized List<Held> waiting() {
        return List.copyOf(waiting);
    }

    /** Waits (bounded, never a timing assertion) until {@code n} operations were submitted; @return the n-th */
    synchronized Held awaitSubmitted(int n) throws InterruptedException {
        long deadline = System.nanoTime() + L2AdapterContractTest.WAIT.toNanos();
        while (submitted.size() < n) {
            long left = deadline - System.nanoTime();
            assertThat(left).as("%d submissions reached the held adapter; waited for %d", submitted.size(), n)
                    .isPositive();
            wait(Math.max(1, left / 1_000_000));
        }
        return submitted.get(n - 1);
    }

    /** Performs a held operation and completes it. */
    void release(Held h) {
        synchronized (this) {
            assertThat(waiting.remove(h)).as("%s is waiting", h).isTrue();
        }
        switch (h.op()) {
            case STORE -> {
                long id = backing.submitStoreTask(h.keys(), h.objects());
                completeStore(h.id(), backing.popCompletedStoreTasks().get(id), h.submitNanos());
            }
            case LOOKUP -> completeLookup(h.id(), backing.queryLookupAndLockResult(
                    backing.submitLookupAndLockTask(h.keys())), h.submitNanos());
            case LOAD -> completeLoad(h.id(), backing.queryLoadResult(backing.submitLoadTask(h.keys(), h.objects())),
                    h.submitNanos());
        }
    }

    /** Releases the one waiting operation (fails when there is not exactly one). */
    Held releaseOnly() {
        List<Held> w = waiting();
        assertThat(w).as("waiting operations").hasSize(1);
        release(w.getFirst());
        return w.getFirst();
    }

    int lockCount(ObjectKey k) {
        return backing.lockCount(k);
    }

    @Override
    protected String describe() {
        return "held adapter";
    }

    @Override
    protected long capacityBytes() {
        return 0;
    }

    @Override
    protected Map<ObjectKey, Long> heldKeys() {
        return Map.of();
    }

    @Override
    protected Map<String, Object> backendStatus() {
        return Map.of("type", "held");
    }

    @Override
    protected void closeBackend() {
        backing.close();
    }
}
