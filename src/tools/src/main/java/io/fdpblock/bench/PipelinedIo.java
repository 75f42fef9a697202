package io.fdpblock.bench;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.IoStats;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.tools.util.Threads;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Our side of a raw case: keeps {@code depth} reads or writes in flight on a {@link BlockDevice}, each
 * slot a reusable one-op {@link IoBatch} on a buffer of the device's registered pool. Nothing is
 * allocated per operation on this side of the API.
 *
 * <p>Ways to keep the pipeline full ({@link Mode}), each a pattern of the public API: {@code EXECUTE}
 * (depth 1): the calling thread runs each operation with the blocking {@link BlockDevice#execute}, which
 * the io_uring engines run on the caller's own ring, no thread hop; {@code CALLBACK}: the completion
 * callback submits the next operation itself (on the io_uring engines straight into SQEs on the
 * reactor's thread), the way fio's single-threaded loop does; {@code HANDOFF} (the pattern of
 * {@code fdpblock run}): a completion, on the device's reactor, only hands its slot back through an
 * allocation-free queue and the calling thread checks it and submits the slot's next operation.
 * {@code AUTO}, the bench's default: {@code EXECUTE} at depth 1, else {@code CALLBACK}. Engines that
 * complete inside {@code submit} (posix, memory) take {@code HANDOFF} for {@code CALLBACK}.
 *
 * <p>Like fio's {@code --time_based --ramp_time}: operations run for the ramp, then the measured window
 * starts (wall clock and process CPU time read once each), and at its end no new operation is issued;
 * those in flight are waited for and counted. Each measured operation's latency (submit to completion,
 * as fio's {@code lat}) goes into a histogram, and the device's {@link IoStats} are read at both ends of
 * the window: the measurement carries latency percentiles, the depth in flight (time-averaged in the
 * kernel, and by Little's law: IOPS x mean latency) and the io_uring system calls per I/O.
 *
 * <p>{@link #overOffsets} runs the same pipeline over a given list of offsets, each once, with
 * {@link Content} filling every write and checking every read (what {@code fdpblock engines} does to
 * verify an engine): always {@code HANDOFF}, so fills and checks run on the calling thread, never on
 * the reactor.
 */
public final class PipelinedIo {
    /** Who submits the next operation of a slot. */
    public enum Mode {
        /** {@code EXECUTE} at depth 1, else {@code CALLBACK}. */
        AUTO,
        /** The calling thread, with the blocking {@link BlockDevice#execute} (depth 1; deeper: CALLBACK). */
        EXECUTE,
        /** The calling thread, after the reactor handed the slot back. */
        HANDOFF,
        /** The completion callback, on the reactor. */
        CALLBACK;

        /** The mode that runs on {@code device} at {@code depth}. */
        public Mode resolve(BlockDevice device, int depth) {
            Mode m = this == AUTO ? (depth == 1 ? EXECUTE : CALLBACK) : this;
            if (m == EXECUTE && depth > 1) {
                m = CALLBACK;
            }
            // Engines that complete inside submit (posix, memory) would recurse: callback -> submit -> callback.
            if (m == CALLBACK && (device.engine() == IoEngine.POSIX || device.engine() == IoEngine.MEMORY)) {
                m = HANDOFF;
            }
            return m;
        }

        public static Mode parse(String s) {
            try {
                return valueOf(s.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException | NullPointerException e) {
                throw new IllegalArgumentException("--pipeline " + s + " is not a pipeline: use auto, execute, handoff or"
                        + " callback");
            }
        }
    }

    /** The latency keys {@link #describe} writes; fio's side writes the same ones from its JSON. */
    public static final List<String> LATENCY_KEYS = List.of("lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p999_us");

    /** What each operation of {@link #overOffsets} writes and what each read must find. */
    public interface Content {
        /** Fills {@code buffer} with what the write at {@code offset} carries. */
        void fill(MemorySegment buffer, long offset);

        /** Whether {@code buffer}, just read from {@code offset}, holds what was written there. */
        boolean matches(MemorySegment buffer, long offset);
    }

    /**
     * @param write writes (else reads)
     * @param random uniformly random aligned offsets, repeats allowed (fio {@code --norandommap}); else
     *        sequential, wrapping at the region's end, each slot taking the next block
     * @param placement the placement id every write carries ({@link PlacementId#NONE}: none)
     */
    public record Spec(boolean write, boolean random, int blockSize, int depth, long regionStart, long regionBytes,
            PlacementId placement) {
        public Spec {
            if (blockSize <= 0 || depth < 1 || regionBytes < blockSize) {
                throw new IllegalArgumentException("bad pipeline spec: block " + blockSize + ", depth " + depth
                        + ", region " + regionBytes);
            }
            placement = placement == null ? PlacementId.NONE : placement;
        }

        /** Writes without a placement id. */
        public Spec(boolean write, boolean random, int blockSize, int depth, long regionStart, long regionBytes) {
            this(write, random, blockSize, depth, regionStart, regionBytes, PlacementId.NONE);
        }
    }

    private final BlockDevice device;
    private final Spec spec;
    private final Mode mode;
    /** The offsets to visit in order, each once (null: random or sequential per the spec). */
    private final long[] offsets;
    /** Fills writes and checks reads (null: buffers keep their initial random bytes, reads are not checked). */
    private final Content content;
    /** Reads whose bytes {@link #content} did not match (calling thread only). */
    private long mismatches;
    private final Slot[] slots;
    /** Slot indices + 1 handed back (0 = empty), a ring of at least {@code depth} entries. */
    private final AtomicIntegerArray done;
    private final int mask;
    private final AtomicLong doneTail = new AtomicLong();
    private long doneHead;
    private volatile boolean waiting;
    private Thread consumer;
    private final long blocks;
    private final AtomicLong nextSequential = new AtomicLong();

    // The window, as seen by whoever completes operations (CALLBACK: the reactor; else the caller).
    private long rampEnd;
    private long end;
    private long maxOps;
    private final AtomicLong issued = new AtomicLong();
    private volatile boolean measuring;
    private volatile long t0;
    private volatile long cpu0;
    private volatile long measuredOps;
    private volatile IoStats stats0 = IoStats.NONE;
    /** Submit-to-completion ns of each measured operation (one writer at a time, as {@code measuredOps}). */
    private final Histogram latency = new Histogram(1, 3_600_000_000_000L, 3);
    /** A failure was seen: issue nothing more. */
    private volatile boolean stop;

    private final class Slot {
        final int index;
        final IoBatch batch = new IoBatch(1);
        final MemorySegment buffer;
        final SplittableRandom rng;
        final IoBatch.Callback callback;
        /** When its current operation was submitted (System.nanoTime). */
        long submittedAt;
        /** The offset of the slot's last operation. */
        long offset;
        /** A failure seen by the callback, thrown by the caller. */
        volatile IOException failure;

        Slot(int index, MemorySegment buffer, SplittableRandom rng) {
            this.index = index;
            this.buffer = buffer;
            this.rng = rng;
            this.callback = mode == Mode.CALLBACK ? b -> completedInCallback(this) : b -> handBack(this.index);
        }
    }

    public PipelinedIo(BlockDevice device, Spec spec, long seed) {
        this(device, spec, seed, Mode.HANDOFF);
    }

    /**
     * @param device buffers come from its pool ({@code depth} buffers of at least {@code blockSize})
     */
    public PipelinedIo(BlockDevice device, Spec spec, long seed, Mode mode) {
        this(device, spec, seed, mode, null, null);
    }

    /**
     * A pipeline of {@code depth} operations in flight over exactly {@code offsets}, in order, each once
     * ({@link #runOps} with {@code offsets.length}): writes carry {@code content.fill}, reads are checked
     * with {@code content.matches} ({@link #mismatches()}).
     */
    public static PipelinedIo overOffsets(BlockDevice device, boolean write, int blockSize, int depth, long[] offsets,
            Content content) {
        if (offsets == null || content == null) {
            throw new IllegalArgumentException("a pipeline over offsets needs the offsets and their content");
        }
        Spec spec = new Spec(write, false, blockSize, depth, 0, Math.max(blockSize, device.sizeBytes()));
        return new PipelinedIo(device, spec, 0, Mode.HANDOFF, offsets.clone(), content);
    }

    private PipelinedIo(BlockDevice device, Spec spec, long seed, Mode mode, long[] offsets, Content content) {
        this.device = device;
        this.spec = spec;
        this.offsets = offsets;
        this.content = content;
        // Content is filled and checked on the calling thread: HANDOFF.
        this.mode = content != null ? Mode.HANDOFF : mode.resolve(device, spec.depth());
        if (device.buffers().capacity() < spec.depth() || device.buffers().bufferSize() < spec.blockSize()) {
            throw new IllegalArgumentException("the device's buffer pool (" + device.buffers() + ") must hold "
                    + spec.depth() + " buffers of " + spec.blockSize() + " bytes");
        }
        int cap = Integer.highestOneBit(Math.max(2, spec.depth()) * 2 - 1);
        this.done = new AtomicIntegerArray(cap);
        this.mask = cap - 1;
        this.slots = new Slot[spec.depth()];
        this.blocks = spec.regionBytes() / spec.blockSize();
        SplittableRandom root = new SplittableRandom(seed);
        SplittableRandom fill = root.split();
        for (int i = 0; i < slots.length; i++) {
            MemorySegment b = device.buffers().acquire().asSlice(0, spec.blockSize());
            for (long o = 0; content == null && o < b.byteSize(); o += 8) { // incompressible, like fio's default
                b.set(ValueLayout.JAVA_LONG, o, fill.nextLong());
            }
            slots[i] = new Slot(i, b, root.split());
        }
    }

    /** Puts the slot on the queue to the caller and wakes it if it sleeps. */
    private void handBack(int slot) {
        long t = doneTail.getAndIncrement();
        done.set((int) (t & mask), slot + 1);
        if (waiting) {
            LockSupport.unpark(consumer);
        }
    }

    /** The next slot handed back, waiting for one. */
    private int take() {
        while (true) {
            int i = (int) (doneHead & mask);
            int v = done.get(i);
            if (v != 0) {
                done.set(i, 0);
                doneHead++;
                return v - 1;
            }
            if (doneTail.get() > doneHead) { // claimed, not yet written
                Thread.onSpinWait();
                continue;
            }
            waiting = true;
            if (done.get(i) == 0 && doneTail.get() == doneHead) {
                LockSupport.park(this);
            }
            waiting = false;
        }
    }

    private long nextOffset(Slot s, long ticket) {
        if (offsets != null) {
            return offsets[(int) ticket];
        }
        long block;
        if (spec.random()) {
            block = s.rng.nextLong(blocks);
        } else {
            block = nextSequential.getAndIncrement() % blocks;
        }
        return spec.regionStart() + block * spec.blockSize();
    }

    /** Fills the slot's batch with operation {@code ticket} and stamps its submit time. */
    private void prepare(Slot s, long ticket) {
        IoBatch b = s.batch;
        b.reset();
        long off = nextOffset(s, ticket);
        s.offset = off;
        if (spec.write()) {
            if (content != null) {
                content.fill(s.buffer, off);
            }
            b.write(off, s.buffer, spec.placement());
        } else {
            b.read(off, s.buffer);
        }
        s.submittedAt = System.nanoTime();
    }

    private void issue(Slot s, long ticket) throws IOException {
        prepare(s, ticket);
        device.submit(s.batch, s.callback);
    }

    /**
     * Accounts for one completed operation: starts the window at the end of the ramp, counts it (and its
     * latency) inside.
     *
     * @return the ticket (operation number) of the slot's next operation, or -1 when it issues no more
     */
    private long account(Slot s, long now) {
        if (measuring) {
            measuredOps++; // one thread at a time completes operations (the reactor, or the caller)
            latency.recordValue(Math.max(1, now - s.submittedAt));
        } else if (now >= rampEnd) {
            t0 = now;
            cpu0 = CpuClock.ourCpuNanos();
            stats0 = device.ioStats();
            measuring = true;
        }
        return !stop && now < end ? claim() : -1;
    }

    /** The next operation number, or -1 once {@code maxOps} have been issued. */
    private long claim() {
        long t = issued.getAndIncrement();
        if (t < maxOps) {
            return t;
        }
        issued.decrementAndGet();
        return -1;
    }

    /** CALLBACK mode, on the reactor: account, then issue the next operation or hand the slot back. */
    private void completedInCallback(Slot s) {
        IoBatch b = s.batch;
        if (!b.isComplete(0)) {
            try {
                b.throwIfFailed();
            } catch (IOException e) {
                s.failure = e;
            }
            stop = true;
            handBack(s.index);
            return;
        }
        long ticket = account(s, System.nanoTime());
        if (ticket >= 0) {
            try {
                issue(s, ticket);
                return;
            } catch (IOException | RuntimeException e) {
                s.failure = e instanceof IOException io ? io : new IOException(e);
                stop = true;
                issued.decrementAndGet();
            }
        }
        handBack(s.index);
    }

    /**
     * Runs {@code rampNanos} unmeasured, then {@code measureNanos} measured.
     *
     * @throws IOException for the first operation that failed or was short (naming it)
     */
    public Measurement run(long rampNanos, long measureNanos) throws IOException {
        return run(rampNanos, measureNanos, Long.MAX_VALUE);
    }

    /** Issues {@code totalOps} operations, measured, no ramp (e.g. to write a whole file once). */
    public Measurement runOps(long totalOps) throws IOException {
        return run(0, Long.MAX_VALUE / 4, totalOps);
    }

    private Measurement run(long rampNanos, long measureNanos, long maxOps) throws IOException {
        consumer = Thread.currentThread();
        long start = System.nanoTime();
        this.rampEnd = start + rampNanos;
        this.end = rampEnd + measureNanos;
        this.maxOps = offsets == null ? maxOps : Math.min(maxOps, offsets.length); // each offset once
        this.mismatches = 0;
        this.issued.set(0);
        this.measuredOps = 0;
        this.stop = false;
        this.t0 = start;
        this.cpu0 = CpuClock.ourCpuNanos();
        this.latency.reset();
        this.stats0 = device.ioStats();
        this.measuring = rampNanos <= 0; // set last: the reactor may read the fields above once it sees slots
        IOException failure = mode == Mode.EXECUTE ? runBlocking(slots[0]) : runPipelined();
        long t1 = System.nanoTime();
        long cpu1 = CpuClock.ourCpuNanos();
        if (failure != null) {
            throw failure;
        }
        long ops = measuredOps;
        double seconds = (t1 - t0) / 1e9;
        Measurement m = new Measurement(ops, ops * spec.blockSize(), seconds, CpuClock.seconds(cpu0, cpu1));
        m.extra().put("pipeline", mode.name().toLowerCase(Locale.ROOT));
        describe(m.extra(), latency, device.ioStats().minus(stats0), ops, seconds);
        return m;
    }

    /** EXECUTE: one blocking call per operation on this thread. @return the failure, or null */
    private IOException runBlocking(Slot s) {
        long ticket = claim();
        while (ticket >= 0) {
            prepare(s, ticket);
            try {
                device.execute(s.batch);
            } catch (IOException e) {
                return e;
            }
            ticket = account(s, System.nanoTime());
        }
        return null;
    }

    /** HANDOFF and CALLBACK: every slot in flight, until the window ends. @return the first failure, or null */
    private IOException runPipelined() {
        int outstanding = 0; // slots not yet handed back to this thread for good
        IOException failure = null;
        for (int i = 0; i < slots.length; i++) {
            long ticket = claim();
            if (ticket < 0) {
                break;
            }
            try {
                issue(slots[i], ticket);
                outstanding++;
            } catch (IOException e) {
                issued.decrementAndGet();
                failure = e;
                break;
            }
        }
        while (outstanding > 0) {
            Slot s = slots[take()];
            outstanding--;
            if (mode == Mode.CALLBACK) {
                if (s.failure != null && failure == null) {
                    failure = s.failure;
                }
                s.failure = null;
                continue;
            }
            IoBatch b = s.batch;
            if (!b.isComplete(0)) {
                try {
                    b.throwIfFailed();
                } catch (IOException e) {
                    if (failure == null) {
                        failure = e;
                    }
                }
                continue;
            }
            if (content != null && !spec.write() && !content.matches(s.buffer, s.offset)) {
                mismatches++;
            }
            long ticket = failure == null ? account(s, System.nanoTime()) : -1;
            if (ticket >= 0) {
                try {
                    issue(s, ticket);
                    outstanding++;
                } catch (IOException e) {
                    failure = e;
                }
            }
        }
        return failure;
    }

    /**
     * Puts a window's latency percentiles ({@link #LATENCY_KEYS}), depth in flight
     * ({@code depth_littles_law}: IOPS x mean latency; {@code ring_depth_avg}: time-averaged I/Os in the
     * kernel) and ring figures (io_uring_enter calls per I/O, SQEs per call, wake-ups) into {@code extra}.
     */
    static void describe(Map<String, Object> extra, Histogram latency, IoStats stats, long ops, double seconds) {
        if (latency.getTotalCount() > 0) {
            double meanUs = latency.getMean() / 1000.0;
            extra.put("lat_mean_us", Measurement.round(meanUs, 2));
            extra.put("lat_p50_us", Measurement.round(latency.getValueAtPercentile(50) / 1000.0, 2));
            extra.put("lat_p99_us", Measurement.round(latency.getValueAtPercentile(99) / 1000.0, 2));
            extra.put("lat_p999_us", Measurement.round(latency.getValueAtPercentile(99.9) / 1000.0, 2));
            if (seconds > 0) { // Little's law: in flight = throughput x time in the system
                extra.put("depth_littles_law", Measurement.round(ops / seconds * meanUs / 1e6, 2));
            }
        }
        if (stats.rings() > 0 && ops > 0) {
            extra.put("ring_depth_avg", Measurement.round(stats.averageDepth(seconds), 2));
            extra.put("io_uring_enters_per_io", Measurement.round((double) stats.enters() / ops, 3));
            extra.put("sqes_per_submit", Measurement.round(stats.sqesPerSubmit(), 2));
            extra.put("wakeups_per_io", Measurement.round((double) stats.wakeups() / ops, 4));
            extra.put("caller_run_batches", stats.callerRunBatches());
            extra.put("rings", stats.rings());
        }
    }

    /**
     * Runs several pipelines at once, each on its own thread (e.g. one per ring of a device), over the same
     * ramp and window, and adds them up: operations and bytes summed, the window the longest, CPU the
     * process's (each lane reads the whole process: the largest), latencies merged, the device's ring
     * figures over the whole run.
     */
    public static Measurement runParallel(List<PipelinedIo> lanes, long rampNanos, long measureNanos) throws IOException {
        Measurement[] results = new Measurement[lanes.size()];
        Throwable[] failures = new Throwable[lanes.size()];
        Thread[] threads = new Thread[lanes.size()];
        BlockDevice dev = lanes.get(0).device;
        IoStats before = dev.ioStats();
        long start = System.nanoTime();
        for (int i = 0; i < threads.length; i++) {
            int lane = i;
            threads[i] = Thread.ofPlatform().name("fdpblock-bench-lane-" + i).start(() -> {
                try {
                    results[lane] = lanes.get(lane).run(rampNanos, measureNanos);
                } catch (Throwable t) {
                    failures[lane] = t;
                }
            });
        }
        for (Thread t : threads) {
            Threads.joinUninterruptibly(t);
        }
        double runSeconds = (System.nanoTime() - start) / 1e9;
        for (Throwable t : failures) {
            if (t != null) {
                throw t instanceof IOException io ? io : new IOException(t);
            }
        }
        long ops = 0;
        long bytes = 0;
        double seconds = 0;
        double cpu = 0;
        Histogram all = new Histogram(1, 3_600_000_000_000L, 3);
        for (int i = 0; i < results.length; i++) {
            ops += results[i].ops();
            bytes += results[i].bytes();
            seconds = Math.max(seconds, results[i].seconds());
            cpu = Math.max(cpu, results[i].cpuSeconds());
            all.add(lanes.get(i).latency);
        }
        Measurement sum = new Measurement(ops, bytes, seconds, cpu);
        sum.extra().put("pipeline", lanes.get(0).mode.name().toLowerCase(Locale.ROOT));
        sum.extra().put("lanes", lanes.size());
        IoStats during = dev.ioStats().minus(before);
        describe(sum.extra(), all, during, ops, seconds);
        if (during.rings() > 0) { // the ring figures cover the whole run (ramp included): the lanes' windows differ
            sum.extra().put("ring_depth_avg", Measurement.round(during.averageDepth(runSeconds), 2));
            sum.extra().put("io_uring_enters_per_io", Measurement.round(during.entersPerIo(), 3));
            sum.extra().put("wakeups_per_io", Measurement.round(during.completions() > 0
                    ? (double) during.wakeups() / during.completions() : Double.NaN, 4));
        }
        return sum;
    }

    /** Reads of an {@link #overOffsets} pipeline whose bytes did not match its content. */
    public long mismatches() {
        return mismatches;
    }

    /** The mode in use (see {@link Mode#resolve}; HANDOFF with content). */
    public Mode mode() {
        return mode;
    }

    /** Returns the buffers to the device's pool. */
    public void release() {
        for (Slot s : slots) {
            device.buffers().release(s.buffer);
        }
    }
}
