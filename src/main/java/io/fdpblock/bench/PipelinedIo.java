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
 *
 * <p>{@link #overOffsets} runs the same pipeline over a given list of offsets, each once, with
 * {@link Content} filling every write and checking every read (what {@code fdpblock engines} does to
 * verify an engine): always {@code HANDOFF}, so fills and checks run on the calling thread, never on
 * the reactor.
 */
public final class PipelinedIo {
    /** Who submits the next operation of a slot. */
    public enum Mode {
        /** The calling thread, after the reactor handed the slot back. */
        HANDOFF,
        /** The completion callback, on the reactor. */
        CALLBACK
    }

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
        /** The offset of the slot's last operation. */
        long offset;
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
        // Engines that complete inside submit (posix, memory) would recurse: callback -> submit -> callback.
        // Content is filled and checked on the calling thread: HANDOFF.
        this.mode = content != null || device.engine() == IoEngine.POSIX || device.engine() == IoEngine.MEMORY
                ? Mode.HANDOFF : mode;
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

    private void issue(Slot s, long ticket) throws IOException {
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
        device.submit(b, s.callback);
    }

    /**
     * Accounts for one completed operation: starts the window at the end of the ramp, counts it inside.
     *
     * @return the ticket (operation number) of the slot's next operation, or -1 when it issues no more
     */
    private long account(long now) {
        if (measuring) {
            measuredOps++; // one thread at a time completes operations (the reactor, or the caller)
        } else if (now >= rampEnd) {
            t0 = now;
            cpu0 = CpuClock.processCpuNanos();
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
        long ticket = account(System.nanoTime());
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
        this.cpu0 = CpuClock.processCpuNanos();
        this.measuring = rampNanos <= 0; // set last: the reactor may read the fields above once it sees slots
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
            long ticket = failure == null ? account(System.nanoTime()) : -1;
            if (ticket >= 0) {
                try {
                    issue(s, ticket);
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

    /** Reads of an {@link #overOffsets} pipeline whose bytes did not match its content. */
    public long mismatches() {
        return mismatches;
    }

    /** The mode in use (CALLBACK falls back to HANDOFF on synchronous engines and with content). */
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
