package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A durable store of KV-cache chunks on a raw device, a file, or an NVMe namespace, in one of its
 * on-device formats (fdpblock_v2 by default, or LMCache's raw_block state v1: {@code
 * docs/on-device-format.md}), with these rules:
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

    /** The parts its paths share; the fields below are the ones the package's tests read. */
    final StoreParts parts;
    private final boolean ownsDevice;
    final RawBlockCoreConfig config;
    final BlockDevice device;
    final long capacityBytes;
    final long dataBase;
    final int headerBytes;
    final long slotBytes;
    final ReentrantLock lock;
    final StoreIndex index;
    final SlotAllocator slots;
    final MetaStore meta;
    final RecoveryResult recovered;
    private final PutWriter writer;
    private final LoadReader reader;
    private final SlotGroups groups;

    private RawBlockCore(StoreParts parts, boolean ownsDevice) {
        this.parts = parts;
        this.ownsDevice = ownsDevice;
        this.config = parts.config();
        this.device = parts.device();
        this.capacityBytes = parts.layout().capacityBytes();
        this.dataBase = parts.layout().dataBase();
        this.headerBytes = parts.layout().headerBytes();
        this.slotBytes = parts.layout().slotBytes();
        this.lock = parts.lock();
        this.index = parts.index();
        this.slots = parts.slots();
        this.meta = parts.meta();
        this.recovered = parts.recovered();
        this.writer = new PutWriter(parts);
        this.reader = new LoadReader(parts);
        this.groups = new SlotGroups(parts);
    }

    /**
     * Opens the device named by the configuration with its {@code io_engine} (exclusively), then recovers.
     *
     * @throws IllegalArgumentException before anything is opened, for io_engine uring_cmd on a path that is
     *         no NVMe namespace character device (a regular file, a block device), as LMCache refuses it
     * @throws IOException when the device cannot be opened or what it holds cannot be recovered
     */
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
        RawBlockCore core = new RawBlockCore(StoreOpening.open(config, device), owns);
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
        return parts.layout().maxPayloadBytes();
    }

    /** FDP: the placement ids data may use (empty without FDP). */
    public List<Integer> dataPlacementIds() {
        return parts.placement().data();
    }

    /** FDP: every id the device reported at open. */
    public List<Integer> reportedPlacementIds() {
        return parts.placement().reported();
    }

    /** The slot groups (FDP: one reclaim unit each), for eviction a group at a time. */
    public SlotGroups slotGroups() {
        return groups;
    }

    /**
     * Whether this store knows keys by their 128-bit hash ({@link StoreKey}): fdpblock_v2's index and log
     * hold hashes, not keys, so a caller that keeps its keys' hashes should hand them over (a
     * {@link KeyBatch} that carries them, {@link StoreKey#StoreKey(String, long, long)}). False when the
     * index keeps the keys themselves (lmcache_v1, whose metadata lists keys too): it never hashes one, and
     * a caller need not compute a hash for it.
     */
    public boolean keyedByHash() {
        return !index.keepsKeys();
    }

    long slotOffset(int slot) {
        return parts.layout().slotOffset(slot);
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
        return exists(KeyBatch.of(keys), lockHits);
    }

    /** Like {@link #exists(List, boolean)}, with the keys' hashes when the batch carries them. */
    public boolean[] exists(KeyBatch keys, boolean lockHits) {
        lock.lock();
        try {
            parts.gate().checkOpenLocked();
            return index.lookup(keys, lockHits);
        } finally {
            lock.unlock();
        }
    }

    /** Lock count -1 per key, never below zero; unknown keys are ignored. */
    public void unlock(List<String> keys) {
        unlock(KeyBatch.of(keys));
    }

    /** Like {@link #unlock(List)}, with the keys' hashes when the batch carries them. */
    public void unlock(KeyBatch keys) {
        lock.lock();
        try {
            parts.gate().checkOpenLocked();
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
        return deleteWithOutcome(KeyBatch.of(keys), force);
    }

    /** Like {@link #deleteWithOutcome(List, boolean)}, with the keys' hashes when the batch carries them. */
    public DeleteOutcome[] deleteWithOutcome(KeyBatch keys, boolean force) {
        return Deletions.delete(parts, keys, force);
    }

    // ------------------------------------------------------------------ checkpoints

    /**
     * Writes a checkpoint now if anything changed since the last one.
     *
     * @throws IOException when it cannot be written (e.g. it does not fit the meta area); the state
     *         stays dirty and is tried again by the next checkpoint
     */
    public void checkpointNow() throws IOException {
        parts.gate().checkOpen();
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

    /**
     * Every committed entry as the store's format records it (key, slot, size, CRC32C, object metadata),
     * with the slot header it points at, read and checked against it by the format's rule: a read per
     * entry, for audits and for the tools that carry the entries elsewhere (migrate). Entries committed
     * or removed meanwhile may or may not be listed.
     */
    public void forEachEntry(StoreEntry.Visitor visitor) throws IOException {
        meta.forEachEntry(visitor);
    }

    /** What this open recovered from the device (status reports it: {@code recovery}, {@code recovered_keys}, ...). */
    public RecoveryResult recovery() {
        return recovered;
    }

    /** Keys per cache salt (usage by salt, without the keys). */
    public Map<String, Long> keysBySalt() {
        lock.lock();
        try {
            return parts.salts().keysBySalt();
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

    /** A snapshot of the store's state and counters; documented in docs/store.md (Status map). */
    public Map<String, Object> status() {
        return StoreStatus.of(parts);
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
        StoreClosing.close(parts, ownsDevice);
    }
}
