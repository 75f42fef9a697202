package io.fdpblock.l2;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An adapter wrapper: every method goes to the adapter it wraps, which it owns (closing the wrapper
 * closes it) and which nobody else should call. A subclass overrides what it changes, e.g.
 * {@link QosL2Adapter} (admission) or {@link FaultInjectL2Adapter} (failed loads) (docs/contract.md
 * section 8). The wrapper offers the inner adapter's {@link ReclaimUnitGroups} when it has them and no
 * groups ({@link #groupBytes()} 0) otherwise, so that group eviction sees through it. After
 * {@link #close()} every call but {@code close()} throws {@link IllegalStateException} naming the
 * wrapper.
 */
public abstract class ForwardingL2Adapter implements L2Adapter, ReclaimUnitGroups {
    private final L2Adapter inner;
    private final AtomicBoolean closed = new AtomicBoolean();

    protected ForwardingL2Adapter(L2Adapter inner) {
        if (inner == null) {
            throw new IllegalArgumentException("an adapter wrapper needs the adapter it wraps; got null");
        }
        this.inner = inner;
    }

    /** The wrapped adapter (for management and tests: calls on it bypass this wrapper). */
    public final L2Adapter inner() {
        return inner;
    }

    /** The wrapper's kind, e.g. "qos": messages say "qos adapter over <inner>". */
    protected abstract String kind();

    protected final void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    protected final boolean isClosed() {
        return closed.get();
    }

    @Override
    public int storeEventFd() {
        checkOpen();
        return inner.storeEventFd();
    }

    @Override
    public int lookupAndLockEventFd() {
        checkOpen();
        return inner.lookupAndLockEventFd();
    }

    @Override
    public int loadEventFd() {
        checkOpen();
        return inner.loadEventFd();
    }

    @Override
    public long submitStoreTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        checkOpen();
        return inner.submitStoreTask(keys, objects);
    }

    @Override
    public Map<Long, L2StoreResult> popCompletedStoreTasks() {
        checkOpen();
        return inner.popCompletedStoreTasks();
    }

    @Override
    public long submitLookupAndLockTask(List<ObjectKey> keys) {
        checkOpen();
        return inner.submitLookupAndLockTask(keys);
    }

    @Override
    public Bitmap queryLookupAndLockResult(long taskId) {
        checkOpen();
        return inner.queryLookupAndLockResult(taskId);
    }

    @Override
    public void submitUnlock(List<ObjectKey> keys) {
        checkOpen();
        inner.submitUnlock(keys);
    }

    @Override
    public long submitLoadTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        checkOpen();
        return inner.submitLoadTask(keys, objects);
    }

    @Override
    public Bitmap queryLoadResult(long taskId) {
        checkOpen();
        return inner.queryLoadResult(taskId);
    }

    @Override
    public void delete(List<ObjectKey> keys) {
        checkOpen();
        inner.delete(keys);
    }

    @Override
    public void delete(List<ObjectKey> keys, boolean force) {
        checkOpen();
        inner.delete(keys, force);
    }

    @Override
    public List<L2DeleteResult> deleteReporting(List<ObjectKey> keys, boolean force) {
        checkOpen();
        return inner.deleteReporting(keys, force);
    }

    @Override
    public boolean registerMemory(MemorySegment region) throws IOException {
        checkOpen();
        return inner.registerMemory(region);
    }

    @Override
    public void unregisterMemory(MemorySegment region) throws IOException {
        checkOpen();
        inner.unregisterMemory(region);
    }

    /** The inner adapter's listeners are the wrapper's: events come from where the keys are. */
    @Override
    public void registerListener(L2AdapterListener listener) {
        checkOpen();
        inner.registerListener(listener);
    }

    /** Forwarded: the identity is the storage's, which the inner adapter is (as LMCache's wrappers do). */
    @Override
    public void setBackendIdentity(String name, boolean shared) {
        checkOpen();
        inner.setBackendIdentity(name, shared);
    }

    @Override
    public AdapterUsage usage() {
        checkOpen();
        return inner.usage();
    }

    @Override
    public Map<String, Object> reportStatus() {
        checkOpen();
        return inner.reportStatus();
    }

    // ---- ReclaimUnitGroups: the inner adapter's, when it has them ----

    private ReclaimUnitGroups innerGroups() {
        return inner instanceof ReclaimUnitGroups g ? g : null;
    }

    @Override
    public long groupBytes() {
        checkOpen();
        ReclaimUnitGroups g = innerGroups();
        return g == null ? 0 : g.groupBytes();
    }

    @Override
    public int[] groupsOf(List<ObjectKey> keys) {
        checkOpen();
        ReclaimUnitGroups g = innerGroups();
        if (g != null) {
            return g.groupsOf(keys);
        }
        int[] none = new int[keys.size()];
        Arrays.fill(none, -1);
        return none;
    }

    @Override
    public List<Group> groups() {
        checkOpen();
        ReclaimUnitGroups g = innerGroups();
        return g == null ? List.of() : g.groups();
    }

    @Override
    public Eviction evictGroup(int group) {
        checkOpen();
        ReclaimUnitGroups g = innerGroups();
        if (g == null) {
            throw new IllegalArgumentException(this + " has no reclaim-unit groups (groupBytes() is 0): group "
                    + group + " does not exist; evict keys with delete instead");
        }
        return g.evictGroup(group);
    }

    /**
     * Idempotent: the first call runs {@link #beforeInnerClose()}, closes the inner adapter (which waits
     * for its work in flight) and runs {@link #afterInnerClose()}, each even when an earlier step throws.
     */
    @Override
    public final void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            beforeInnerClose();
        } finally {
            try {
                inner.close();
            } finally {
                afterInnerClose();
            }
        }
    }

    /** What the wrapper stops before the inner adapter closes (default: nothing); {@link #isClosed()} is true. */
    protected void beforeInnerClose() {
    }

    /** What the wrapper releases once the inner adapter is closed and idle (default: nothing). */
    protected void afterInnerClose() {
    }

    @Override
    public String toString() {
        return kind() + " adapter over " + inner;
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    /** A wrapper's own keys in its JSON: every key but {@code type} and {@code inner}, in their order. */
    static List<Map.Entry<String, JsonNode>> wrapperOptions(JsonNode config) {
        return config.properties().stream().filter(e -> !e.getKey().equals("type") && !e.getKey().equals("inner"))
                .toList();
    }

    /**
     * The wrapped adapter of a wrapper's JSON: {@code inner} must be an adapter's own JSON object (with
     * its {@code type}), made by {@link L2Adapters#create} like any other.
     */
    static L2Adapter createInner(String wrapper, JsonNode inner) throws IOException {
        if (inner == null || !inner.isObject()) {
            throw new IllegalArgumentException(wrapper + ": \"inner\" must be the wrapped adapter's JSON object, e.g. "
                    + "{\"type\": \"" + wrapper + "\", \"inner\": {\"type\": \"mock\"}}; got " + inner);
        }
        try {
            return L2Adapters.create(JSON.writeValueAsString(inner));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(wrapper + ": inner adapter: " + e.getMessage(), e);
        }
    }
}
