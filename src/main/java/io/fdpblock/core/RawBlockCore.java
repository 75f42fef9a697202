package io.fdpblock.core;

import io.fdpblock.device.AlignedBufferPool;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A durable store of KV-cache chunks on a raw device, a file, or an NVMe namespace: LMCache's
 * raw_block state v1 on the device ({@code docs/on-device-format.md}), with these rules:
 *
 * <ul>
 * <li>one store owns a device: open takes an exclusive lock on it (a second opener fails at once);</li>
 * <li>open never formats by itself: a new device starts empty, a store is recovered, anything else
 * (another layout, foreign bytes, unreadable checkpoints) is refused with nothing written, unless the
 * configuration says {@code "format": true};</li>
 * <li>put is two-phase: a slot is reserved and the key is in flight (invisible) while header and
 * payload are written outside the lock, then it is committed ({@link PutWriter});</li>
 * <li>exists may take lock refcounts; unlock never goes below zero; delete keeps locked keys unless
 * forced; a freed slot is deallocated on FDP devices before it is reused ({@link SlotReleaser});</li>
 * <li>load reads straight into the caller's buffer where it can and checks the payload's CRC32C
 * ({@link LoadReader}); a payload that fails it is a miss, but the destination may then hold the bad
 * bytes (zero-copy loads land before the check);</li>
 * <li>checkpoints ({@link Checkpointer}) make the payload durable before the header that commits it;
 * recovery ({@link Recovery}) falls back to the older container when the newer cannot be applied;</li>
 * <li>close never interrupts I/O, waits (bounded) for what is in flight, refuses later puts, and
 * reports a final checkpoint that could not be written as an error.</li>
 * </ul>
 *
 * All methods are thread-safe. The index lock is never held across I/O.
 */
public final class RawBlockCore implements AutoCloseable {
    static final System.Logger LOG = System.getLogger("io.fdpblock.core");

    /** Receives per-key results, once; on the device's I/O thread or the caller's. */
    @FunctionalInterface
    public interface Completion {
        void onComplete(boolean[] results);
    }

    /** Put results with, per key, whether this call stored it (false for keys that were already there). */
    @FunctionalInterface
    public interface PutCompletion {
        void onComplete(boolean[] results, boolean[] newlyStored);
    }

    /** Put results as outcomes: what happened to each key, and why when it was not stored. */
    @FunctionalInterface
    public interface OutcomeCompletion {
        void onComplete(PutOutcome[] outcomes);
    }

    final RawBlockCoreConfig config;
    final BlockDevice device;
    private final boolean ownsDevice;
    final long capacityBytes;
    final long dataBase;
    final int headerBytes;
    final long slotBytes;
    final AlignedBufferPool headerPool;
    private final MetadataArea area;
    final FdpPlacement placement;
    private final boolean metaAreaFitsFullIndex;

    final ReentrantLock lock = new ReentrantLock();
    final KeyIndex index = new KeyIndex();
    final SlotAllocator slots;
    final OpCounter ops = new OpCounter();
    final SlotReleaser releaser;
    private final Checkpointer checkpointer;
    private final PutWriter writer = new PutWriter(this);
    private final LoadReader reader = new LoadReader(this);
    private long dirtyCount;
    private long persistedCount;
    /** Guarded by {@link #lock}: no new work once set. */
    private boolean closed;
    /** Guarded by {@link #lock}: once false, a completing put is not committed (close took its final snapshot). */
    private boolean committing = true;
    /** Batches the device gave up with I/O still in the kernel: their buffers are kept reachable forever. */
    final List<Object> abandoned = new ArrayList<>();

    final AtomicLong crcMismatches = new AtomicLong();
    final AtomicLong rolledBackKeys = new AtomicLong();
    final AtomicLong deviceFullRejects = new AtomicLong();
    final AtomicLong oversizeRejects = new AtomicLong();
    private final Recovery.Result recovered;

    private RawBlockCore(RawBlockCoreConfig config, BlockDevice device, boolean ownsDevice) throws IOException {
        this.config = config;
        this.device = device;
        this.ownsDevice = ownsDevice;
        this.headerBytes = config.headerBytes();
        this.slotBytes = config.slotBytes();
        int blockAlign = config.blockAlign();
        int lbs = device.logicalBlockSize();
        if (blockAlign % lbs != 0) {
            throw new IllegalArgumentException("raw_block config: block_align = " + blockAlign + " is not a multiple of"
                    + " the device's logical block size " + lbs + " (" + device.path() + "); use " + lbs + " or more");
        }
        long deviceSize = device.sizeBytes();
        if (config.capacityBytes() > deviceSize) {
            throw new IllegalArgumentException("raw_block config: capacity_bytes = " + config.capacityBytes()
                    + " exceeds the size of " + device.path() + " (" + deviceSize + " bytes); use 0 for the whole device");
        }
        this.capacityBytes = config.capacityBytes() > 0 ? config.capacityBytes() : deviceSize;
        this.dataBase = config.metaTotalBytes();
        long maxSlots = capacityBytes > dataBase ? (capacityBytes - dataBase) / slotBytes : 0;
        if (maxSlots < 1) {
            throw new IllegalArgumentException("raw_block config: " + device.path() + " (" + capacityBytes
                    + " bytes) has no room for a slot of " + slotBytes + " bytes after the meta area of " + dataBase
                    + " bytes; use a larger device or smaller meta_total_bytes / slot_bytes");
        }
        if (maxSlots > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("raw_block config: " + maxSlots + " slots exceed the index limit of "
                    + (Integer.MAX_VALUE - 8) + "; use a larger slot_bytes");
        }
        this.placement = FdpPlacement.discover(config, device);
        long ru = placement.reclaimUnitBytes();
        int groupSlots = ru > slotBytes ? (int) Math.min(ru / slotBytes, maxSlots) : 1;
        this.slots = new SlotAllocator((int) maxSlots, config.fdpSlotAffinityEnabled(), groupSlots);
        this.releaser = new SlotReleaser(device, lock, slots, dataBase, slotBytes, ops);
        this.area = new MetadataArea(device, blockAlign, config.metaTotalBytes());
        CheckpointCodec.Layout layout = new CheckpointCodec.Layout(config.devicePath(), capacityBytes, blockAlign,
                headerBytes, slotBytes, config.metaTotalBytes(), dataBase);
        this.metaAreaFitsFullIndex = Checkpointer.fitsFullIndex(device.path(), maxSlots, area.payloadRoom(), config);
        this.recovered = new Recovery(config, device, area, layout, index, slots).run();
        if (recovered.droppedKeys() > 0) {
            dirtyCount++; // the next checkpoint persists the cleanup
        }
        this.checkpointer = new Checkpointer(area, layout, placement.metadata(), new Checkpointer.Source() {
            @Override
            public Checkpointer.Snapshot snapshotIfDirty() {
                return snapshot();
            }

            @Override
            public void persisted(long dirtyAt) {
                lock.lock();
                try {
                    persistedCount = dirtyAt;
                } finally {
                    lock.unlock();
                }
            }
        }, recovered.seq());
        this.headerPool = new AlignedBufferPool(headerBytes, 4 * config.maxBatchKeys(),
                Math.max(blockAlign, device.bufferAlignment()));
        try {
            device.registerBuffers(headerPool.region());
        } catch (IOException | RuntimeException e) {
            // e.g. RLIMIT_MEMLOCK too low: headers then take the non-fixed path, which works
            LOG.log(System.Logger.Level.WARNING, "slot header buffers not registered with " + device.path()
                    + " (their writes copy instead of using fixed buffers): " + e.getMessage());
        }
    }

    /** Opens the device named by the configuration with its {@code io_engine} (exclusively), then recovers. */
    public static RawBlockCore open(RawBlockCoreConfig config) throws IOException {
        BlockDevice device = openDevice(config);
        try {
            return open(config, device, true);
        } catch (IOException | RuntimeException e) {
            device.close();
            throw e;
        }
    }

    /** Uses {@code device} (not closed by the core; the caller owns it); recovers from what it holds. */
    public static RawBlockCore open(RawBlockCoreConfig config, BlockDevice device) throws IOException {
        return open(config, device, false);
    }

    private static RawBlockCore open(RawBlockCoreConfig config, BlockDevice device, boolean owns) throws IOException {
        RawBlockCore core = new RawBlockCore(config, device, owns);
        if (config.metaEnablePeriodic()) {
            core.checkpointer.startPeriodic(config.metaCheckpointIntervalSec());
        }
        return core;
    }

    private static BlockDevice openDevice(RawBlockCoreConfig config) throws IOException {
        IoEngine engine = config.ioEngine();
        if (engine == IoEngine.MEMORY) {
            if (config.capacityBytes() == 0) {
                throw new IllegalArgumentException("raw_block config: io_engine memory needs capacity_bytes > 0");
            }
            return BlockDevices.memory(config.capacityBytes(), config.blockAlign());
        }
        Path path = Path.of(config.devicePath());
        if (!Files.exists(path)) {
            if (config.capacityBytes() == 0) {
                throw new IOException("device_path " + path + " does not exist: create it, or set capacity_bytes to"
                        + " have a file of that size created");
            }
            BlockDevices.createFile(path, config.capacityBytes());
        }
        DeviceOptions options = DeviceOptions.of(engine).withQueueDepth(config.iouringQueueDepth())
                .withDirect(config.useOdirect()).withBuffers(1 << 20, 0).withExclusive(true);
        return BlockDevices.open(path, options);
    }

    public RawBlockCoreConfig config() {
        return config;
    }

    public BlockDevice device() {
        return device;
    }

    public int maxSlots() {
        return slots.maxSlots();
    }

    public long maxPayloadBytes() {
        return slotBytes - headerBytes;
    }

    /** FDP: the placement ids data may use (empty without FDP). */
    public List<Integer> dataPlacementIds() {
        return placement.data();
    }

    /** FDP: every id the device reported at open. */
    public List<Integer> reportedPlacementIds() {
        return placement.reported();
    }

    long slotOffset(int slot) {
        return dataBase + (long) slot * slotBytes;
    }

    /** Under {@link #lock}: refuses new work once closed. */
    void checkOpenLocked() {
        if (closed) {
            throw new IllegalStateException("RawBlockCore on " + config.devicePath() + " is closed");
        }
    }

    private void checkOpen() {
        lock.lock();
        try {
            checkOpenLocked();
        } finally {
            lock.unlock();
        }
    }

    /** Under {@link #lock}: whether a finished write may still be committed. */
    boolean committingLocked() {
        return committing;
    }

    /** Under {@link #lock}: a committed change the next checkpoint must persist. */
    void markDirtyLocked() {
        dirtyCount++;
    }

    /** Keeps a batch the device gave up while its I/O was in the kernel (and its buffers) reachable forever. */
    void quarantine(Object batch) {
        synchronized (abandoned) {
            abandoned.add(batch);
        }
        LOG.log(System.Logger.Level.ERROR, "raw_block on " + device.path() + ": I/O abandoned in the kernel; its"
                + " buffers are kept and never reused");
    }

    // ------------------------------------------------------------------ put, load

    /** Stores the keys and waits. @return per key: stored (or already stored) */
    public boolean[] put(List<PutRequest> requests) throws IOException {
        PutOutcome[] o = putWithOutcome(requests);
        boolean[] out = new boolean[o.length];
        for (int i = 0; i < o.length; i++) {
            out[i] = o[i].success();
        }
        return out;
    }

    /** Stores the keys and waits. @return what happened to each key */
    public PutOutcome[] putWithOutcome(List<PutRequest> requests) {
        CompletableFuture<PutOutcome[]> f = new CompletableFuture<>();
        putOutcomesAsync(requests, f::complete);
        return f.join(); // completions never fail; uninterruptible, like the I/O it waits for
    }

    /**
     * Stores the keys; {@code done} gets one result per request (true = stored now or already stored).
     *
     * @throws IllegalArgumentException for a placement id the device does not report, before anything is done
     * @throws IllegalStateException after close
     */
    public void putAsync(List<PutRequest> requests, Completion done) {
        putOutcomesAsync(requests, o -> done.onComplete(successes(o)));
    }

    /** Like {@link #putAsync(List, Completion)}, also telling which keys this call newly stored. */
    public void putAsync(List<PutRequest> requests, PutCompletion done) {
        putOutcomesAsync(requests, o -> {
            boolean[] fresh = new boolean[o.length];
            for (int i = 0; i < o.length; i++) {
                fresh[i] = o[i] == PutOutcome.STORED;
            }
            done.onComplete(successes(o), fresh);
        });
    }

    /** Like {@link #putAsync(List, Completion)}, with the outcome of each key. */
    public void putOutcomesAsync(List<PutRequest> requests, OutcomeCompletion done) {
        writer.put(requests, done);
    }

    private static boolean[] successes(PutOutcome[] o) {
        boolean[] out = new boolean[o.length];
        for (int i = 0; i < o.length; i++) {
            out[i] = o[i].success();
        }
        return out;
    }

    /** Loads and waits. @return per key: loaded */
    public boolean[] load(List<LoadRequest> requests) {
        CompletableFuture<boolean[]> f = new CompletableFuture<>();
        loadAsync(requests, f::complete);
        return f.join();
    }

    /**
     * Reads each found key's payload into its destination; misses are left untouched, except that a
     * payload whose checksum does not match is reported as a miss after it was read (its destination
     * may then hold the bad bytes).
     *
     * @throws IllegalArgumentException when a destination is smaller than the stored payload (nothing
     *         is read then)
     */
    public void loadAsync(List<LoadRequest> requests, Completion done) {
        reader.load(requests, done);
    }

    // ------------------------------------------------------------------ lookups, locks, delete

    /** @return per key: committed; with {@code lock}, each hit's lock count goes up by one */
    public boolean[] exists(List<String> keys, boolean lockHits) {
        boolean[] out = new boolean[keys.size()];
        lock.lock();
        try {
            checkOpenLocked();
            for (int i = 0; i < out.length; i++) {
                KeyIndex.Entry e = index.get(keys.get(i));
                if (e != null) {
                    out[i] = true;
                    if (lockHits) {
                        e.locks++;
                    }
                }
            }
        } finally {
            lock.unlock();
        }
        return out;
    }

    /** Lock count -1 per key, never below zero; unknown keys are ignored. */
    public void unlock(List<String> keys) {
        lock.lock();
        try {
            checkOpenLocked();
            for (String k : keys) {
                KeyIndex.Entry e = index.get(k);
                if (e != null && e.locks > 0) {
                    e.locks--;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** The lock count of a key (0 when unknown). */
    public int lockCount(String key) {
        lock.lock();
        try {
            KeyIndex.Entry e = index.get(key);
            return e == null ? 0 : e.locks;
        } finally {
            lock.unlock();
        }
    }

    /** What {@link #deleteWithOutcome} did to a key. */
    public enum DeleteOutcome {
        /** It was committed and is now removed. */
        REMOVED,
        /** Its write was in flight and is cancelled (its slot is freed when the write ends). */
        CANCELLED,
        /** It is locked and was kept (not forced). */
        LOCKED,
        /** Unknown. */
        MISSING
    }

    /**
     * Removes keys. A locked key is kept unless {@code force}; a key whose write is in flight is
     * cancelled.
     *
     * @return per key: removed or cancelled
     */
    public boolean[] delete(List<String> keys, boolean force) {
        DeleteOutcome[] o = deleteWithOutcome(keys, force);
        boolean[] out = new boolean[o.length];
        for (int i = 0; i < o.length; i++) {
            out[i] = o[i] == DeleteOutcome.REMOVED || o[i] == DeleteOutcome.CANCELLED;
        }
        return out;
    }

    /** Like {@link #delete}, saying per key what happened. */
    public DeleteOutcome[] deleteWithOutcome(List<String> keys, boolean force) {
        DeleteOutcome[] out = new DeleteOutcome[keys.size()];
        int[] freed = new int[keys.size()];
        int nFreed = 0;
        lock.lock();
        try {
            checkOpenLocked();
            for (int i = 0; i < out.length; i++) {
                String k = keys.get(i);
                KeyIndex.Entry e = index.get(k);
                if (e != null) {
                    if (e.locks > 0 && !force) {
                        out[i] = DeleteOutcome.LOCKED;
                        continue;
                    }
                    index.remove(k);
                    dirtyCount++;
                    if (e.readers > 0) {
                        e.deleted = true; // released when the last load of it ends
                    } else {
                        freed[nFreed++] = e.slot;
                    }
                    out[i] = DeleteOutcome.REMOVED;
                } else {
                    out[i] = index.cancelWrite(k) != null ? DeleteOutcome.CANCELLED : DeleteOutcome.MISSING;
                }
            }
        } finally {
            lock.unlock();
        }
        releaser.release(freed, nFreed);
        return out;
    }

    // ------------------------------------------------------------------ checkpoints

    /**
     * Writes a checkpoint now if anything changed since the last one.
     *
     * @throws IOException when it cannot be written (e.g. it does not fit the meta area); the state
     *         stays dirty and is tried again by the next checkpoint
     */
    public void checkpointNow() throws IOException {
        checkOpen();
        checkpointer.checkpoint();
    }

    private Checkpointer.Snapshot snapshot() {
        lock.lock();
        try {
            if (dirtyCount == persistedCount) {
                return null;
            }
            List<CheckpointCodec.SnapshotEntry> entries = new ArrayList<>(index.size());
            index.forEach((k, e) -> entries.add(new CheckpointCodec.SnapshotEntry(k, slotOffset(e.slot), e.size, e.meta)));
            return new Checkpointer.Snapshot(dirtyCount, slots.nextSlot(), entries);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ usage, status, close

    /** Keys committed. */
    public int keyCount() {
        lock.lock();
        try {
            return index.size();
        } finally {
            lock.unlock();
        }
    }

    /** The committed keys and their payload sizes (e.g. to replay them to a listener). */
    public Map<String, Integer> keySizes() {
        lock.lock();
        try {
            Map<String, Integer> out = new LinkedHashMap<>(index.size() * 2);
            index.forEach((k, e) -> out.put(k, e.size));
            return out;
        } finally {
            lock.unlock();
        }
    }

    /** Bytes of slots in use (a slot is charged whole). */
    public long usedBytes() {
        lock.lock();
        try {
            return (long) slots.usedSlots() * slotBytes;
        } finally {
            lock.unlock();
        }
    }

    /** Bytes of the data area (every slot). */
    public long capacityBytes() {
        return (long) slots.maxSlots() * slotBytes;
    }

    public int freeSlots() {
        lock.lock();
        try {
            return slots.freeSlots();
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of the store's state and counters; documented in the README. */
    public Map<String, Object> status() {
        Map<String, Object> s = new LinkedHashMap<>();
        lock.lock();
        try {
            s.put("is_healthy", !closed && checkpointer.lastError() == null);
            s.put("device_path", config.devicePath());
            s.put("io_engine", device.engine().configName());
            s.put("capacity_bytes", capacityBytes);
            s.put("slot_bytes", slotBytes);
            s.put("max_slots", slots.maxSlots());
            s.put("used_slots", slots.usedSlots());
            s.put("free_slots", slots.freeSlots());
            s.put("next_slot", slots.nextSlot());
            s.put("keys", index.size());
            s.put("locked_keys", index.lockedCount());
            s.put("inflight_keys", index.inflightCount());
            s.put("dirty", dirtyCount != persistedCount);
            s.put("slot_affinity_hits", slots.affinityHits());
            s.put("slot_affinity_fallbacks", slots.affinityFallbacks());
            s.put("slots_per_reclaim_unit", slots.groupSlots());
        } finally {
            lock.unlock();
        }
        s.put("fdp_enabled", config.fdpEnabled());
        s.put("fdp_reported_placement_ids", placement.reported());
        s.put("fdp_data_placement_ids", placement.data());
        s.put("fdp_reclaim_unit_bytes", placement.reclaimUnitBytes());
        s.put("bytes_written_by_placement_id", placement.bytesWrittenById());
        s.put("deallocated_slots", releaser.deallocatedSlots());
        s.put("deallocate_failures", releaser.deallocateFailures());
        s.put("checkpoint_seq", checkpointer.seq());
        s.put("checkpoints_written", checkpointer.written());
        s.put("last_checkpoint_bytes", checkpointer.lastBytes());
        s.put("last_checkpoint_ms", checkpointer.lastMillis());
        s.put("checkpoint_failures", checkpointer.failures());
        s.put("last_checkpoint_error", checkpointer.lastError());
        s.put("meta_container_bytes", area.containerBytes());
        s.put("meta_area_fits_full_index", metaAreaFitsFullIndex);
        s.put("recovery", recovered.note());
        s.put("recovery_fell_back", recovered.fellBack());
        s.put("recovered_keys", recovered.recoveredKeys());
        s.put("verify_dropped_keys", recovered.droppedKeys());
        s.put("crc_mismatches", crcMismatches.get());
        s.put("rolled_back_keys", rolledBackKeys.get());
        s.put("device_full_rejects", deviceFullRejects.get());
        s.put("oversize_rejects", oversizeRejects.get());
        synchronized (abandoned) {
            s.put("abandoned_io_batches", abandoned.size());
        }
        return s;
    }

    /**
     * Refuses new work, waits (at most {@code close_timeout_ms}, through interrupts) for the puts,
     * loads and deallocations in flight and for a running checkpoint, writes a final checkpoint when
     * anything changed, and closes the device if the core opened it. A put that completes after the
     * final snapshot is reported failed ({@link PutOutcome#CLOSED}), never acknowledged and then lost.
     * Idempotent.
     *
     * @throws IOException when the final checkpoint could not be written: changes since the last
     *         checkpoint are then not durable
     */
    @Override
    public void close() throws IOException {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
        } finally {
            lock.unlock();
        }
        long timeout = config.closeTimeoutMs();
        boolean checkpointStopped = checkpointer.stopPeriodic(timeout);
        boolean drained = ops.awaitNone(timeout);
        lock.lock();
        try {
            committing = false; // from here a completing put is reported failed
        } finally {
            lock.unlock();
        }
        if (!drained || !checkpointStopped) {
            LOG.log(System.Logger.Level.ERROR, "raw_block on " + device.path() + ": close gave up after " + timeout
                    + " ms on " + ops.count() + " operations in flight" + (checkpointStopped ? "" : " and a running"
                    + " checkpoint") + "; puts among them are reported failed, their buffers stay allocated");
        }
        IOException failure = null;
        try {
            checkpointer.checkpoint();
        } catch (IOException | RuntimeException e) {
            failure = new IOException("raw_block on " + device.path() + ": the final checkpoint could not be written,"
                    + " so changes since the last checkpoint (seq " + checkpointer.seq() + ") are not durable: "
                    + e.getMessage(), e);
        }
        boolean ioLeft = !drained || !checkpointStopped || !abandoned.isEmpty();
        if (ownsDevice) {
            device.close();
        } else if (!ioLeft) {
            try {
                device.unregisterBuffers(headerPool.region());
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not unregister the header buffers from " + device.path(), e);
            }
        }
        if (!ioLeft) {
            headerPool.close();
        }
        if (failure != null) {
            throw failure;
        }
    }
}
