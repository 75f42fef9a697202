package io.fdpblock.core;

import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.device.AlignedBufferPool;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.zip.CRC32;

/**
 * A durable store of KV-cache chunks on a raw device, a file, or an NVMe namespace: LMCache's
 * raw_block state v1 on the device (see {@code docs/on-device-format.md}), with these rules:
 *
 * <ul>
 * <li>put is two-phase: a slot is reserved and the key is in flight (invisible) while header and
 * payload are written outside the lock, then it is committed. An indexed key is not rewritten; a key
 * in flight fails; a delete during the write cancels it. Device full or an oversize payload fails that
 * key only; a failed device submission or completion rolls back every key of that submission.</li>
 * <li>exists may take lock refcounts; unlock never goes below zero; delete keeps locked keys unless forced.</li>
 * <li>load reads straight into the caller's buffer where it can; a payload whose CRC32C (kept in the
 * slot header's unused tail) does not match is a miss, counted in status.</li>
 * <li>checkpoints: mirrored containers, payload made durable before the header that commits it; a
 * periodic thread, {@link #checkpointNow()}, and a final one at close. A checkpoint that does not fit
 * is an error (logged, in status), never skipped silently.</li>
 * <li>recovery at open: the newest valid container is applied, then (by default) every entry's slot
 * header is checked and entries whose magic, identity or length disagree are dropped.</li>
 * </ul>
 *
 * All methods are thread-safe. The index lock is never held across I/O.
 */
public final class RawBlockCore implements AutoCloseable {
    static final System.Logger LOG = System.getLogger("io.fdpblock.core");
    /** Recovery reads slot headers in batches of this many. */
    private static final int VERIFY_BATCH = 256;
    /** Checkpoint JSON bytes per entry assumed when warning that the meta area may be too small. */
    private static final int ESTIMATED_CHECKPOINT_BYTES_PER_ENTRY = 260;

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

    /** A committed key. */
    private static final class Entry {
        final int slot;
        final int size;
        final ObjectMeta meta;
        final int crc;
        final boolean hasCrc;
        int locks;
        int readers;
        boolean deleted;

        Entry(int slot, int size, ObjectMeta meta, int crc, boolean hasCrc) {
            this.slot = slot;
            this.size = size;
            this.meta = meta;
            this.crc = crc;
            this.hasCrc = hasCrc;
        }
    }

    /** A key whose write is in flight. */
    private static final class Inflight {
        final int slot;
        boolean canceled;

        Inflight(int slot) {
            this.slot = slot;
        }
    }

    private final RawBlockCoreConfig config;
    private final BlockDevice device;
    private final boolean ownsDevice;
    private final long capacityBytes;
    private final long dataBase;
    private final long containerBytes;
    private final int blockAlign;
    private final int headerBytes;
    private final long slotBytes;
    private final AlignedBufferPool headerPool;
    private final CheckpointCodec.Layout layout;
    private final boolean metaAreaFitsFullIndex;
    /** FDP: ids the device reports, the ones data may use, and the reclaim unit size (0 = unknown). */
    private List<Integer> reportedPlacementIds = List.of();
    private java.util.Set<Integer> reportedPlacementSet = java.util.Set.of();
    private List<Integer> dataPlacementIds = List.of();
    private long reclaimUnitBytes;
    private final java.util.concurrent.ConcurrentHashMap<Integer, java.util.concurrent.atomic.LongAdder> bytesByPlacement =
            new java.util.concurrent.ConcurrentHashMap<>();
    private final AtomicLong deallocatedSlots = new AtomicLong();
    private final AtomicLong deallocateFailures = new AtomicLong();

    private final ReentrantLock lock = new ReentrantLock();
    private final HashMap<String, Entry> index = new HashMap<>();
    private final HashMap<String, Inflight> inflight = new HashMap<>();
    private final HashMap<ObjectMeta, ObjectMeta> metaInterner = new HashMap<>();
    private final SlotAllocator slots;
    private long dirtyCount;
    private long persistedCount;

    private final Object checkpointMutex = new Object();
    private long seq;
    private ScheduledExecutorService periodic;
    private final AtomicInteger outstanding = new AtomicInteger();
    private volatile boolean closed;

    // Status counters.
    private final AtomicLong crcMismatches = new AtomicLong();
    private final AtomicLong rolledBackKeys = new AtomicLong();
    private final AtomicLong deviceFullRejects = new AtomicLong();
    private final AtomicLong oversizeRejects = new AtomicLong();
    private final AtomicLong checkpointFailures = new AtomicLong();
    private volatile long checkpointsWritten;
    private volatile long lastCheckpointBytes;
    private volatile long lastCheckpointMillis;
    private volatile String lastCheckpointError;
    private volatile String recoveryNote = "not recovered";
    private volatile int recoveredKeys;
    private volatile int verifyDropped;

    private RawBlockCore(RawBlockCoreConfig config, BlockDevice device, boolean ownsDevice) throws IOException {
        this.config = config;
        this.device = device;
        this.ownsDevice = ownsDevice;
        this.blockAlign = config.blockAlign();
        this.headerBytes = config.headerBytes();
        this.slotBytes = config.slotBytes();
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
        this.containerBytes = config.containerBytes();
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
        int groupSlots = 1;
        if (config.fdpEnabled()) {
            discoverPlacement(config, device);
            if (reclaimUnitBytes > slotBytes) {
                groupSlots = (int) Math.min(reclaimUnitBytes / slotBytes, maxSlots);
            }
        }
        this.slots = new SlotAllocator((int) maxSlots, config.fdpSlotAffinityEnabled(), groupSlots);
        this.layout = new CheckpointCodec.Layout(config.devicePath(), capacityBytes, blockAlign, headerBytes, slotBytes,
                config.metaTotalBytes(), dataBase);
        long containerPayload = containerBytes - blockAlign;
        this.metaAreaFitsFullIndex = maxSlots * ESTIMATED_CHECKPOINT_BYTES_PER_ENTRY <= containerPayload;
        if (!metaAreaFitsFullIndex) {
            LOG.log(System.Logger.Level.WARNING, "raw_block on " + device.path() + ": the meta area ("
                    + config.metaTotalBytes() + " bytes, " + containerPayload + " per checkpoint) may not hold the index of"
                    + " a full device (" + maxSlots + " slots x ~" + ESTIMATED_CHECKPOINT_BYTES_PER_ENTRY
                    + " bytes); raise meta_total_bytes to about "
                    + OnDiskFormat.roundUp(2 * (maxSlots * ESTIMATED_CHECKPOINT_BYTES_PER_ENTRY + blockAlign), blockAlign)
                    + " or checkpoints will fail once it fills");
        }
        this.headerPool = new AlignedBufferPool(headerBytes, 4 * config.maxBatchKeys(),
                Math.max(blockAlign, device.bufferAlignment()));
        device.registerBuffers(headerPool.region());
    }

    /**
     * FDP at open: the device must carry placement ids and report the configured ones (RUH Status);
     * never assume id == index.
     */
    private void discoverPlacement(RawBlockCoreConfig config, BlockDevice device) throws IOException {
        if (!device.supportsPlacement()) {
            throw new IllegalArgumentException("raw_block config: fdp_enabled = true but " + device.path() + " (io_engine "
                    + device.engine() + ") cannot carry placement ids: FDP needs io_engine uring_cmd on an NVMe generic"
                    + " device /dev/ngXnY");
        }
        List<Integer> reported = device.placementIds();
        if (reported.isEmpty()) {
            throw new IOException(device.path() + " reports no placement ids (RUH Status is empty): enable FDP on its"
                    + " endurance group, or set fdp_enabled to false");
        }
        java.util.Set<Integer> set = new java.util.LinkedHashSet<>(reported);
        for (int id : config.fdpPlacementIds()) {
            if (!set.contains(id)) {
                throw new IllegalArgumentException("raw_block config: fdp_placement_ids has " + id + ", which "
                        + device.path() + " does not report (RUH Status lists " + reported + ")");
            }
        }
        int meta = config.metaCheckpointPlacementId();
        if (meta != 0 && !set.contains(meta)) {
            throw new IllegalArgumentException("raw_block config: meta_checkpoint_placement_id = " + meta + " is not"
                    + " reported by " + device.path() + " (RUH Status lists " + reported + ")");
        }
        List<Integer> data = new ArrayList<>();
        if (config.fdpPlacementIds().isEmpty()) {
            for (int id : reported) {
                if (id != 0 && id != meta) {
                    data.add(id);
                }
            }
        } else {
            data.addAll(config.fdpPlacementIds());
        }
        if (data.isEmpty()) {
            throw new IllegalArgumentException("raw_block config: no placement id is left for data on " + device.path()
                    + " (reported " + reported + ", metadata uses " + meta + ")");
        }
        try {
            reclaimUnitBytes = device.reclaimUnitBytes();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "reclaim unit size of " + device.path() + " unknown (" + e.getMessage()
                    + "): slots are not grouped by reclaim unit");
        }
        reportedPlacementIds = List.copyOf(reported);
        reportedPlacementSet = java.util.Set.copyOf(set);
        dataPlacementIds = List.copyOf(data);
    }

    /** FDP: the placement ids data may use (empty without FDP). */
    public List<Integer> dataPlacementIds() {
        return dataPlacementIds;
    }

    /** FDP: every id the device reported at open. */
    public List<Integer> reportedPlacementIds() {
        return reportedPlacementIds;
    }

    /** Opens the device named by the configuration with its {@code io_engine}, then recovers. */
    public static RawBlockCore open(RawBlockCoreConfig config) throws IOException {
        BlockDevice device = openDevice(config);
        try {
            return open(config, device, true);
        } catch (IOException | RuntimeException e) {
            device.close();
            throw e;
        }
    }

    /** Uses {@code device} (not closed by the core); recovers from what it holds. */
    public static RawBlockCore open(RawBlockCoreConfig config, BlockDevice device) throws IOException {
        return open(config, device, false);
    }

    private static RawBlockCore open(RawBlockCoreConfig config, BlockDevice device, boolean owns) throws IOException {
        RawBlockCore core = new RawBlockCore(config, device, owns);
        try {
            core.recover();
        } catch (IOException | RuntimeException e) {
            if (!owns) {
                device.unregisterBuffers(core.headerPool.region());
            }
            core.headerPool.close();
            throw e;
        }
        core.startPeriodic();
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
                .withDirect(config.useOdirect()).withBuffers(1 << 20, 0);
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

    long slotOffset(int slot) {
        return dataBase + (long) slot * slotBytes;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("RawBlockCore on " + config.devicePath() + " is closed");
        }
    }

    // ------------------------------------------------------------------ put

    /** A key accepted for writing. */
    private record Pending(int index, String key, PutRequest request, Inflight inflight, int placementId, int crc) {}

    /** Stores the keys and waits. @return per key: stored (or already stored) */
    public boolean[] put(List<PutRequest> requests) throws IOException {
        CompletableFuture<boolean[]> f = new CompletableFuture<>();
        putAsync(requests, f::complete);
        return await(f, "put");
    }

    /**
     * Stores the keys; {@code done} gets one result per request (true = stored now or already stored).
     * Duplicates within the call share the first one's result.
     *
     * @throws IllegalArgumentException for a placement id outside 1..65535, before anything is done
     */
    public void putAsync(List<PutRequest> requests, Completion done) {
        putAsync(requests, (PutCompletion) (results, fresh) -> done.onComplete(results));
    }

    /** Like {@link #putAsync(List, Completion)}, also telling which keys this call newly stored. */
    public void putAsync(List<PutRequest> requests, PutCompletion done) {
        checkOpen();
        for (PutRequest r : requests) {
            if (r.placementId() != null) {
                RawBlockCoreConfig.checkPlacementId("placement id of " + r.key(), r.placementId());
                if (config.fdpEnabled() && !reportedPlacementSet.contains(r.placementId())) {
                    // the device would silently write an unknown id to id 0: refuse it here
                    throw new IllegalArgumentException("put " + r.key() + ": placement id " + r.placementId()
                            + " is not reported by " + device.path() + " (RUH Status lists " + reportedPlacementIds
                            + "); nothing was written");
                }
            }
        }
        int n = requests.size();
        boolean[] results = new boolean[n];
        boolean[] fresh = new boolean[n];
        int[] sameAs = new int[n];
        Arrays.fill(sameAs, -1);
        List<Pending> accepted = new ArrayList<>(n);
        long maxPayload = maxPayloadBytes();
        lock.lock();
        try {
            HashMap<String, Integer> firstInCall = n > 1 ? new HashMap<>(n * 2) : null;
            for (int i = 0; i < n; i++) {
                PutRequest r = requests.get(i);
                String key = r.key();
                if (firstInCall != null) {
                    Integer first = firstInCall.putIfAbsent(key, i);
                    if (first != null) {
                        sameAs[i] = first;
                        continue;
                    }
                }
                long len = r.payload().byteSize();
                if (len <= 0 || len > maxPayload) {
                    oversizeRejects.incrementAndGet();
                    continue;
                }
                if (index.containsKey(key)) {
                    results[i] = true; // already stored: the original bytes stay
                    continue;
                }
                if (inflight.containsKey(key)) {
                    continue; // another put of this key is in flight
                }
                int pid = r.placementId() == null ? 0 : r.placementId();
                int slot = slots.allocate(pid);
                if (slot < 0) {
                    deviceFullRejects.incrementAndGet();
                    continue;
                }
                Inflight inf = new Inflight(slot);
                inflight.put(key, inf);
                accepted.add(new Pending(i, key, r, inf, pid, 0));
            }
            if (!accepted.isEmpty()) {
                outstanding.addAndGet(accepted.size());
            }
        } finally {
            lock.unlock();
        }
        if (accepted.isEmpty()) {
            finishPut(results, fresh, sameAs, done);
            return;
        }
        int chunk = config.maxBatchKeys();
        int chunks = (accepted.size() + chunk - 1) / chunk;
        AtomicInteger remaining = new AtomicInteger(chunks);
        Runnable chunkDone = () -> {
            if (remaining.decrementAndGet() == 0) {
                finishPut(results, fresh, sameAs, done);
            }
        };
        for (int c = 0; c < chunks; c++) {
            submitPutChunk(accepted.subList(c * chunk, Math.min(accepted.size(), (c + 1) * chunk)), results, fresh,
                    chunkDone);
        }
    }

    private void submitPutChunk(List<Pending> chunk, boolean[] results, boolean[] fresh, Runnable chunkDone) {
        IoBatch batch = new IoBatch(2 * chunk.size());
        MemorySegment[] headers = new MemorySegment[chunk.size()];
        List<Pending> prepared = new ArrayList<>(chunk.size());
        try {
            for (int k = 0; k < chunk.size(); k++) {
                Pending p = chunk.get(k);
                MemorySegment payload = p.request().payload();
                long len = payload.byteSize();
                int crc = OnDiskFormat.crc32c(payload);
                headers[k] = headerBuffer();
                OnDiskFormat.writeSlotHeader(headers[k], SlotIdentity.of(p.key()), len, crc);
                long off = slotOffset(p.inflight().slot);
                batch.write(off, headers[k], p.placementId());
                batch.write(off + headerBytes, writablePayload(payload), p.placementId());
                prepared.add(new Pending(p.index(), p.key(), p.request(), p.inflight(), p.placementId(), crc));
            }
            device.submit(batch, b -> completePutChunk(prepared, b, headers, results, fresh, chunkDone));
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "put of " + chunk.size() + " keys on " + device.path()
                    + " was not submitted, rolled back: " + e.getMessage());
            settlePutChunk(chunk, false, results, fresh);
            releaseHeaders(headers);
            chunkDone.run();
        }
    }

    private void completePutChunk(List<Pending> chunk, IoBatch batch, MemorySegment[] headers, boolean[] results,
            boolean[] fresh, Runnable chunkDone) {
        boolean ok = true;
        for (int i = 0; i < batch.size(); i++) {
            if (!batch.isComplete(i)) {
                ok = false;
                LOG.log(System.Logger.Level.WARNING, "put of " + chunk.size() + " keys rolled back: "
                        + (batch.failed(i) ? batch.failure(i).getMessage() : "short write at op " + i));
                break;
            }
        }
        settlePutChunk(chunk, ok, results, fresh);
        releaseHeaders(headers);
        chunkDone.run();
    }

    /** Commits every key of a chunk, or rolls every one back (slot freed, nothing indexed). */
    private void settlePutChunk(List<Pending> chunk, boolean written, boolean[] results, boolean[] fresh) {
        lock.lock();
        try {
            for (Pending p : chunk) {
                Inflight inf = p.inflight();
                if (inflight.get(p.key()) == inf) {
                    inflight.remove(p.key());
                }
                if (!written || inf.canceled) {
                    slots.free(inf.slot);
                    if (!written) {
                        rolledBackKeys.incrementAndGet();
                    }
                    results[p.index()] = false;
                } else {
                    ObjectMeta meta = intern(p.request().meta());
                    index.put(p.key(), new Entry(inf.slot, (int) p.request().payload().byteSize(), meta, p.crc(), true));
                    slots.markUsed(inf.slot);
                    bytesByPlacement.computeIfAbsent(p.placementId(), k -> new java.util.concurrent.atomic.LongAdder())
                            .add(headerBytes + p.request().payload().byteSize());
                    dirtyCount++;
                    results[p.index()] = true;
                    fresh[p.index()] = true;
                }
            }
        } finally {
            lock.unlock();
        }
        leave(chunk.size());
    }

    private ObjectMeta intern(ObjectMeta meta) {
        if (meta == null) {
            return null;
        }
        ObjectMeta known = metaInterner.get(meta);
        if (known != null) {
            return known;
        }
        if (metaInterner.size() < 4096) { // most chunks share a handful of shapes
            metaInterner.put(meta, meta);
        }
        return meta;
    }

    private static void finishPut(boolean[] results, boolean[] fresh, int[] sameAs, PutCompletion done) {
        for (int i = 0; i < results.length; i++) {
            if (sameAs[i] >= 0) {
                results[i] = results[sameAs[i]]; // a duplicate in the call shares the result, not the credit
            }
        }
        try {
            done.onComplete(results, fresh);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "completion callback threw", t);
        }
    }

    private static void deliver(Completion done, boolean[] results) {
        try {
            done.onComplete(results);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "completion callback threw", t);
        }
    }

    /** The payload itself when the device can write it as is, else an aligned, zero-padded copy. */
    private MemorySegment writablePayload(MemorySegment payload) {
        long len = payload.byteSize();
        if (payload.isNative() && len % blockAlign == 0 && payload.address() % device.bufferAlignment() == 0) {
            return payload;
        }
        MemorySegment copy = Arena.ofAuto().allocate(OnDiskFormat.roundUp(len, blockAlign), blockAlign);
        MemorySegment.copy(payload, 0, copy, 0, len);
        return copy;
    }

    private MemorySegment headerBuffer() {
        MemorySegment h = headerPool.tryAcquire();
        return h != null ? h : Arena.ofAuto().allocate(headerBytes, blockAlign);
    }

    private void releaseHeaders(MemorySegment[] headers) {
        for (MemorySegment h : headers) {
            if (h != null && headerPool.contains(h)) {
                headerPool.release(h);
            }
        }
    }

    private void leave(int ops) {
        if (outstanding.addAndGet(-ops) == 0 && closed) {
            synchronized (outstanding) {
                outstanding.notifyAll();
            }
        }
    }

    // ------------------------------------------------------------------ lookups, locks, delete

    /** @return per key: committed; with {@code lock}, each hit's lock count goes up by one */
    public boolean[] exists(List<String> keys, boolean lockHits) {
        checkOpen();
        boolean[] out = new boolean[keys.size()];
        lock.lock();
        try {
            for (int i = 0; i < out.length; i++) {
                Entry e = index.get(keys.get(i));
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
        checkOpen();
        lock.lock();
        try {
            for (String k : keys) {
                Entry e = index.get(k);
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
            Entry e = index.get(key);
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
        checkOpen();
        DeleteOutcome[] out = new DeleteOutcome[keys.size()];
        boolean trim = device.supportsDeallocate();
        List<Integer> toTrim = trim ? new ArrayList<>() : null;
        lock.lock();
        try {
            for (int i = 0; i < out.length; i++) {
                String k = keys.get(i);
                Entry e = index.get(k);
                if (e != null) {
                    if (e.locks > 0 && !force) {
                        out[i] = DeleteOutcome.LOCKED;
                        continue;
                    }
                    index.remove(k);
                    dirtyCount++;
                    if (e.readers > 0) {
                        e.deleted = true; // freed when the last load of it ends
                    } else if (trim) {
                        toTrim.add(e.slot); // reserved until the device has been told
                    } else {
                        slots.free(e.slot);
                    }
                    out[i] = DeleteOutcome.REMOVED;
                    continue;
                }
                Inflight inf = inflight.remove(k);
                if (inf != null) {
                    inf.canceled = true;
                    out[i] = DeleteOutcome.CANCELLED;
                } else {
                    out[i] = DeleteOutcome.MISSING;
                }
            }
        } finally {
            lock.unlock();
        }
        if (trim && !toTrim.isEmpty()) {
            deallocateAndFree(toTrim);
        }
        return out;
    }

    /**
     * Tells the device the freed slots hold no live data (NVMe deallocate), then frees them: a slot is
     * never reused before its deallocate, which would otherwise drop the new data.
     */
    private void deallocateAndFree(List<Integer> freed) {
        java.util.Collections.sort(freed);
        int from = 0;
        while (from < freed.size()) {
            int to = from + 1;
            while (to < freed.size() && freed.get(to) == freed.get(to - 1) + 1) {
                to++;
            }
            try {
                device.deallocate(slotOffset(freed.get(from)), (long) (to - from) * slotBytes);
                deallocatedSlots.addAndGet(to - from);
            } catch (IOException | RuntimeException e) {
                deallocateFailures.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING, "deallocate of " + (to - from) + " slots on " + device.path()
                        + " failed (the slots are reused anyway): " + e.getMessage());
            }
            from = to;
        }
        lock.lock();
        try {
            for (int slot : freed) {
                slots.free(slot);
            }
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ load

    private record PlannedLoad(int index, Entry entry, MemorySegment destination, MemorySegment target) {}

    /** Loads and waits. @return per key: loaded */
    public boolean[] load(List<LoadRequest> requests) throws IOException {
        CompletableFuture<boolean[]> f = new CompletableFuture<>();
        loadAsync(requests, f::complete);
        return await(f, "load");
    }

    /**
     * Reads each found key's payload into its destination; misses are left untouched. A payload whose
     * checksum does not match is reported as a miss (its destination may then hold the bad bytes).
     *
     * @throws IllegalArgumentException when a destination is smaller than the stored payload (nothing
     *         is read then)
     */
    public void loadAsync(List<LoadRequest> requests, Completion done) {
        checkOpen();
        boolean[] results = new boolean[requests.size()];
        List<PlannedLoad> plan = new ArrayList<>(requests.size());
        lock.lock();
        try {
            for (int i = 0; i < requests.size(); i++) {
                LoadRequest r = requests.get(i);
                Entry e = index.get(r.key());
                if (e == null) {
                    continue;
                }
                if (r.destination().byteSize() < e.size) {
                    for (PlannedLoad p : plan) {
                        p.entry().readers--;
                        freeIfDeleted(p.entry());
                    }
                    throw new IllegalArgumentException("load " + r.key() + ": destination of "
                            + r.destination().byteSize() + " bytes is smaller than the stored payload of " + e.size
                            + " bytes; nothing was loaded");
                }
                e.readers++;
                plan.add(new PlannedLoad(i, e, r.destination(), null));
            }
            if (!plan.isEmpty()) {
                outstanding.addAndGet(plan.size());
            }
        } finally {
            lock.unlock();
        }
        if (plan.isEmpty()) {
            deliver(done, results);
            return;
        }
        IoBatch batch = new IoBatch(plan.size());
        List<PlannedLoad> targets = new ArrayList<>(plan.size());
        try {
            for (PlannedLoad p : plan) {
                long padded = OnDiskFormat.roundUp(p.entry().size, blockAlign);
                MemorySegment dest = p.destination();
                MemorySegment target = dest.isNative() && dest.byteSize() >= padded
                        && dest.address() % device.bufferAlignment() == 0
                        ? dest.asSlice(0, padded)
                        : Arena.ofAuto().allocate(padded, blockAlign);
                batch.read(slotOffset(p.entry().slot) + headerBytes, target);
                targets.add(new PlannedLoad(p.index(), p.entry(), dest, target));
            }
            device.submit(batch, b -> completeLoad(targets, b, results, done));
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "load of " + plan.size() + " keys on " + device.path()
                    + " was not submitted: " + e.getMessage());
            endLoads(plan);
            deliver(done, results);
        }
    }

    private void completeLoad(List<PlannedLoad> plan, IoBatch batch, boolean[] results, Completion done) {
        // Runs on the device's I/O thread. Whatever happens to one key (e.g. a destination from a
        // confined or closed arena cannot be touched here), the readers are released and the caller is
        // answered: an escaping exception would leave load() waiting, and close(), forever.
        try {
            for (int i = 0; i < plan.size(); i++) {
                PlannedLoad p = plan.get(i);
                Entry e = p.entry();
                if (batch.failed(i) || batch.result(i) < e.size) {
                    continue;
                }
                try {
                    MemorySegment payload = p.target().asSlice(0, e.size);
                    if (e.hasCrc && OnDiskFormat.crc32c(payload) != e.crc) {
                        crcMismatches.incrementAndGet();
                        LOG.log(System.Logger.Level.WARNING, "payload of slot " + e.slot + " on " + device.path()
                                + " fails its CRC32C: reported as a miss");
                        continue;
                    }
                    if (p.target().address() != p.destination().address()) {
                        MemorySegment.copy(p.target(), 0, p.destination(), 0, e.size);
                    }
                    results[p.index()] = true;
                } catch (RuntimeException ex) {
                    LOG.log(System.Logger.Level.WARNING, "load of slot " + e.slot + " on " + device.path()
                            + " reported as a miss: its destination is not usable from the I/O thread (a"
                            + " destination must be from a shared, global or automatic arena): " + ex);
                }
            }
        } finally {
            endLoads(plan);
            deliver(done, results);
        }
    }

    private void endLoads(List<PlannedLoad> plan) {
        lock.lock();
        try {
            for (PlannedLoad p : plan) {
                p.entry().readers--;
                freeIfDeleted(p.entry());
            }
        } finally {
            lock.unlock();
        }
        leave(plan.size());
    }

    private void freeIfDeleted(Entry e) {
        if (e.deleted && e.readers == 0) {
            e.deleted = false;
            slots.free(e.slot);
        }
    }

    private static boolean[] await(CompletableFuture<boolean[]> f, String what) throws IOException {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for " + what, e);
        } catch (ExecutionException e) {
            throw new IOException(what + " failed", e.getCause());
        }
    }

    // ------------------------------------------------------------------ checkpoints

    /**
     * Writes a checkpoint now if anything changed since the last one.
     *
     * @throws IOException when it cannot be written (e.g. it does not fit the meta area); the state
     *         stays dirty and is tried again by the next checkpoint
     */
    public void checkpointNow() throws IOException {
        checkpoint();
    }

    private boolean checkpoint() throws IOException {
        synchronized (checkpointMutex) {
            List<CheckpointCodec.SnapshotEntry> snapshot;
            int nextSlot;
            long dirtyAt;
            lock.lock();
            try {
                if (dirtyCount == persistedCount) {
                    return false;
                }
                dirtyAt = dirtyCount;
                nextSlot = slots.nextSlot();
                snapshot = new ArrayList<>(index.size());
                for (Map.Entry<String, Entry> e : index.entrySet()) {
                    Entry en = e.getValue();
                    snapshot.add(new CheckpointCodec.SnapshotEntry(e.getKey(), slotOffset(en.slot), en.size, en.meta));
                }
            } finally {
                lock.unlock();
            }
            long t0 = System.nanoTime();
            byte[] json = CheckpointCodec.encode(layout, nextSlot, snapshot);
            long room = containerBytes - blockAlign;
            if (json.length > room) {
                String msg = "checkpoint of " + snapshot.size() + " keys is " + json.length + " bytes but a container of"
                        + " the meta area holds " + room + " (meta_total_bytes " + config.metaTotalBytes()
                        + "): NOT written; raise meta_total_bytes";
                failCheckpoint(msg, null);
                throw new IOException(msg);
            }
            long next = seq + 1;
            long base = ((next - 1) % 2) * containerBytes;
            int pid = config.metaCheckpointPlacementId();
            CRC32 crc = new CRC32();
            crc.update(json);
            try (Arena arena = Arena.ofShared()) {
                MemorySegment payload = arena.allocate(OnDiskFormat.roundUp(json.length, blockAlign), blockAlign);
                MemorySegment.copy(json, 0, payload, ValueLayout.JAVA_BYTE, 0, json.length);
                IoBatch b = new IoBatch(1);
                b.write(base + blockAlign, payload, pid);
                device.execute(b);
                device.flush(); // the payload is durable before the header that commits it
                MemorySegment header = arena.allocate(blockAlign, blockAlign);
                OnDiskFormat.writeContainerHeader(header, next, json.length, (int) crc.getValue());
                b.reset();
                b.write(base, header, pid);
                device.execute(b);
                device.flush();
            } catch (IOException e) {
                failCheckpoint("checkpoint " + next + " could not be written: " + e.getMessage(), e);
                throw e;
            }
            seq = next;
            lock.lock();
            try {
                persistedCount = dirtyAt;
            } finally {
                lock.unlock();
            }
            checkpointsWritten++;
            lastCheckpointBytes = json.length;
            lastCheckpointMillis = (System.nanoTime() - t0) / 1_000_000;
            lastCheckpointError = null;
            return true;
        }
    }

    private void failCheckpoint(String message, Throwable cause) {
        checkpointFailures.incrementAndGet();
        lastCheckpointError = message;
        LOG.log(System.Logger.Level.ERROR, "raw_block on " + device.path() + ": " + message, cause);
    }

    private void startPeriodic() {
        if (!config.metaEnablePeriodic()) {
            return;
        }
        periodic = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon()
                .name("fdpblock-checkpoint-" + Path.of(config.devicePath()).getFileName()).unstarted(r));
        long every = config.metaCheckpointIntervalSec();
        // A fixed interval, whatever the I/O load: the crash window stays bounded (the reference skips
        // checkpoints while I/O is busy, which leaves it unbounded under sustained writes).
        periodic.scheduleWithFixedDelay(() -> {
            try {
                checkpoint();
            } catch (IOException | RuntimeException e) {
                // already logged and in status
            }
        }, every, every, TimeUnit.SECONDS);
    }

    // ------------------------------------------------------------------ recovery

    private void recover() throws IOException {
        if (!config.loadCheckpointOnInit()) {
            recoveryNote = "load_checkpoint_on_init is off: started empty";
            slots.rebuild(0, new boolean[0], null);
            return;
        }
        OnDiskFormat.ContainerHeader[] headers = new OnDiskFormat.ContainerHeader[2];
        try (Arena arena = Arena.ofShared()) {
            MemorySegment blocks = arena.allocate(2L * blockAlign, blockAlign);
            IoBatch b = new IoBatch(2);
            b.read(0, blocks.asSlice(0, blockAlign));
            b.read(containerBytes, blocks.asSlice(blockAlign, blockAlign));
            device.execute(b);
            headers[0] = OnDiskFormat.readContainerHeader(blocks.asSlice(0, blockAlign));
            headers[1] = OnDiskFormat.readContainerHeader(blocks.asSlice(blockAlign, blockAlign));
        }
        long room = containerBytes - blockAlign;
        int first = headers[1].plausible(room) && (!headers[0].plausible(room) || headers[1].seq() > headers[0].seq())
                ? 1 : 0;
        List<String> notes = new ArrayList<>();
        for (int c : new int[] {first, 1 - first}) {
            OnDiskFormat.ContainerHeader h = headers[c];
            if (!h.plausible(room)) {
                notes.add("container " + c + ": no valid header");
                continue;
            }
            byte[] payload = readPayload(c, h.payloadLength());
            CRC32 crc = new CRC32();
            crc.update(payload);
            if ((int) crc.getValue() != h.crc32()) {
                notes.add("container " + c + " (seq " + h.seq() + "): CRC mismatch");
                LOG.log(System.Logger.Level.WARNING, "raw_block on " + device.path() + ": checkpoint container " + c
                        + " (seq " + h.seq() + ") fails its CRC; trying the other one");
                continue;
            }
            CheckpointCodec.Decoded decoded;
            try {
                decoded = CheckpointCodec.decode(payload);
            } catch (IOException e) {
                notes.add("container " + c + " (seq " + h.seq() + "): unreadable JSON");
                continue;
            }
            String mismatch = CheckpointCodec.layoutMismatch(decoded.root(), layout);
            if (mismatch == null && (decoded.nextSlot() == null || decoded.nextSlot() < 0
                    || decoded.nextSlot() > slots.maxSlots())) {
                mismatch = "next_slot " + decoded.nextSlot() + " outside 0.." + slots.maxSlots();
            }
            seq = h.seq();
            if (mismatch != null) {
                recoveryNote = "checkpoint seq " + h.seq() + " rejected, layout differs: " + mismatch + "; started empty";
                LOG.log(System.Logger.Level.WARNING, "raw_block on " + device.path() + ": " + recoveryNote);
                slots.rebuild(0, new boolean[0], null);
                return;
            }
            apply(decoded, h.seq(), notes);
            return;
        }
        recoveryNote = "no valid checkpoint (" + String.join("; ", notes) + "): started empty";
        slots.rebuild(0, new boolean[0], null);
    }

    private byte[] readPayload(int container, long length) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(OnDiskFormat.roundUp(length, blockAlign), blockAlign);
            IoBatch b = new IoBatch(1);
            b.read(container * containerBytes + blockAlign, buf);
            device.execute(b);
            return buf.asSlice(0, length).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private void apply(CheckpointCodec.Decoded decoded, long fromSeq, List<String> notes) throws IOException {
        int maxSlots = slots.maxSlots();
        boolean[] used = new boolean[maxSlots];
        int skipped = 0;
        int highest = -1;
        long maxPayload = maxPayloadBytes();
        for (CheckpointCodec.RawEntry re : decoded.entries()) {
            long rel = re.offset() - dataBase;
            if (re.key().isEmpty() || rel < 0 || rel % slotBytes != 0 || rel / slotBytes >= maxSlots
                    || re.size() <= 0 || re.size() > maxPayload || used[(int) (rel / slotBytes)]) {
                skipped++;
                continue;
            }
            int slot = (int) (rel / slotBytes);
            used[slot] = true;
            highest = Math.max(highest, slot);
            index.put(re.key(), new Entry(slot, (int) re.size(), intern(re.meta()), 0, false));
        }
        int nextSlot = (int) Math.max(decoded.nextSlot(), highest + 1);
        if (config.metaVerifyOnLoad()) {
            verifySlotHeaders(used);
        }
        slots.rebuild(nextSlot, used, null);
        recoveredKeys = index.size();
        recoveryNote = "recovered " + index.size() + " keys from checkpoint seq " + fromSeq
                + (skipped > 0 ? ", skipped " + skipped + " bad entries" : "")
                + (verifyDropped > 0 ? ", dropped " + verifyDropped + " whose slot header disagreed" : "")
                + (notes.isEmpty() ? "" : " (" + String.join("; ", notes) + ")");
        LOG.log(System.Logger.Level.INFO, "raw_block on " + device.path() + ": " + recoveryNote);
    }

    /**
     * Reads every entry's slot header; drops entries whose magic, identity or length disagree (the
     * next checkpoint persists that) and takes the payload CRC from headers that carry one.
     */
    private void verifySlotHeaders(boolean[] used) throws IOException {
        List<Map.Entry<String, Entry>> all = new ArrayList<>(index.entrySet());
        int dropped = 0;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate((long) VERIFY_BATCH * headerBytes, blockAlign);
            IoBatch b = new IoBatch(VERIFY_BATCH);
            for (int from = 0; from < all.size(); from += VERIFY_BATCH) {
                int to = Math.min(all.size(), from + VERIFY_BATCH);
                b.reset();
                for (int i = from; i < to; i++) {
                    b.read(slotOffset(all.get(i).getValue().slot),
                            buf.asSlice((long) (i - from) * headerBytes, headerBytes));
                }
                device.execute(b);
                for (int i = from; i < to; i++) {
                    String key = all.get(i).getKey();
                    Entry e = all.get(i).getValue();
                    OnDiskFormat.SlotHeader h = OnDiskFormat.readSlotHeader(
                            buf.asSlice((long) (i - from) * headerBytes, headerBytes));
                    if (!h.magicOk() || h.identity() != SlotIdentity.of(key) || h.payloadLength() != e.size) {
                        index.remove(key);
                        used[e.slot] = false;
                        dropped++;
                    } else if (h.hasCrc()) {
                        index.put(key, new Entry(e.slot, e.size, e.meta, h.crc32c(), true));
                    }
                }
            }
        }
        if (dropped > 0) {
            verifyDropped = dropped;
            dirtyCount++; // the next checkpoint persists the cleanup
            LOG.log(System.Logger.Level.WARNING, "raw_block on " + device.path() + ": dropped " + dropped
                    + " recovered keys whose slot header disagrees (magic, identity or length)");
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
            int locked = 0;
            for (Entry e : index.values()) {
                if (e.locks > 0) {
                    locked++;
                }
            }
            s.put("is_healthy", !closed && lastCheckpointError == null);
            s.put("device_path", config.devicePath());
            s.put("io_engine", device.engine().configName());
            s.put("capacity_bytes", capacityBytes);
            s.put("slot_bytes", slotBytes);
            s.put("max_slots", slots.maxSlots());
            s.put("used_slots", slots.usedSlots());
            s.put("free_slots", slots.freeSlots());
            s.put("next_slot", slots.nextSlot());
            s.put("keys", index.size());
            s.put("locked_keys", locked);
            s.put("inflight_keys", inflight.size());
            s.put("dirty", dirtyCount != persistedCount);
            s.put("fdp_enabled", config.fdpEnabled());
            s.put("fdp_reported_placement_ids", reportedPlacementIds);
            s.put("fdp_data_placement_ids", dataPlacementIds);
            s.put("fdp_reclaim_unit_bytes", reclaimUnitBytes);
            s.put("slots_per_reclaim_unit", slots.groupSlots());
            Map<Integer, Long> byPid = new java.util.TreeMap<>();
            bytesByPlacement.forEach((pid, v) -> byPid.put(pid, v.sum()));
            s.put("bytes_written_by_placement_id", byPid);
            s.put("deallocated_slots", deallocatedSlots.get());
            s.put("deallocate_failures", deallocateFailures.get());
            s.put("slot_affinity_hits", slots.affinityHits());
            s.put("slot_affinity_fallbacks", slots.affinityFallbacks());
        } finally {
            lock.unlock();
        }
        s.put("checkpoint_seq", seq);
        s.put("checkpoints_written", checkpointsWritten);
        s.put("last_checkpoint_bytes", lastCheckpointBytes);
        s.put("last_checkpoint_ms", lastCheckpointMillis);
        s.put("checkpoint_failures", checkpointFailures.get());
        s.put("last_checkpoint_error", lastCheckpointError);
        s.put("meta_container_bytes", containerBytes);
        s.put("meta_area_fits_full_index", metaAreaFitsFullIndex);
        s.put("recovery", recoveryNote);
        s.put("recovered_keys", recoveredKeys);
        s.put("verify_dropped_keys", verifyDropped);
        s.put("crc_mismatches", crcMismatches.get());
        s.put("rolled_back_keys", rolledBackKeys.get());
        s.put("device_full_rejects", deviceFullRejects.get());
        s.put("oversize_rejects", oversizeRejects.get());
        return s;
    }

    /**
     * Waits for the puts and loads in flight, writes a final checkpoint when anything changed, and
     * closes the device if the core opened it. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (periodic != null) {
            periodic.shutdownNow();
            try {
                periodic.awaitTermination(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (outstanding) {
            while (outstanding.get() > 0) {
                try {
                    outstanding.wait(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        try {
            checkpoint();
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "final checkpoint on " + device.path() + " failed", e);
        }
        if (ownsDevice) {
            device.close();
        } else {
            try {
                device.unregisterBuffers(headerPool.region());
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not unregister the header buffers from " + device.path(), e);
            }
        }
        headerPool.close();
    }
}
