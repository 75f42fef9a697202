package io.fdpblock.bench;

import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.IoStats;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.linux.EventFd;
import io.fdpblock.linux.IoMemory;
import io.fdpblock.linux.Poller;
import io.fdpblock.util.KeyHash;

import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Our side of the adapter cases: a {@link RawBlockL2Adapter} (io_uring) on the bench file, driven the way
 * LMCache drives it: tasks of {@code keysPerTask} chunks submitted, the adapter's eventfd awaited, results
 * collected, the next task submitted, with {@code chunksInFlight} chunks in flight in all. Chunk buffers
 * are caller-owned, aligned and registered with the device (zero-copy, fixed-buffer I/O), and each task
 * takes the buffers free longest in a pool of {@code bufferBytes}: by default as many bytes as the chunks
 * in flight, as fio's job has one buffer per I/O in flight, since what the buffers' memory costs the device
 * is part of what is compared (on this project's VM, 1 MiB reads into 256 MiB of buffers ran at 0.6-0.8x
 * of the same reads into 16 MiB: the host copies into memory no cache holds; docs/benchmarks.md). A larger
 * pool, as a service's, is measured with {@code --adapter-buffers}.
 *
 * <p>The store case cycles through a fixed set of keys sized to the device: a key group stored before is
 * deleted just before it is stored again (a delete is an in-memory operation, counted in our time).
 *
 * <p>Each window also says how full the queue was: a chunk's latency is its task's, submit to the
 * result taken after the eventfd (percentiles per chunk; {@code depth_littles_law} = chunks per second x
 * mean latency, the chunks in flight as the adapter's user sees them), and the device's ring figures
 * ({@code ring_depth_avg}: I/Os in the kernel, time-averaged; a load reads a slot header per chunk too
 * when the chunk's CRC is not known, so that is up to twice the chunks).
 */
public final class AdapterWorkload implements AutoCloseable {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String MODEL = "fdpblock-bench/model";
    /**
     * Slots the headroom store case leaves free: four times the 16 chunks in flight (3 % of the 2 GiB bench
     * file), room for the writes in flight while the commit of the deletes before them is made durable.
     */
    public static final int HEADROOM_SLOTS = 64;
    /** Fraction of the slots stored at which the eviction-rounds store case deletes the oldest keys. */
    public static final double EVICT_HIGH = 0.95;
    /** Fraction of the slots stored that an eviction round deletes down to. */
    public static final double EVICT_LOW = 0.90;

    private final RawBlockL2Adapter adapter;
    private final int chunkBytes;
    private final int keysPerTask;
    private final int tasksInFlight;
    private final List<List<ObjectKey>> groups = new ArrayList<>();
    /** Sets of {@code keysPerTask} buffers, one per task in flight; free ones in the order they were freed. */
    private final List<List<MemoryObj>> taskObjects = new ArrayList<>();
    private final ArrayDeque<Integer> freeBuffers = new ArrayDeque<>();
    /** A poller for each of the adapter's store and load eventfds, kept: a wait allocates nothing. */
    private final Poller storeWait;
    private final Poller loadWait;
    private final boolean[] stored;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment region;
    private final boolean registered;
    private int nextGroup;
    /** Groups the store cycles through: all, or fewer to leave headroom. */
    private int activeGroups;
    /** The eviction-rounds store: when the groups stored reach the first, delete down to the second; else 0. */
    private int evictAtGroups;
    private int evictToGroups;
    private long evictionRounds;

    private AdapterWorkload(RawBlockL2Adapter adapter, int chunkBytes, int chunksInFlight, int keysPerTask,
            long bufferBytes) throws IOException {
        this.adapter = adapter;
        this.chunkBytes = chunkBytes;
        this.keysPerTask = keysPerTask;
        this.tasksInFlight = Math.max(1, chunksInFlight / keysPerTask);
        int maxSlots = adapter.core().maxSlots();
        int groupCount = maxSlots / keysPerTask;
        if (groupCount <= tasksInFlight + 1) {
            throw new IllegalArgumentException("the device holds only " + maxSlots + " chunks of " + chunkBytes
                    + " bytes: too few for " + chunksInFlight + " in flight; use a larger --size");
        }
        for (int g = 0; g < groupCount; g++) {
            List<ObjectKey> keys = new ArrayList<>(keysPerTask);
            for (int k = 0; k < keysPerTask; k++) {
                keys.add(key(g * keysPerTask + k));
            }
            keys.forEach(ObjectKey::encoded); // encode once, outside any measured window
            groups.add(List.copyOf(keys));
        }
        stored = new boolean[groupCount];
        activeGroups = groupCount;
        int align = Math.max(4096, adapter.core().device().bufferAlignment());
        long setBytes = (long) chunkBytes * keysPerTask;
        int sets = (int) Math.max(tasksInFlight, bufferBytes / setBytes); // a set per task in flight at least
        region = IoMemory.allocate(arena, setBytes * sets, align); // as a user should
        SplittableRandom r = new SplittableRandom(42);
        for (long o = 0; o < region.byteSize(); o += 8) {
            region.set(ValueLayout.JAVA_LONG, o, r.nextLong());
        }
        for (int t = 0; t < sets; t++) {
            freeBuffers.add(t);
            List<MemoryObj> objs = new ArrayList<>(keysPerTask);
            for (int k = 0; k < keysPerTask; k++) {
                objs.add(MemoryObj.of(region.asSlice(((long) t * keysPerTask + k) * chunkBytes, chunkBytes)));
            }
            taskObjects.add(List.copyOf(objs));
        }
        registered = adapter.core().device().registerBuffers(region);
        storeWait = Poller.of(adapter.storeEventFd());
        loadWait = Poller.of(adapter.loadEventFd());
    }

    static ObjectKey key(int i) {
        byte[] hash = new byte[16];
        ByteBuffer.wrap(hash).putLong(0x6664_7062_6c6f_636bL).putLong(i);
        return ObjectKey.of(MODEL, 0, hash);
    }

    /** The configuration used for the bench file: 1 MiB chunks plus a 4 KiB slot header, io_uring, no FDP. */
    static RawBlockCoreConfig config(Path file, long sizeBytes, int chunkBytes, int chunksInFlight,
            RawBlockCoreConfig.VerifyPayload verify) {
        return RawBlockCoreConfig.builder(file.toString(), chunkBytes + RawBlockCoreConfig.DEFAULT_HEADER_BYTES)
                .capacityBytes(sizeBytes)
                .metaTotalBytes(16L << 20)
                .ioEngine(IoEngine.IO_URING)
                .iouringQueueDepth(Math.max(64, 4 * chunksInFlight))
                .verifyPayload(verify)
                .format(true) // the bench's own scratch file, holding fio's bytes between rounds: formatted as asked
                .metaEnablePeriodic(false) // no checkpoint lands inside a measured window by chance
                .build();
    }

    /**
     * Opens the adapter on {@code file} (created at {@code sizeBytes} if missing), its chunk buffers as many
     * as the chunks in flight.
     *
     * @param keysPerTask chunks per store or load task; {@code chunksInFlight / keysPerTask} tasks in flight
     */
    public static AdapterWorkload open(Path file, long sizeBytes, int chunkBytes, int chunksInFlight, int keysPerTask)
            throws IOException {
        return open(file, sizeBytes, chunkBytes, chunksInFlight, keysPerTask, RawBlockCoreConfig.VerifyPayload.ALWAYS,
                (long) chunkBytes * chunksInFlight);
    }

    /**
     * @param verify the store's {@code verify_payload} (what each load checks)
     * @param bufferBytes the chunk buffers the tasks take in turn, in bytes (at least a set per task in flight)
     */
    public static AdapterWorkload open(Path file, long sizeBytes, int chunkBytes, int chunksInFlight, int keysPerTask,
            RawBlockCoreConfig.VerifyPayload verify, long bufferBytes) throws IOException {
        if (keysPerTask < 1 || keysPerTask > chunksInFlight) {
            throw new IllegalArgumentException("keys per task " + keysPerTask + " must be in 1.." + chunksInFlight);
        }
        RawBlockL2Adapter a = RawBlockL2Adapter.open(config(file, sizeBytes, chunkBytes, chunksInFlight, verify));
        try {
            return new AdapterWorkload(a, chunkBytes, chunksInFlight, keysPerTask, bufferBytes);
        } catch (IOException | RuntimeException e) {
            a.close();
            throw e;
        }
    }

    public RawBlockL2Adapter adapter() {
        return adapter;
    }

    public int keysPerTask() {
        return keysPerTask;
    }

    public int tasksInFlight() {
        return tasksInFlight;
    }

    /** Keys the workload cycles through. */
    public int keyCount() {
        return groups.size() * keysPerTask;
    }

    /** Keys the store cycles through when it leaves {@code headroomSlots} free. */
    public int keyCount(int headroomSlots) {
        return groupsFor(headroomSlots) * keysPerTask;
    }

    private int groupsFor(int headroomSlots) {
        int free = adapter.core().maxSlots() - keyCount();
        int groupsLess = Math.max(0, (headroomSlots - free + keysPerTask - 1) / keysPerTask);
        int n = groups.size() - groupsLess;
        if (n <= tasksInFlight + 1) {
            throw new IllegalArgumentException("the device holds only " + adapter.core().maxSlots() + " chunks: too few"
                    + " to leave " + headroomSlots + " free with " + tasksInFlight + " tasks in flight; use a larger --size");
        }
        return n;
    }

    /** The chunk buffers are registered with the device (fixed-buffer I/O). */
    public boolean buffersRegistered() {
        return registered;
    }

    /** The chunk buffers the tasks take in turn, in bytes. */
    public long bufferPoolBytes() {
        return region.byteSize();
    }

    /** Stores chunks for the ramp, then for the measured window, cycling through every key (a full device). */
    public Measurement store(long rampNanos, long measureNanos) throws IOException {
        return store(rampNanos, measureNanos, 0);
    }

    /**
     * Stores chunks for the ramp, then for the measured window, cycling through keys that leave at least
     * {@code headroomSlots} slots free (the keys beyond them are deleted first, untimed).
     */
    public Measurement store(long rampNanos, long measureNanos, int headroomSlots) throws IOException {
        int n = groupsFor(headroomSlots);
        List<ObjectKey> beyond = new ArrayList<>();
        for (int g = n; g < groups.size(); g++) {
            if (stored[g]) {
                beyond.addAll(groups.get(g));
                stored[g] = false;
            }
        }
        adapter.delete(beyond);
        activeGroups = n;
        nextGroup = nextGroup >= n ? 0 : nextGroup;
        try {
            return pipeline(true, rampNanos, measureNanos, Long.MAX_VALUE);
        } finally {
            activeGroups = groups.size();
        }
    }

    /**
     * Stores chunks for the ramp, then for the measured window, cycling through every key as a cache under
     * an eviction controller does: whenever the groups stored reach {@link #EVICT_HIGH} of all, the oldest
     * (the next ones in the cycle) are deleted in one call down to {@link #EVICT_LOW}, counted in our time.
     */
    public Measurement storeEvictingInRounds(long rampNanos, long measureNanos) throws IOException {
        return storeEvictingInRounds(rampNanos, measureNanos, Long.MAX_VALUE);
    }

    /** {@link #storeEvictingInRounds(long, long)} of at most {@code maxTasks} store tasks. */
    Measurement storeEvictingInRounds(long rampNanos, long measureNanos, long maxTasks) throws IOException {
        evictAtGroups = (int) (groups.size() * EVICT_HIGH);
        evictToGroups = (int) (groups.size() * EVICT_LOW);
        evictionRounds = 0;
        try {
            Measurement m = pipeline(true, rampNanos, measureNanos, maxTasks);
            m.extra().put("eviction_rounds_with_ramp", evictionRounds);
            return m;
        } finally {
            evictAtGroups = 0;
            evictToGroups = 0;
        }
    }

    /** An eviction round, before group {@code from} is stored: the oldest groups stored, in one delete. */
    private void evictRound(int from, int storedGroups) {
        List<ObjectKey> keys = new ArrayList<>();
        for (int i = 0, g = from; i < groups.size() && storedGroups > evictToGroups; i++, g = (g + 1) % groups.size()) {
            if (stored[g]) { // groups in flight are not stored yet: never deleted here
                keys.addAll(groups.get(g));
                stored[g] = false;
                storedGroups--;
            }
        }
        adapter.delete(keys);
        evictionRounds++;
    }

    /** Groups stored now (their {@link #stored} flag set). */
    private int storedGroups() {
        int n = 0;
        for (boolean s : stored) {
            n += s ? 1 : 0;
        }
        return n;
    }

    /** Deletes every key, then stores every key group once (untimed preparation of the load case). */
    public Measurement populate() throws IOException {
        List<ObjectKey> all = new ArrayList<>(keyCount());
        groups.forEach(all::addAll);
        adapter.delete(all);
        Arrays.fill(stored, false);
        nextGroup = 0;
        Measurement m = pipeline(true, 0, Long.MAX_VALUE / 4, groups.size());
        nextGroup = 0;
        return m;
    }

    /** Loads chunks (cycling through every stored key) for the ramp, then for the measured window. */
    public Measurement load(long rampNanos, long measureNanos) throws IOException {
        for (boolean s : stored) {
            if (!s) {
                throw new IllegalStateException("load before populate(): not every key is stored");
            }
        }
        return pipeline(false, rampNanos, measureNanos, Long.MAX_VALUE);
    }

    /** Submits the next group's task from pipeline slot {@code slot}, on the buffers free longest. */
    private long issue(boolean store, int slot, int[] groupOf, int[] buffersOf) {
        int g = nextGroup;
        nextGroup = g + 1 >= activeGroups ? 0 : g + 1;
        groupOf[slot] = g;
        int buffers = freeBuffers.remove();
        buffersOf[slot] = buffers;
        List<ObjectKey> keys = groups.get(g);
        if (store) {
            if (evictAtGroups > 0) {
                int storedGroups = storedGroups();
                if (storedGroups >= evictAtGroups) {
                    evictRound(g, storedGroups);
                }
            }
            if (stored[g]) {
                adapter.delete(keys);
                stored[g] = false;
            }
            return adapter.submitStoreTask(keys, taskObjects.get(buffers));
        }
        return adapter.submitLoadTask(keys, taskObjects.get(buffers));
    }

    /**
     * The state of one {@link #pipeline} run. Its per-signal work is a method of its own
     * ({@link #collect}): called hundreds of times a second, it is compiled soon, where a loop in the
     * once-called pipeline method would run in the interpreter until an on-stack replacement, which at a
     * few hundred iterations a second comes late or never, and would charge that to the adapter's CPU.
     */
    private final class Window {
        final boolean store;
        final long[] taskId = new long[tasksInFlight];
        final long[] issuedAt = new long[tasksInFlight];
        final int[] groupOf = new int[tasksInFlight];
        final int[] buffersOf = new int[tasksInFlight];
        final boolean[] busy = new boolean[tasksInFlight];
        final Histogram latency = new Histogram(1, 3_600_000_000_000L, 3);
        final BlockDevice device = adapter.core().device();
        final long rampEnd;
        final long end;
        final long maxTasks;
        IoStats stats0 = device.ioStats();
        Map<String, Object> status0 = adapter.core().status();
        boolean measuring;
        long t0;
        long cpu0;
        long jit0;
        long[] ticks0;
        long okChunks;
        long failedTasks;
        long missedChunks;
        long issued;
        int inFlight;

        Window(boolean store, long rampNanos, long measureNanos, long maxTasks) {
            this.store = store;
            this.maxTasks = maxTasks;
            long start = System.nanoTime();
            rampEnd = start + rampNanos;
            end = rampEnd + measureNanos;
            if (rampNanos <= 0) {
                startMeasuring(start);
            }
        }

        void startMeasuring(long now) {
            measuring = true;
            t0 = now;
            cpu0 = CpuClock.processCpuNanos();
            jit0 = CpuClock.jitCompilerCpuNanos();
            ticks0 = CpuClock.userSystemTicks();
            stats0 = device.ioStats();
            status0 = adapter.core().status();
        }

        void issue(int s, long now) {
            issuedAt[s] = now;
            taskId[s] = AdapterWorkload.this.issue(store, s, groupOf, buffersOf);
            busy[s] = true;
            issued++;
            inFlight++;
        }

        /** Takes every finished task's result and issues the next task in its place. */
        void collect(Map<Long, L2StoreResult> storeResults) {
            for (int s = 0; s < tasksInFlight; s++) {
                if (!busy[s]) {
                    continue;
                }
                int good;
                if (store) {
                    L2StoreResult r = storeResults.get(taskId[s]);
                    if (r == null) {
                        continue;
                    }
                    good = r.success() ? keysPerTask : 0;
                    failedTasks += r.success() ? 0 : 1;
                    stored[groupOf[s]] = true; // delete before the next store of this group, whatever happened
                } else {
                    Bitmap b = adapter.queryLoadResult(taskId[s]);
                    if (b == null) {
                        continue;
                    }
                    good = b.cardinality();
                    missedChunks += keysPerTask - good;
                }
                busy[s] = false;
                freeBuffers.add(buffersOf[s]);
                inFlight--;
                long now = System.nanoTime();
                if (measuring) {
                    okChunks += good;
                    latency.recordValueWithCount(Math.max(1, now - issuedAt[s]), keysPerTask);
                } else if (now >= rampEnd) {
                    startMeasuring(now);
                }
                if (now < end && issued < maxTasks) {
                    issue(s, now);
                }
            }
        }
    }

    private Measurement pipeline(boolean store, long rampNanos, long measureNanos, long maxTasks) throws IOException {
        int fd = store ? adapter.storeEventFd() : adapter.loadEventFd();
        Poller wait = store ? storeWait : loadWait;
        Window w = new Window(store, rampNanos, measureNanos, maxTasks);
        for (int s = 0; s < tasksInFlight && w.issued < maxTasks; s++) {
            w.issue(s, System.nanoTime());
        }
        while (w.inFlight > 0) {
            if (wait.poll(WAIT) == 0) {
                throw new IOException("the adapter signalled no " + (store ? "store" : "load") + " completion within "
                        + WAIT.toSeconds() + " s (" + w.inFlight + " tasks in flight)");
            }
            EventFd.drainFd(fd);
            w.collect(store ? adapter.popCompletedStoreTasks() : null);
        }
        long t1 = System.nanoTime();
        long cpu1 = CpuClock.processCpuNanos();
        long jit1 = CpuClock.jitCompilerCpuNanos();
        long[] ticks1 = CpuClock.userSystemTicks();
        IoStats during = w.device.ioStats().minus(w.stats0);
        Map<String, Object> status1 = adapter.core().status();
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("keys_per_task", keysPerTask);
        extra.put("tasks_in_flight", tasksInFlight);
        PipelinedIo.describe(extra, w.latency, during, w.okChunks, (t1 - w.t0) / 1e9);
        // judged: the process's CPU less its JIT compiler threads' (as CpuClock.ourCpuNanos); both reported
        long jit = w.jit0 < 0 || jit1 < 0 ? 0 : Math.max(0, jit1 - w.jit0);
        extra.put("process_cpu_seconds", Measurement.round(CpuClock.seconds(w.cpu0, cpu1), 4));
        extra.put("jit_compiler_cpu_seconds", Measurement.round(jit / 1e9, 2));
        if (w.ticks0 != null && ticks1 != null) { // 10 ms resolution: which of the CPU was the kernel's
            extra.put("cpu_user_seconds", Measurement.round((ticks1[0] - w.ticks0[0]) / 100.0, 2));
            extra.put("cpu_system_seconds", Measurement.round((ticks1[1] - w.ticks0[1]) / 100.0, 2));
        }
        if (w.okChunks > 0) {
            extra.put("device_ios_per_chunk", Measurement.round((double) during.completions() / w.okChunks, 3));
        }
        if (store) {
            describeCommits(extra, w.status0, status1, w.okChunks / (double) keysPerTask);
            extra.put("failed_tasks", w.failedTasks);
            if (w.failedTasks > 0) { // why: the store's counters (device full, rolled back, ...)
                extra.put("adapter_status", String.valueOf(adapter.reportStatus()));
            }
        } else {
            extra.put("missed_chunks", w.missedChunks);
        }
        if (w.failedTasks > 0 && w.okChunks == 0) {
            throw new IOException("every store task failed (" + w.failedTasks + "); adapter status: "
                    + adapter.reportStatus());
        }
        return new Measurement(w.okChunks, w.okChunks * chunkBytes, (t1 - w.t0) / 1e9, CpuClock.seconds(w.cpu0, cpu1 - jit),
                extra);
    }

    /**
     * What the store's metadata log did in the window (fdpblock_v2): group commits per store task, the mean
     * time a commit spent writing its chunk and in its flush, and the keys whose put waited for slots freed
     * by deletes (on their way back to the allocator: being deallocated, or released).
     */
    private static void describeCommits(Map<String, Object> extra, Map<String, Object> s0, Map<String, Object> s1,
            double tasks) {
        if (!(s1.get("log_commits") instanceof Number)) {
            return; // lmcache_v1: no log
        }
        long commits = delta(s0, s1, "log_commits");
        extra.put("log_commits", commits);
        if (tasks > 0) {
            extra.put("log_commits_per_task", Measurement.round(commits / tasks, 3));
            extra.put("slot_waits_per_task", Measurement.round(delta(s0, s1, "slot_waits") / tasks, 3));
        }
        if (commits > 0) {
            extra.put("log_commit_write_ms_avg", Measurement.round(delta(s0, s1, "log_commit_write_ms")
                    / (double) commits, 2));
            extra.put("log_commit_flush_ms_avg", Measurement.round(delta(s0, s1, "log_commit_flush_ms")
                    / (double) commits, 2));
        }
    }

    private static long delta(Map<String, Object> s0, Map<String, Object> s1, String key) {
        return ((Number) s1.getOrDefault(key, 0L)).longValue() - ((Number) s0.getOrDefault(key, 0L)).longValue();
    }

    /**
     * Submit-to-signal latencies of lookup-and-lock tasks, with the calling thread's CPU time per lookup
     * (median; NaN when unknown), its minor page faults per lookup-and-unlock (making the lookup's keys
     * included; NaN when unknown) and the whole process's CPU over the round in cores: a lookup runs on the
     * caller's thread, so a slow one is descheduled (CPU below wall), doing more work (such as faulting in
     * heap pages the JVM had not touched yet), or sharing its core with other busy threads of the process
     * (cores well above 1). Beside
     * it, after each lookup on the same thread, the CPU of hashing the same keys once the way the store
     * does ({@link KeyHash} of each key's encoded text, new instances of them; median per pass, NaN when
     * unknown): the least a lookup must spend.
     */
    public record LookupResult(long[] sortedNanos, int keys, long misses, Map<String, Object> adapterStatus,
            String where, double cpuMedianMicros, double minorFaultsPerLookup, double processCpuCores,
            double hashOnceCpuMedianMicros) {
        /** Without the hash measured beside it. */
        public LookupResult(long[] sortedNanos, int keys, long misses, Map<String, Object> adapterStatus,
                String where, double cpuMedianMicros, double minorFaultsPerLookup, double processCpuCores) {
            this(sortedNanos, keys, misses, adapterStatus, where, cpuMedianMicros, minorFaultsPerLookup,
                    processCpuCores, Double.NaN);
        }

        /** The lookup's CPU over that of hashing its keys once (NaN when either is unknown). */
        public double cpuOverHashOnce() {
            return Stats.ratio(cpuMedianMicros, hashOnceCpuMedianMicros);
        }
        public double medianMicros() {
            return Stats.percentile(sortedNanos, sortedNanos.length, 50) / 1000.0;
        }

        public double percentileMicros(double p) {
            return Stats.percentile(sortedNanos, sortedNanos.length, p) / 1000.0;
        }
    }

    /** The hashes of the hash-once passes, xor-ed: read by nobody, written so they are computed. */
    private static volatile long hashSink;

    /** Lookups run untimed before each round: at least this many, and for at least the ramp. */
    static final int LOOKUP_WARMUP_MIN = 20;

    /**
     * Lookup-and-lock of {@code count} stored keys, {@code iterations} times after a ramp of
     * {@code rampNanos} (and at least {@value #LOOKUP_WARMUP_MIN} lookups), as every other case ramps: each
     * timed from before {@code submitLookupAndLockTask} to the eventfd signal seen by {@code poll(2)} and
     * the result taken; the keys are unlocked after each, outside the timing. Each lookup names its keys
     * with new {@link ObjectKey}s, encoded before the timing, as a service's request does: an ObjectKey
     * keeps its hash, so the same instances again would time a lookup that hashes nothing. After each
     * lookup, the keys are hashed once more, timed on their own, as new instances made the same way: the
     * reference the lookup's CPU is judged against, measured in the same loop (so on the same CPU and
     * cache state) rather than in a block of its own after the lookups.
     */
    public LookupResult lookup(int count, long rampNanos, int iterations) throws IOException {
        if (count > keyCount()) {
            throw new IllegalArgumentException("only " + keyCount() + " keys on the device");
        }
        List<ObjectKey> keys = new ArrayList<>(count);
        for (int g = 0; keys.size() < count; g++) {
            if (!stored[g]) {
                throw new IllegalStateException("lookup before populate(): key group " + g + " is not stored");
            }
            for (ObjectKey k : groups.get(g)) {
                if (keys.size() < count) {
                    keys.add(k);
                }
            }
        }
        return lookup(adapter, keys, rampNanos, iterations, "the bench file (" + adapter.core().device().engine()
                + ")");
    }

    static LookupResult lookup(RawBlockL2Adapter adapter, List<ObjectKey> keys, long rampNanos, int iterations,
            String where) throws IOException {
        keys = List.copyOf(keys);
        long rampEnd = System.nanoTime() + rampNanos;
        for (int i = 0; i < LOOKUP_WARMUP_MIN || System.nanoTime() < rampEnd; i++) {
            List<ObjectKey> asked = newInstances(keys);
            lookupOnce(adapter, asked);
            adapter.submitUnlock(asked);
            hashSink ^= hashOnce(newInstances(keys));
        }
        long[] samples = new long[iterations];
        long[] cpu = new long[iterations];
        long[] hashCpu = new long[iterations];
        long misses = 0;
        long sink = 0;
        long faults0 = CpuClock.threadMinorFaults();
        long process0 = CpuClock.processCpuNanos();
        long wall0 = System.nanoTime();
        for (int i = 0; i < iterations; i++) {
            List<ObjectKey> asked = newInstances(keys);
            long c0 = CpuClock.threadCpuNanos();
            long t0 = System.nanoTime();
            Bitmap hits = lookupOnce(adapter, asked);
            long t1 = System.nanoTime();
            long c1 = CpuClock.threadCpuNanos();
            adapter.submitUnlock(asked);
            samples[i] = t1 - t0;
            cpu[i] = c0 < 0 || c1 < 0 ? -1 : c1 - c0;
            misses += keys.size() - hits.cardinality();
            // beside it: hashing the same keys once, as new instances made the same way (their texts as
            // fresh in memory as the lookup's were)
            List<ObjectKey> hashed = newInstances(keys);
            long h0 = CpuClock.threadCpuNanos();
            sink ^= hashOnce(hashed);
            long h1 = CpuClock.threadCpuNanos();
            hashCpu[i] = h0 < 0 || h1 < 0 ? -1 : h1 - h0;
        }
        hashSink = sink; // kept, so that the hashing is not optimised away
        long faults1 = CpuClock.threadMinorFaults();
        double processCores = process0 < 0 ? Double.NaN
                : (CpuClock.processCpuNanos() - process0) / (double) (System.nanoTime() - wall0);
        Arrays.sort(samples);
        Arrays.sort(cpu);
        double cpuMedian = cpu[0] < 0 ? Double.NaN : Stats.percentile(cpu, cpu.length, 50) / 1000.0;
        double faults = faults0 < 0 || faults1 < 0 ? Double.NaN : (faults1 - faults0) / (double) iterations;
        Object status = adapter.reportStatus().get("lookup");
        @SuppressWarnings("unchecked")
        Map<String, Object> st = status instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
        Arrays.sort(hashCpu);
        double hashMedian = hashCpu[0] < 0 ? Double.NaN : Stats.percentile(hashCpu, hashCpu.length, 50) / 1000.0;
        return new LookupResult(samples, keys.size(), misses, st, where, cpuMedian, faults, processCores, hashMedian);
    }

    /** Hashing every key once, as the store hashes a key ({@link KeyHash} of its encoded text). */
    private static long hashOnce(List<ObjectKey> keys) {
        long x = 0;
        for (ObjectKey k : keys) {
            x ^= KeyHash.of(k.encoded()).getLeastSignificantBits();
        }
        return x;
    }

    /** The same keys as new instances that have computed nothing but their encoded form. */
    private static List<ObjectKey> newInstances(List<ObjectKey> keys) {
        List<ObjectKey> out = new ArrayList<>(keys.size());
        for (ObjectKey k : keys) {
            ObjectKey again = ObjectKey.fromEncoded(k.encoded());
            again.encoded();
            out.add(again);
        }
        return out;
    }

    /** One lookup-and-lock, from submit to the eventfd signal and the result taken. */
    private static Bitmap lookupOnce(RawBlockL2Adapter adapter, List<ObjectKey> keys) throws IOException {
        int fd = adapter.lookupAndLockEventFd();
        long id = adapter.submitLookupAndLockTask(keys);
        while (true) {
            if (!EventFd.await(fd, WAIT)) {
                throw new IOException("no lookup signal within " + WAIT.toSeconds() + " s");
            }
            Bitmap hits = adapter.queryLookupAndLockResult(id);
            if (hits != null) {
                return hits;
            }
        }
    }

    /**
     * The lookup case on an adapter over a memory device (when the bench file holds fewer than
     * {@code count} chunks): {@code count} keys of 4 KiB stored first. A lookup never touches the device.
     */
    static LookupResult lookupOnMemory(int count, long rampNanos, int iterations) throws IOException {
        int slot = 8192;
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, count + 16);
        long capacity = meta + (long) (count + 16) * slot;
        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder("memory:bench", slot).capacityBytes(capacity)
                .metaTotalBytes(meta).ioEngine(IoEngine.MEMORY).loadCheckpointOnInit(false).metaEnablePeriodic(false)
                .build();
        try (BlockDevice dev = BlockDevices.memory(capacity, 4096);
             RawBlockL2Adapter a = RawBlockL2Adapter.open(cfg, dev);
             Arena arena = Arena.ofConfined()) {
            MemorySegment payload = arena.allocate(4096, 4096);
            List<ObjectKey> keys = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                keys.add(key(i));
            }
            List<MemoryObj> objs = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                objs.add(MemoryObj.of(payload));
            }
            long id = a.submitStoreTask(keys, objs);
            L2StoreResult r = null;
            while (r == null) {
                EventFd.await(a.storeEventFd(), WAIT);
                r = a.popCompletedStoreTasks().get(id);
            }
            if (!r.success()) {
                throw new IOException("storing " + count + " keys on the memory adapter failed");
            }
            return lookup(a, keys, rampNanos, iterations, "a memory device (the bench file holds fewer keys)");
        }
    }

    @Override
    public void close() {
        storeWait.close();
        loadWait.close();
        try {
            if (registered) {
                adapter.core().device().unregisterBuffers(region);
            }
        } catch (IOException e) {
            // closing anyway
        } finally {
            adapter.close();
            arena.close();
        }
    }
}
