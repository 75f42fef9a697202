package io.fdpblock.bench;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Our side of a raw case: keeps {@code depth} reads or writes in flight on a {@link BlockDevice}, each
 * slot a reusable one-op {@link IoBatch} on a buffer of the device's registered pool. Nothing is
 * allocated per operation on this side of the API.
 *
 * <p>Two ways to keep the pipeline full ({@link Mode}): {@code HANDOFF} (the default, the pattern of
 * {@code fdpblock run}): a completion, on the device's reactor, only hands its slot back through an
 * allocation-free queue and the calling thread checks it and submits the slot's next operation;
 * {@code CALLBACK}: the completion callback submits the next operation itself (a non-blocking call),
 * the way a single-threaded engine such as fio's loop does, with no thread hop per operation (engines
 * that complete inside {@code submit}, posix and memory, always use {@code HANDOFF}).
 *
 * <p>Like fio's {@code --time_based --ramp_time}: operations run for the ramp, then the measured window
 * starts (wall clock and process CPU time read once each), and at its end no new operation is issued;
 * those in flight are waited for and counted.
 */
public final class PipelinedIo {
    /** Who submits the next operation of a slot. */
    public enum Mode {
        /** The calling thread, after the reactor handed the slot back. */
        HANDOFF,
        /** The completion callback, on the reactor. */
        CALLBACK
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

    // The window, as seen by whoever completes operations (CALLBACK: the reactor; HANDOFF: the caller).
    private long rampEnd;
    private long end;
    private long maxOps;
    private final AtomicLong issued = new AtomicLong();
    private volatile boolean measuring;
    private volatile long t0;
    private volatile long cpu0;
    private volatile long measuredOps;
    /** A failure was seen: issue nothing more. */
    private volatile boolean stop;

    private final class Slot {
        final int index;
        final IoBatch batch = new IoBatch(1);
        final MemorySegment buffer;
        final SplittableRandom rng;
        final IoBatch.Callback callback;
        /** A failure seen by the callback, thrown by the caller. */
        volatile IOException failure;

        Slot(int index, MemorySegment buffer, SplittableRandom rng) {
            this.index = index;
            this.buffer = buffer;
            this.rng = rng;
            this.callback = mode == Mode.HANDOFF ? b -> handBack(this.index) : b -> completedInCallback(this);
        }
    }

    public PipelinedIo(BlockDevice device, Spec spec, long seed) {
        this(device, spec, seed, Mode.HANDOFF);
    }

    /**
     * @param device buffers come from its pool ({@code depth} buffers of at least {@code blockSize})
     */
    public PipelinedIo(BlockDevice device, Spec spec, long seed, Mode mode) {
        this.device = device;
        this.spec = spec;
        // Engines that complete inside submit (posix, memory) would recurse: callback -> submit -> callback.
        this.mode = device.engine() == IoEngine.POSIX || device.engine() == IoEngine.MEMORY ? Mode.HANDOFF : mode;
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
            for (long o = 0; o < b.byteSize(); o += 8) { // incompressible, like fio's default buffers
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

    private long nextOffset(Slot s) {
        long block;
        if (spec.random()) {
            block = s.rng.nextLong(blocks);
        } else {
            block = nextSequential.getAndIncrement() % blocks;
        }
        return spec.regionStart() + block * spec.blockSize();
    }

    private void issue(Slot s) throws IOException {
        IoBatch b = s.batch;
        b.reset();
        long off = nextOffset(s);
        if (spec.write()) {
            b.write(off, s.buffer, spec.placement());
        } else {
            b.read(off, s.buffer);
        }
        device.submit(b, s.callback);
    }

    /**
     * Accounts for one completed operation: starts the window at the end of the ramp, counts it inside.
     *
     * @return true when the slot should issue another operation
     */
    private boolean account(long now) {
        if (measuring) {
            measuredOps++; // one thread at a time completes operations (the reactor, or the caller)
        } else if (now >= rampEnd) {
            t0 = now;
            cpu0 = CpuClock.processCpuNanos();
            measuring = true;
        }
        if (!stop && now < end && issued.get() < maxOps) {
            issued.incrementAndGet();
            return true;
        }
        return false;
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
        if (account(System.nanoTime())) {
            try {
                issue(s);
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
        this.maxOps = maxOps;
        this.issued.set(0);
        this.measuredOps = 0;
        this.stop = false;
        this.t0 = start;
        this.cpu0 = CpuClock.processCpuNanos();
        this.measuring = rampNanos <= 0; // set last: the reactor may read the fields above once it sees slots
        int outstanding = 0; // slots not yet handed back to this thread for good
        IOException failure = null;
        for (int i = 0; i < slots.length && issued.get() < maxOps; i++) {
            issued.incrementAndGet();
            try {
                issue(slots[i]);
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
            if (failure == null && account(System.nanoTime())) {
                try {
                    issue(s);
                    outstanding++;
                } catch (IOException e) {
                    failure = e;
                }
            }
        }
        long t1 = System.nanoTime();
        long cpu1 = CpuClock.processCpuNanos();
        if (failure != null) {
            throw failure;
        }
        long ops = measuredOps;
        return new Measurement(ops, ops * spec.blockSize(), (t1 - t0) / 1e9, CpuClock.seconds(cpu0, cpu1));
    }

    /** The mode in use (CALLBACK falls back to HANDOFF on synchronous engines). */
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
