package io.fdpblock.core;

import io.fdpblock.device.AlignedBufferPool;
import io.fdpblock.device.BlockDevice;

import java.io.IOException;
import java.util.ArrayList;
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
 * <li>the metadata is one of the {@link StoreFormat}s: a new device gets the configured one, an existing
 * store opens in its own; its slot headers are written before the metadata that commits them, and
 * recovery falls back to an older checkpoint or snapshot when the newer cannot be applied;</li>
 * <li>a failed metadata commit makes the store read-only ({@link #readOnlyCause()}): no later put is
 * acknowledged, since none could be made durable in order (fdpblock_v2: until reopened; lmcache_v1:
 * until a checkpoint succeeds);</li>
 * <li>close never interrupts I/O, waits (bounded) for what is in flight, refuses later puts, and
 * reports a final checkpoint that could not be written as an error, naming the acknowledged puts that
 * were not made durable.</li>
 * </ul>
 *
 * All methods are thread-safe. The index lock is never held across I/O.
 */
public final class RawBlockCore implements AutoCloseable {
    /** The store's logger, which its formats log to as well. */
    public static final System.Logger LOG = System.getLogger("io.fdpblock.core");

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
    final FdpPlacement placement;

    final ReentrantLock lock = new ReentrantLock();
    final StoreIndex index;
    final InFlight inflight = new InFlight();
    final SaltTable salts = new SaltTable();
    final SlotAllocator slots;
    final OpCounter ops = new OpCounter();
    final SlotReleaser releaser;
    final MetaStore meta;
    private final PutWriter writer = new PutWriter(this);
    private final LoadReader reader = new LoadReader(this);
    private final SlotGroups groups = new SlotGroups(this);
    /** Guarded by {@link #lock}: no new work once set. */
    boolean closed;
    /** Guarded by {@link #lock}: once false, a completing put is not committed (close took its final snapshot). */
    private boolean committing = true;
    /** Batches the device gave up with I/O still in the kernel: their buffers are kept reachable forever. */
    final List<Object> abandoned = new ArrayList<>();

    final AtomicLong crcMismatches = new AtomicLong();
    /**
     * {@code verify_payload} "recovery" (else null): the slots whose bytes predate this open, whose
     * payload a load checks once against its CRC32C (a power loss may have left another key's or torn
     * bytes under a recovered entry's intact header); a put that takes one, or a load that verified it,
     * clears its bit. Guarded by {@link #lock}.
     */
    final java.util.BitSet unverifiedSlots;
    final AtomicLong rolledBackKeys = new AtomicLong();
    final AtomicLong deviceFullRejects = new AtomicLong();
    /** Keys whose put found no free slot and waited for slots freed by deletes (being deallocated, or released). */
    final AtomicLong slotWaits = new AtomicLong();
    final AtomicLong oversizeRejects = new AtomicLong();
    final RecoveryResult recovered;

    private RawBlockCore(RawBlockCoreConfig config, BlockDevice device, boolean ownsDevice) throws IOException {
        this.config = config;
        this.device = device;
        this.ownsDevice = ownsDevice;
        this.headerBytes = config.headerBytes();
        this.slotBytes = config.slotBytes();
        if (device instanceof io.fdpblock.device.StripedBlockDevice striped) {
            StripeMembers.checkUnlabelled(config, striped); // a caller's own striped device: only as before labels
        }
        this.placement = FdpPlacement.discover(config, device);
        // a data area may start on a reclaim unit, so that slot groups fill whole ones
        ProbeContext probe = new ProbeContext(config, device, StoreGeometry.capacity(config, device),
                Math.max(1 << 20, placement.reclaimUnitBytes()), placement.metadata());
        StoreFormat.Opening format = StoreFormats.open(probe);
        probe.checkMetadataFits(format.metaTotalBytes(), 0); // before the layout is checked
        StoreGeometry geometry = StoreGeometry.of(config, device, format.metaTotalBytes());
        this.capacityBytes = geometry.capacityBytes();
        this.dataBase = geometry.dataBase();
        if (device instanceof io.fdpblock.device.StripedBlockDevice striped) {
            striped.startDataAt(dataBase); // device_paths: slots striped from here, the metadata on the first
        }
        long maxSlots = geometry.maxSlots();
        long ru = placement.reclaimUnitBytes();
        int groupSlots = ru > slotBytes ? (int) Math.min(ru / slotBytes, maxSlots) : 1;
        this.slots = new SlotAllocator((int) maxSlots, config.fdpSlotAffinityEnabled(), groupSlots);
        this.releaser = new SlotReleaser(device, lock, slots, dataBase, slotBytes, ops);
        StoreFormat.Recovered r = format.recover(new StoreContext(config, device, lock, slots, salts,
                placement.metadata(), capacityBytes, dataBase, slotBytes, headerBytes));
        this.index = r.index();
        this.meta = r.meta();
        this.recovered = r.result();
        if (config.verifyPayload() == RawBlockCoreConfig.VerifyPayload.RECOVERY) {
            unverifiedSlots = new java.util.BitSet((int) maxSlots);
            unverifiedSlots.set(0, (int) maxSlots);
        } else {
            unverifiedSlots = null;
        }
        this.headerPool = new AlignedBufferPool(headerBytes, 4 * config.maxBatchKeys(),
                Math.max(config.blockAlign(), device.bufferAlignment()));
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
        StoreGeometry.Opened opened = StoreGeometry.openDevice(config);
        try {
            return open(config, opened.device(), true);
        } catch (IOException | RuntimeException e) {
            opened.abandon(e); // a refused open leaves no file it made behind, fallocated to capacity_bytes
            throw e;
        }
    }

    /** Uses {@code device} (not closed by the core; the caller owns it); recovers from what it holds. */
    public static RawBlockCore open(RawBlockCoreConfig config, BlockDevice device) throws IOException {
        return open(config, device, false);
    }

    private static RawBlockCore open(RawBlockCoreConfig config, BlockDevice device, boolean owns) throws IOException {
        RawBlockCore core = new RawBlockCore(config, device, owns);
        core.meta.startBackground();
        return core;
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

    /** The slot groups (FDP: one reclaim unit each), for eviction a group at a time. */
    public SlotGroups slotGroups() {
        return groups;
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

    /** Keeps a batch the device gave up while its I/O was in the kernel (and its buffers) reachable forever. */
    void quarantine(Object batch) {
        synchronized (abandoned) {
            abandoned.add(batch);
        }
        LOG.log(System.Logger.Level.ERROR, "raw_block on " + device.path() + ": I/O abandoned in the kernel; its"
                + " buffers are kept and never reused");
    }

    // ------------------------------------------------------------------ put, load

    /**
     * Stores the keys and waits. @return per key: stored (or already stored)
     *
     * @throws StoreReadOnlyException when a key was refused because a metadata commit failed (its message
     *         says why and what to do)
     */
    public boolean[] put(List<PutRequest> requests) throws IOException {
        PutOutcome[] outcomes = putWithOutcome(requests);
        for (PutOutcome o : outcomes) {
            if (o == PutOutcome.READ_ONLY) {
                StoreReadOnlyException cause = meta.readOnlyCause();
                if (cause != null) {
                    throw cause;
                }
            }
        }
        return PutOutcome.successes(outcomes);
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
        putOutcomesAsync(requests, o -> done.onComplete(PutOutcome.successes(o)));
    }

    /** Like {@link #putAsync(List, Completion)}, also telling which keys this call newly stored. */
    public void putAsync(List<PutRequest> requests, PutCompletion done) {
        putOutcomesAsync(requests, o -> {
            boolean[] fresh = new boolean[o.length];
            for (int i = 0; i < o.length; i++) {
                fresh[i] = o[i] == PutOutcome.STORED;
            }
            done.onComplete(PutOutcome.successes(o), fresh);
        });
    }

    /** Like {@link #putAsync(List, Completion)}, with the outcome of each key. */
    public void putOutcomesAsync(List<PutRequest> requests, OutcomeCompletion done) {
        writer.put(requests, done);
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
        lock.lock();
        try {
            checkOpenLocked();
            return index.lookup(keys, lockHits);
        } finally {
            lock.unlock();
        }
    }

    /** Lock count -1 per key, never below zero; unknown keys are ignored. */
    public void unlock(List<String> keys) {
        lock.lock();
        try {
            checkOpenLocked();
            index.unlock(keys);
        } finally {
            lock.unlock();
        }
    }

    /** The lock count of a key (0 when unknown). */
    public int lockCount(String key) {
        lock.lock();
        try {
            return index.lockCount(new StoreKey(key));
        } finally {
            lock.unlock();
        }
    }

    /**
     * Removes keys. A locked key is kept unless {@code force}; a key whose write is in flight is
     * cancelled.
     *
     * @return per key: removed or cancelled
     */
    public boolean[] delete(List<String> keys, boolean force) {
        return DeleteOutcome.removedOrCancelled(deleteWithOutcome(keys, force));
    }

    /** Like {@link #delete}, saying per key what happened. */
    public DeleteOutcome[] deleteWithOutcome(List<String> keys, boolean force) {
        DeleteOutcome[] out = new DeleteOutcome[keys.size()];
        Deletions deletions = new Deletions(this, keys.size());
        lock.lock();
        try {
            checkOpenLocked();
            for (int i = 0; i < out.length; i++) {
                String key = keys.get(i);
                StoreKey storeKey = new StoreKey(key);
                StoreIndex.Found f = index.get(storeKey);
                int slot = f == null ? StoreIndex.MISSING : deletions.remove(storeKey, f, force);
                if (slot == StoreIndex.LOCKED) {
                    out[i] = DeleteOutcome.LOCKED;
                } else if (slot == StoreIndex.MISSING) {
                    out[i] = inflight.cancelWrite(key) != null ? DeleteOutcome.CANCELLED : DeleteOutcome.MISSING;
                } else {
                    out[i] = DeleteOutcome.REMOVED;
                }
            }
            deletions.endLocked();
        } finally {
            lock.unlock();
        }
        deletions.release();
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
        meta.checkpointNow();
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

    /**
     * The committed keys and their payload sizes (e.g. to replay them to a listener). lmcache_v1 keeps
     * the keys in memory; fdpblock_v2 does not, and reads them from the slot headers (a 4 KiB read a key).
     */
    public Map<String, Integer> keySizes() throws IOException {
        return meta.keySizes();
    }

    /** Keys per cache salt (usage by salt, without the keys). */
    public Map<String, Long> keysBySalt() {
        lock.lock();
        try {
            return salts.keysBySalt();
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

    /**
     * Why the store takes no puts (a metadata commit failed: the device, the call, the errno and what to
     * do), or null while it takes them.
     */
    public StoreReadOnlyException readOnlyCause() {
        return meta.readOnlyCause();
    }

    /** A snapshot of the store's state and counters; documented in the README. */
    public Map<String, Object> status() {
        return StoreStatus.of(this);
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
        boolean checkpointStopped = meta.stopBackground(timeout);
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
            meta.closeDurably();
        } catch (IOException | RuntimeException e) {
            String lost = meta.notDurable();
            failure = new IOException("raw_block on " + device.path() + ": the final checkpoint could not be written,"
                    + " so changes since the last durable one are not durable" + (lost == null ? "" : ": " + lost)
                    + "; the cause: " + e.getMessage(), e);
        }
        boolean ioLeft = !drained || !checkpointStopped || !abandoned.isEmpty();
        if (failure == null && !ioLeft) {
            try {
                meta.markClosedCleanly();
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "raw_block on " + device.path() + ": the close marker could not"
                        + " be written (every change is durable; the next open checks the log past its end): "
                        + e.getMessage(), e);
            }
        }
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
            meta.release();
        }
        if (failure != null) {
            throw failure;
        }
    }
}
