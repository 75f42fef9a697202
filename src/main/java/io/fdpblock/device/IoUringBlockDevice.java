package io.fdpblock.device;

import io.fdpblock.linux.EventFd;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import io.fdpblock.util.Threads;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * io_uring READ/WRITE with O_DIRECT on a file or block device.
 *
 * <p>{@link DeviceOptions#ioRings()} reactor threads, each owning one ring (set up on it, so
 * SINGLE_ISSUER|DEFER_TASKRUN apply). A submitting thread keeps to one reactor (assigned round-robin at its
 * first submit; a reactor's own thread to itself). Other threads put whole batches on the reactor's
 * lock-free queue and wake it through its eventfd only when it sleeps; the reactor keeps an io_uring READ
 * armed on that eventfd, so one {@code io_uring_enter} waits for both completions and new work. A batch
 * submitted on the reactor's own thread (a completion callback submitting the next I/O) goes straight into
 * SQEs, with no queue and no wake-up. When prepared SQEs reach the kernel is the {@link SubmitPolicy}.
 *
 * <p>{@link #execute} (blocking) runs on the caller's own ring: the calling thread prepares, submits, waits
 * for and reaps its batch itself (one {@code io_uring_enter} for a one-operation batch), no thread hop. Each
 * thread that calls it gets one such ring, up to {@link #MAX_CALLER_RINGS}; past that, and for batches
 * with deallocations (their range lists live in the reactors' per-slot memory), execute goes through a reactor.
 *
 * <p>Buffers inside a registered region (the device's pool, or a region given to {@link #registerBuffers})
 * use READ_FIXED/WRITE_FIXED on every ring; the file is a registered file. Completion callbacks run on a
 * reactor and must only record and signal (and may submit more).
 *
 * <p>Memory the kernel may touch is never released early: a batch's callback runs only once every
 * one of its operations was reaped. If a reactor fails, it first cancels what it can and reaps every
 * operation still in the kernel (their batches then complete, failed), fails the batches the kernel
 * never saw, and only then tears its ring down; the device then refuses new work. Should even that be
 * impossible, the batches still in the kernel complete failed with {@link IoBatch#buffersMayBeInUse()}
 * set, and the device's own memory is left allocated. A caller's ring that fails does the same before
 * {@link #execute} throws.
 */
class IoUringBlockDevice extends AbstractBlockDevice {
    private static final long WAKE = -1L;
    /** user_data of the cancel requests the failure path sends (their completions are only counted). */
    private static final long CANCEL = -2L;
    /** Registered buffer slots; the kernel caps one registered buffer at 1 GiB. */
    private static final int MAX_REGIONS = 64;
    private static final long MAX_REGION_BYTES = 1L << 30;
    /** How long {@link #close()} waits for the reactors to complete what they accepted. */
    static final long CLOSE_WAIT_SECONDS = 60;
    /** Caller-owned rings per device at most (each is a ring fd and a registration of the buffers). */
    static final int MAX_CALLER_RINGS = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());
    private static final IoBatch.Callback NO_CALLBACK = b -> { };

    /** Closes what the fd belongs to, after the rings are gone. */
    private final AutoCloseable fdOwner;
    private final int deviceFd;
    private final DeviceOptions options;
    private final Reactor[] reactors;
    private final AtomicInteger nextLane = new AtomicInteger();
    /** Which reactor a submitting thread keeps to (several rings only). */
    private final ThreadLocal<Reactor> lane = ThreadLocal.withInitial(this::assignLane);
    private volatile boolean closing;
    /** The first reactor failure: the device refuses new work from then on. */
    private volatile Throwable fatal;
    /** Operations given up while still in the kernel: the device's memory must not be freed. */
    private volatile boolean leaked;
    private final AtomicLong wakeups = new AtomicLong();
    private volatile String ringDescription = "not started";
    /** Decided by the first ring: the registered file's index and IOSQE_FIXED_FILE, or the plain fd and 0. */
    private volatile int fileIndex;
    private volatile int sqeFileFlags;
    private volatile boolean fixedBuffersAvailable;

    /** Registered regions, the same on every ring: replaced (never changed) under {@link #registrationLock}. */
    private volatile Regions regions = Regions.EMPTY;
    private final Object registrationLock = new Object();

    /** False for an engine that checks batches in its own {@code submit}: its blocking calls go through it. */
    private final boolean callerRuns;
    private final ThreadLocal<CallerRing> callerRing = new ThreadLocal<>();
    private final Set<CallerRing> callerRings = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean callerRingWarned = new AtomicBoolean();

    IoUringBlockDevice(String path, int fd, AutoCloseable fdOwner, long size, int blockSize, int maxTransfer,
            DeviceOptions options) throws IOException {
        super(path, size, blockSize, maxTransfer, blockSize, options);
        this.fdOwner = fdOwner;
        this.deviceFd = fd;
        this.options = options;
        this.reactors = new Reactor[options.ioRings()];
        String name = "fdpblock-" + engine() + "-" + java.nio.file.Path.of(path).getFileName();
        try {
            for (int k = 0; k < reactors.length; k++) {
                reactors[k] = new Reactor(k, reactors.length == 1 ? name : name + "-r" + k);
            }
        } catch (IOException | RuntimeException e) {
            for (Reactor r : reactors) {
                if (r != null) {
                    r.wake.close();
                }
            }
            throw e;
        }
        if (buffers().capacity() > 0) {
            regions = Regions.EMPTY.with(buffers().region());
        }
        this.callerRuns = !overridesSubmit(getClass());
    }

    static IoUringBlockDevice open(NativeFile file, DeviceOptions options) throws IOException {
        return start(new IoUringBlockDevice(file.path().toString(), file.fd(), file, file.size(),
                file.logicalBlockSize(), 1 << 30, options));
    }

    /** Starts the reactors, one after the other, and waits until each ring is set up (or failed). */
    static <D extends IoUringBlockDevice> D start(D device) throws IOException {
        IoUringBlockDevice d = device;
        for (Reactor r : d.reactors) {
            r.thread.start();
            try {
                r.started.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                d.close();
                throw new IOException("interrupted while starting the " + d.engine() + " reactor for " + d.path(), e);
            } catch (ExecutionException e) {
                d.close();
                Throwable c = e.getCause();
                throw c instanceof IOException io ? io : new IOException(c);
            }
        }
        return device;
    }

    /** True when a class between {@code c} and this one declares its own {@code submit}. */
    private static boolean overridesSubmit(Class<?> c) {
        for (Class<?> k = c; k != IoUringBlockDevice.class && k != null; k = k.getSuperclass()) {
            try {
                k.getDeclaredMethod("submit", IoBatch.class, IoBatch.Callback.class);
                return true;
            } catch (NoSuchMethodException e) {
                // not here
            }
        }
        return false;
    }

    // ---- what an engine over this reactor decides ----

    RingOptions ringOptions() {
        return RingOptions.of(options.queueDepth()).withSqPoll(options.sqPollIdleMillis());
    }

    /** Reads and writes larger than this are split into several SQEs. */
    long splitBytes() {
        return Long.MAX_VALUE;
    }

    /**
     * Checks a batch before it is accepted, on the submitting thread, after the common checks; for
     * {@link #submit} and {@link #execute} alike. Throwing refuses the whole batch.
     */
    void admit(IoBatch batch) throws IOException {
    }

    /**
     * Prepares one SQE for {@code part} at {@code deviceOffset}. May run on any of the device's rings
     * (reactors, callers' rings): use {@code ring}, {@link #fileIndex()} and {@link #sqeFileFlags()}.
     *
     * @param region registered buffer index holding {@code part}, or -1
     * @param placementId the raw placement id ({@link io.fdpblock.nvme.PlacementId#NONE_VALUE}: none)
     * @param slot the SQE's user_data: unique among the operations in flight on the device's reactors
     * @return the SQE offset, or -1 when the SQ is full
     */
    long prepareReadWrite(Ring ring, boolean read, MemorySegment part, long deviceOffset, int region, int placementId,
            int slot) {
        long sqe;
        if (region >= 0) {
            sqe = read ? ring.prepReadFixed(fileIndex, part, deviceOffset, region, slot)
                    : ring.prepWriteFixed(fileIndex, part, deviceOffset, region, slot);
        } else {
            sqe = read ? ring.prepRead(fileIndex, part, deviceOffset, slot)
                    : ring.prepWrite(fileIndex, part, deviceOffset, slot);
        }
        if (sqe >= 0 && sqeFileFlags != 0) {
            ring.addSqeFlags(sqe, sqeFileFlags);
        }
        return sqe;
    }

    long prepareFlush(Ring ring, int slot) {
        long sqe = ring.prepFsync(fileIndex, true, slot);
        if (sqe >= 0 && sqeFileFlags != 0) {
            ring.addSqeFlags(sqe, sqeFileFlags);
        }
        return sqe;
    }

    /**
     * Prepares one SQE for the deallocations {@code b}'s ops {@code first..} (consecutive ones of the
     * same batch may share it). Runs on reactors only, with {@code slot} in
     * {@code 0 .. queueDepth x ioRings - 1}, unique among the operations in flight.
     *
     * @return how many ops the SQE covers; 0 when this engine has nothing to tell the device (the ops
     *         then succeed at once); -1 when the SQ is full
     */
    int prepareDeallocate(Ring ring, IoBatch b, int first, int slot) {
        return 0;
    }

    /**
     * Records a part's completion in its batch: {@code res} is the CQE result (bytes or {@code -errno}
     * here; engines that speak NVMe decode their status).
     *
     * @return true when it was the op's last part
     */
    boolean completePart(IoBatch b, int op, int res, long partLength) {
        return b.completePart(op, res);
    }

    /** The registered file index (or the plain fd when files could not be registered). */
    final int fileIndex() {
        return fileIndex;
    }

    /** {@code IOSQE_FIXED_FILE} when the fd is a registered file, else 0. */
    final int sqeFileFlags() {
        return sqeFileFlags;
    }

    @Override
    public IoEngine engine() {
        return IoEngine.IO_URING;
    }

    final int deviceFd() {
        return deviceFd;
    }

    @Override
    boolean isDirectIo() {
        return true;
    }

    /** For tests and status: operations that went through the fixed-buffer path, and the others. */
    long fixedOps() {
        long n = 0;
        for (RingDriver d : drivers()) {
            n += d.fixedOpsCount;
        }
        return n;
    }

    long plainOps() {
        long n = 0;
        for (RingDriver d : drivers()) {
            n += d.plainOpsCount;
        }
        return n;
    }

    private java.util.List<RingDriver> drivers() {
        java.util.List<RingDriver> l = new java.util.ArrayList<>(java.util.List.of(reactors));
        l.addAll(callerRings);
        return l;
    }

    @Override
    public long fixedBufferOps() {
        return fixedOps();
    }

    /** The first ring as set up, e.g. {@code Ring[fd=5, sq=256, cq=512, flags=SINGLE_ISSUER|DEFER_TASKRUN]}. */
    String ringDescription() {
        return ringDescription;
    }

    /** Reactor rings of this device. */
    int reactorCount() {
        return reactors.length;
    }

    @Override
    public IoStats ioStats() {
        IoStats s = IoStats.NONE;
        for (RingDriver d : drivers()) {
            s = s.plus(d.stats());
        }
        return new IoStats(s.rings(), s.enters(), s.submits(), s.sqes(), s.completions(), wakeups.get(),
                s.callerRunBatches(),
                s.depthNanos(), s.spanNanos());
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        enter("submit");
        try {
            checkFatal();
            validate(batch);
            admit(batch);
            batch.callback = callback;
            batch.remaining = batch.size();
            if (batch.size() == 0) {
                complete(batch, callback);
                return;
            }
            Reactor r = laneOf();
            if (Thread.currentThread() == r.thread) {
                r.submitFromReactor(batch); // a callback submitting more: straight into SQEs
                return;
            }
            r.queue.offer(batch);
            if (r.dead) {
                r.failQueued(); // the reactor died after checkFatal: it will not take this batch
            } else {
                r.wakeIfSleeping();
            }
        } finally {
            leave();
        }
    }

    /**
     * Runs {@code batch} on the calling thread's own ring and waits for it (no reactor, no thread hop);
     * throws the first failure or short transfer. Falls back to {@link #submit} when the thread can have
     * no ring of its own.
     */
    @Override
    public void execute(IoBatch batch) throws IOException {
        boolean ran = false;
        enter("execute");
        try {
            checkFatal();
            validate(batch);
            admit(batch);
            CallerRing cr = callerRuns && !hasDeallocation(batch) ? callerRing() : null;
            if (cr != null) {
                batch.callback = NO_CALLBACK;
                batch.remaining = batch.size();
                if (batch.size() > 0) {
                    cr.run(batch);
                }
                ran = true;
            }
        } finally {
            leave();
        }
        if (!ran) {
            CompletableFuture<IoBatch> done = new CompletableFuture<>();
            submit(batch, done::complete);
            done.join(); // uninterruptible; the callback only ever completes it normally
        }
        batch.throwIfFailed();
    }

    private static boolean hasDeallocation(IoBatch b) {
        for (int i = 0; i < b.size(); i++) {
            if (b.kind(i) == IoBatch.DEALLOCATE) {
                return true;
            }
        }
        return false;
    }

    /** This thread's ring, made on its first call; null when it cannot have one (then the reactors serve it). */
    private CallerRing callerRing() {
        CallerRing cr = callerRing.get();
        if (cr != null) {
            return cr.broken ? null : cr;
        }
        if (callerRings.size() >= MAX_CALLER_RINGS) {
            return null;
        }
        cr = new CallerRing();
        try {
            cr.open();
        } catch (IOException | RuntimeException e) {
            cr.broken = true;
            if (callerRingWarned.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.WARNING, "no ring of its own for a caller of " + path()
                        + " (blocking I/O goes through the reactor): " + e.getMessage());
            }
            callerRing.set(cr);
            return null;
        }
        callerRing.set(cr);
        callerRings.add(cr);
        return cr;
    }

    private Reactor laneOf() {
        return reactors.length == 1 ? reactors[0] : lane.get();
    }

    private Reactor assignLane() {
        Thread t = Thread.currentThread();
        for (Reactor r : reactors) {
            if (r.thread == t) {
                return r;
            }
        }
        return reactors[Math.floorMod(nextLane.getAndIncrement(), reactors.length)];
    }

    private void checkFatal() throws IOException {
        Throwable t = fatal;
        if (t != null) {
            throw new IOException("the io_uring reactor of " + path() + " failed: " + t.getMessage(), t);
        }
    }

    private synchronized void recordFatal(Throwable t) {
        if (fatal == null) {
            fatal = t;
        }
    }

    // ---- registered buffers: one table, applied on every ring ----

    /** The registered buffer slots: [base, end) per slot, end 0 = empty. Never changed once published. */
    private record Regions(long generation, long[] base, long[] end) {
        static final Regions EMPTY = new Regions(0, new long[MAX_REGIONS], new long[MAX_REGIONS]);

        /** {@code region} added in free slots (1 GiB each), or null when too few are free. */
        Regions with(MemorySegment region) {
            long chunks = (region.byteSize() + MAX_REGION_BYTES - 1) / MAX_REGION_BYTES;
            int free = 0;
            for (int i = 0; i < MAX_REGIONS; i++) {
                free += end[i] == 0 ? 1 : 0;
            }
            if (chunks > free) {
                return null;
            }
            long[] b = base.clone();
            long[] e = end.clone();
            int slot = 0;
            for (long off = 0; off < region.byteSize(); off += MAX_REGION_BYTES) {
                while (e[slot] != 0) {
                    slot++;
                }
                b[slot] = region.address() + off;
                e[slot] = region.address() + Math.min(region.byteSize(), off + MAX_REGION_BYTES);
            }
            return new Regions(generation + 1, b, e);
        }

        /** Every slot inside {@code region} emptied. */
        Regions without(MemorySegment region) {
            long a = region.address();
            long z = a + region.byteSize();
            long[] b = base.clone();
            long[] e = end.clone();
            for (int i = 0; i < MAX_REGIONS; i++) {
                if (e[i] != 0 && b[i] >= a && e[i] <= z) {
                    b[i] = 0;
                    e[i] = 0;
                }
            }
            return new Regions(generation + 1, b, e);
        }
    }

    @Override
    public boolean registerBuffers(MemorySegment region) throws IOException {
        synchronized (registrationLock) {
            if (!fixedBuffersAvailable) {
                return false;
            }
            Regions before = regions;
            Regions next = before.with(region);
            if (next == null) {
                LOG.log(System.Logger.Level.WARNING, "no registered buffer slot left for a region of "
                        + region.byteSize() + " bytes on " + path() + ": its I/O takes the non-fixed path");
                return false;
            }
            regions = next;
            IOException failure = syncReactors("registerBuffers");
            if (failure != null) { // no ring keeps it: the caller may free the region after this refusal
                regions = new Regions(next.generation() + 1, before.base(), before.end());
                IOException again = syncReactors("registerBuffers (undo)");
                if (again != null) {
                    failure.addSuppressed(again);
                }
                throw failure;
            }
            return true;
        }
    }

    /**
     * Undoes {@link #registerBuffers}. The reactors' rings let go before this returns; a caller's ring
     * updates its table at its next {@link #execute} (until then the kernel keeps the old pages pinned,
     * and no I/O refers to them).
     */
    @Override
    public void unregisterBuffers(MemorySegment region) throws IOException {
        synchronized (registrationLock) {
            regions = regions.without(region);
            IOException failure = syncReactors("unregisterBuffers");
            if (failure != null) {
                throw failure;
            }
        }
    }

    /** Applies {@link #regions} on every reactor's ring (on its own thread); the first failure, or null. */
    private IOException syncReactors(String what) {
        IOException first = null;
        for (Reactor r : reactors) {
            try {
                r.call(what, () -> {
                    r.syncRegions();
                    return null;
                });
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        return first;
    }

    /**
     * Queues {@code task} for every reactor. Should a reactor be gone, the task runs on this thread
     * (with no ring it fails; tests use it to stop the reactor).
     */
    void runOnReactor(String what, Runnable task) throws IOException {
        for (Reactor r : reactors) {
            r.post(what, task);
        }
    }

    // ---- one ring and the operations in flight on it ----

    /**
     * A ring and its slots: one operation part (SQE) per slot, user_data = {@code slotBase} + slot. Driven
     * by one thread at a time (a reactor's, or a caller's inside {@link #execute}).
     */
    private abstract class RingDriver {
        final int slotBase;
        final SubmitPolicy policy;
        Ring ring;
        private boolean fixedBuffers;
        private final long[] appliedBase = new long[MAX_REGIONS];
        private final long[] appliedEnd = new long[MAX_REGIONS];
        private int appliedCount;
        private long appliedGeneration = -1;

        private final IoBatch[] slotBatch;
        private final int[] slotOp;
        /** Operations a slot's SQE covers (more than one for a deallocation of several ranges). */
        private final int[] slotOps;
        private final long[] slotPartLength;
        private final int[] freeSlots;
        int freeTop;
        int inFlight;
        /** I/O SQEs prepared and not yet handed to the kernel. */
        int unsubmitted;
        /** Completions are being handed out ({@link #reap}). */
        private boolean reaping;
        boolean wakeArmed;
        /** This ring is failing: nothing is re-armed. */
        boolean failing;
        /** Operations of this ring given up in the kernel: its memory stays. */
        boolean abandoned;
        IoBatch current;
        int currentNext;
        /** Parts of {@code current}'s op {@code currentNext} already handed out, and how many it has. */
        int currentPart;
        int currentParts;

        // Counters: written by the driving thread, read by anyone (ioStats).
        long fixedOpsCount;
        long plainOpsCount;
        private long reapedIo;
        volatile long enters;
        volatile long submits;
        volatile long sqes;
        volatile long completions;
        volatile long batchesRun;
        volatile long depthNanos;
        volatile long spanNanos;
        private long lastTick;

        RingDriver(int slotBase, SubmitPolicy policy) {
            this.slotBase = slotBase;
            this.policy = policy;
            int depth = options.queueDepth();
            this.slotBatch = new IoBatch[depth];
            this.slotOp = new int[depth];
            this.slotOps = new int[depth];
            this.slotPartLength = new long[depth];
            this.freeSlots = new int[depth];
            for (int i = 0; i < depth; i++) {
                freeSlots[i] = depth - 1 - i;
            }
            this.freeTop = depth;
        }

        /** Registers the file and the buffers on a new ring; {@code first}: decides for the device. */
        final void setUp(boolean first) throws IOException {
            if (first) {
                try {
                    ring.registerFiles(deviceFd);
                    fileIndex = 0;
                    sqeFileFlags = Ring.SQE_FIXED_FILE;
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.INFO, "registered files unavailable, using the plain fd: " + e.getMessage());
                    fileIndex = deviceFd;
                    sqeFileFlags = 0;
                }
            } else if (sqeFileFlags != 0) {
                ring.registerFiles(deviceFd); // the SQEs name the file by its index on every ring
            }
            try {
                ring.registerSparseBuffers(MAX_REGIONS);
                fixedBuffers = true;
                if (first) {
                    fixedBuffersAvailable = true;
                }
                syncRegions();
            } catch (IOException e) { // e.g. RLIMIT_MEMLOCK: what could not be registered takes the plain path
                if (first) {
                    LOG.log(System.Logger.Level.WARNING, "fixed buffers unavailable on " + path()
                            + ", every I/O copies its iovec each time: " + e.getMessage());
                }
            }
        }

        /**
         * Closes this ring, dropping its reference to the device file first. A closed ring lets go of its
         * registered files later, in a kernel worker; until then the file stays open, and an exclusive
         * reopen right after {@link #close()} (O_EXCL on a block device, the flock on either) would find
         * the device still in use. Every ring registers the file, so every ring does this.
         */
        final void closeRing(Ring r) {
            if (sqeFileFlags != 0) {
                try {
                    r.unregisterFiles();
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.DEBUG, "unregistering the file of " + path() + " before the ring's"
                            + " teardown: " + e.getMessage());
                }
            }
            r.close();
        }

        /** Makes this ring's registered buffers those of {@link #regions}; a slot that fails stays empty. */
        final void syncRegions() throws IOException {
            Regions want = regions;
            if (want.generation() == appliedGeneration || !fixedBuffers) {
                appliedGeneration = want.generation();
                return;
            }
            IOException first = null;
            for (int i = 0; i < MAX_REGIONS; i++) {
                long b = want.base()[i];
                long e = want.end()[i];
                if (b == appliedBase[i] && e == appliedEnd[i]) {
                    continue;
                }
                try {
                    if (appliedEnd[i] != 0) {
                        appliedBase[i] = 0;
                        appliedEnd[i] = 0;
                        ring.clearBuffer(i);
                    }
                    if (e != 0) {
                        ring.updateBuffer(i, MemorySegment.ofAddress(b).reinterpret(e - b));
                        appliedBase[i] = b;
                        appliedEnd[i] = e;
                    }
                } catch (IOException x) {
                    first = first == null ? x : first;
                }
            }
            appliedCount = 0;
            for (int i = 0; i < MAX_REGIONS; i++) {
                if (appliedEnd[i] != 0) {
                    appliedCount = i + 1;
                }
            }
            appliedGeneration = want.generation();
            if (first != null) {
                throw first;
            }
        }

        private int regionOf(MemorySegment buf) {
            long a = buf.address();
            long e = a + buf.byteSize();
            for (int i = 0; i < appliedCount; i++) {
                if (a >= appliedBase[i] && e <= appliedEnd[i] && appliedEnd[i] != 0) {
                    return i;
                }
            }
            return -1;
        }

        /**
         * Turns {@code current} into SQEs while slots last, submitting as the policy says.
         *
         * @return true when all of it was handed out ({@code current} is then null)
         */
        final boolean prepareCurrent() throws IOException {
            IoBatch b = current;
            while (currentNext < b.size()) {
                if (freeTop == 0) {
                    return false; // queue depth reached: wait for completions
                }
                int local = freeSlots[freeTop - 1];
                int slot = slotBase + local;
                if (b.kind(currentNext) == IoBatch.DEALLOCATE) {
                    int covered = prepareDeallocate(ring, b, currentNext, slot);
                    if (covered < 0) {
                        submitPending(); // SQ full: hand what we have to the kernel, then retry once
                        covered = prepareDeallocate(ring, b, currentNext, slot);
                        if (covered < 0) {
                            return false;
                        }
                    }
                    if (covered == 0) { // nothing to tell this device: done at once
                        b.complete(currentNext, 0);
                        currentNext++;
                        if (--b.remaining == 0) {
                            current = null;
                            complete(b, b.callback);
                            return true;
                        }
                        continue;
                    }
                    take(local, b, currentNext, covered, 0);
                    currentNext += covered;
                    maybeSubmit();
                    continue;
                }
                if (currentPart == 0) {
                    currentParts = partsOf(b, currentNext);
                    b.beginParts(currentNext, currentParts);
                }
                long sqe = preparePart(b, currentNext, currentPart, slot, local);
                if (sqe < 0) {
                    submitPending(); // SQ full: hand what we have to the kernel, then retry once
                    sqe = preparePart(b, currentNext, currentPart, slot, local);
                    if (sqe < 0) {
                        return false;
                    }
                }
                take(local, b, currentNext, 1, slotPartLength[local]);
                if (++currentPart == currentParts) {
                    currentPart = 0;
                    currentNext++;
                }
                maybeSubmit();
            }
            current = null;
            return true;
        }

        private void take(int local, IoBatch b, int op, int ops, long partLength) {
            freeTop--;
            slotBatch[local] = b;
            slotOp[local] = op;
            slotOps[local] = ops;
            slotPartLength[local] = partLength;
            inFlight++;
            unsubmitted++;
        }

        private int partsOf(IoBatch b, int i) {
            if (b.kind(i) == IoBatch.FLUSH) {
                return 1;
            }
            long len = b.length(i);
            long split = splitBytes();
            return len <= split ? 1 : (int) ((len - 1) / split + 1);
        }

        private long preparePart(IoBatch b, int i, int part, int slot, int local) {
            if (b.kind(i) == IoBatch.FLUSH) {
                slotPartLength[local] = 0;
                return prepareFlush(ring, slot);
            }
            MemorySegment buf = b.buffer(i);
            long from = 0;
            MemorySegment piece = buf;
            if (currentParts > 1) {
                long split = splitBytes();
                from = part * split;
                piece = buf.asSlice(from, Math.min(split, buf.byteSize() - from));
            }
            int region = regionOf(piece);
            long sqe = prepareReadWrite(ring, b.kind(i) == IoBatch.READ, piece, b.offset(i) + from, region,
                    b.rawPlacementId(i), slot);
            if (sqe >= 0) {
                slotPartLength[local] = piece.byteSize();
                if (region >= 0) {
                    fixedOpsCount++;
                } else {
                    plainOpsCount++;
                }
            }
            return sqe;
        }

        /**
         * Submits now if the policy says so, with what is already in the kernel; but not for the last
         * completion of a reap on a ring whose owner enters the kernel right after it: that call submits
         * it, and a call of its own would be a second system call for the same moment (two per I/O
         * whenever completions come one at a time, e.g. 1 MiB I/Os).
         */
        final void maybeSubmit() throws IOException {
            if (policy.submitNow(unsubmitted, inFlight - unsubmitted)
                    && !(reaping && entersAfterReap() && ring.reapLeft() == 0)) {
                submitPending();
            }
        }

        /** Whether this ring's owner submits and waits again right after every reap (a reactor's loop). */
        boolean entersAfterReap() {
            return false;
        }

        final void submitPending() throws IOException {
            tick();
            int n = ring.submit();
            submitted(n);
        }

        /** Submits what is prepared and waits for one completion at least, then reaps. */
        final void submitWaitAndReap(Ring.CompletionHandler handler) throws IOException {
            tick();
            int n = ring.submitAndWait(1);
            submitted(n);
            reap(handler);
        }

        final void reap(Ring.CompletionHandler handler) {
            tick();
            reaping = true;
            try {
                ring.reap(handler);
            } finally {
                reaping = false;
            }
            completions = reapedIo;
        }

        private void submitted(int n) {
            enters = enters + 1;
            if (n > 0) {
                submits = submits + 1;
            }
            sqes = sqes + n;
            unsubmitted = Math.max(0, unsubmitted - n);
        }

        /** Adds the I/Os in the kernel since the last tick to the depth integral. */
        private void tick() {
            long now = System.nanoTime();
            if (lastTick != 0) {
                long dt = now - lastTick;
                depthNanos = depthNanos + (long) Math.max(0, inFlight - unsubmitted) * dt;
                spanNanos = spanNanos + dt;
            }
            lastTick = now;
        }

        IoStats stats() {
            return new IoStats(1, enters, submits, sqes, completions, 0, batchesRun, depthNanos, spanNanos);
        }

        /** A wake-up read completed (reactors only). */
        void onWake() {
        }

        final void onCompletion(long userData, int res, int flags, long extra) {
            if (userData == WAKE) {
                wakeArmed = false;
                onWake();
                return;
            }
            if (userData == CANCEL) {
                return;
            }
            reapedIo++;
            int local = (int) (userData - slotBase);
            IoBatch b = slotBatch[local];
            int op = slotOp[local];
            int ops = slotOps[local];
            slotBatch[local] = null;
            freeSlots[freeTop++] = local;
            inFlight--;
            boolean batchDone = false;
            if (ops > 1 || b.kind(op) == IoBatch.DEALLOCATE) { // one SQE for several deallocations
                for (int k = op; k < op + ops; k++) {
                    b.beginParts(k, 1);
                    completePart(b, k, res, 0);
                    batchDone |= --b.remaining == 0;
                }
            } else if (completePart(b, op, res, slotPartLength[local])) {
                batchDone = --b.remaining == 0;
            }
            if (batchDone) {
                completions = reapedIo; // counted before the callback: what it starts may read the stats
                complete(b, b.callback);
            }
        }

        /**
         * The failure path, before the ring goes: cancel whatever can be cancelled (the wake-up read,
         * requests not yet issued) and reap every operation still in the kernel, completing its batch with
         * the real result. Only if the ring itself no longer answers are the operations given up (their
         * batches fail with {@link IoBatch#buffersMayBeInUse()}) and the memory kept.
         */
        final void reapAfterFailure(String reason) {
            failing = true;
            try {
                for (int local = 0; local < slotBatch.length; local++) {
                    if (slotBatch[local] != null) {
                        cancel(slotBase + local);
                    }
                }
                if (wakeArmed) {
                    cancel(WAKE);
                }
                Ring.CompletionHandler onCompletion = this::onCompletion;
                while (inFlight > 0 || wakeArmed) {
                    ring.submitAndWait(1);
                    ring.reap(onCompletion);
                }
            } catch (Throwable t) {
                abandoned = true;
                leaked = true;
                LOG.log(System.Logger.Level.ERROR, "io_uring ring of " + path() + ": could not reap the " + inFlight
                        + " operations still in the kernel after a failure (" + t + "); they are abandoned", t);
                for (int local = 0; local < slotBatch.length; local++) {
                    IoBatch b = slotBatch[local];
                    if (b != null) {
                        slotBatch[local] = null;
                        b.markBuffersMayBeInUse();
                        boolean done = false;
                        for (int k = slotOp[local]; k < slotOp[local] + slotOps[local]; k++) {
                            if (b.failPart(k, reason + "; abandoned in the kernel")) {
                                done |= --b.remaining == 0;
                            }
                        }
                        if (done) {
                            complete(b, b.callback);
                        }
                    }
                }
                inFlight = 0;
            }
        }

        /** Asks the kernel to cancel {@code target}; its own CQE (and the cancel's) come later. */
        private void cancel(long target) throws IOException {
            if (ring.prepCancel(target, CANCEL) < 0) {
                ring.submit(); // SQ full: hand what we have over, then there is room
                ring.prepCancel(target, CANCEL);
            }
        }

        /** The rest of a batch taken but not (all) handed to the kernel fails. */
        final void failCurrent(String reason) {
            if (current == null) {
                return;
            }
            IoBatch b = current;
            current = null;
            int from = currentNext;
            if (currentPart > 0) { // an op with parts in flight: fail the parts never handed out
                boolean done = false;
                for (int p = currentPart; p < currentParts; p++) {
                    done = b.failPart(currentNext, reason);
                }
                currentPart = 0;
                if (done && --b.remaining == 0) {
                    complete(b, b.callback);
                    return;
                }
                from++;
            }
            failRest(b, from, reason);
        }
    }

    // ---- reactors ----

    private final class Reactor extends RingDriver implements Runnable {
        final int index;
        final Thread thread;
        final ConcurrentLinkedQueue<Object> queue = new ConcurrentLinkedQueue<>();
        /** Batches its own thread submitted while it was busy preparing (reactor-only). */
        private final ArrayDeque<IoBatch> pending = new ArrayDeque<>();
        final EventFd wake;
        private final AtomicBoolean sleeping = new AtomicBoolean();
        final CompletableFuture<Void> started = new CompletableFuture<>();
        /** Set once the reactor takes nothing more from the queue: submitters then fail what they queued. */
        volatile boolean dead;
        private boolean filling;
        /** A ring failure met while a callback submitted: thrown by the loop once the reap is done. */
        private Throwable directFailure;
        private MemorySegment wakeBuffer;

        Reactor(int index, String name) throws IOException {
            super(index * options.queueDepth(), options.submitPolicy());
            this.index = index;
            this.wake = EventFd.createBlocking();
            this.thread = Thread.ofPlatform().daemon().name(name).unstarted(this);
        }

        void wakeIfSleeping() {
            if (sleeping.get() && sleeping.compareAndSet(true, false)) {
                wakeups.incrementAndGet();
                wake.signal();
            }
        }

        /** Runs {@code task} on this reactor and waits for its result (ring operations belong to its owner). */
        <T> T call(String what, Callable<T> task) throws IOException {
            CompletableFuture<T> done = new CompletableFuture<>();
            post(what, () -> {
                try {
                    done.complete(task.call());
                } catch (Throwable t) {
                    done.completeExceptionally(t);
                }
            });
            try {
                return done.join(); // uninterruptible: a registration is never left half done
            } catch (java.util.concurrent.CompletionException e) {
                throw e.getCause() instanceof IOException io ? io : new IOException(what + " on " + path(), e.getCause());
            }
        }

        /** Queues {@code task}; should the reactor be gone, it runs on this thread (with no ring it fails). */
        void post(String what, Runnable task) throws IOException {
            enter(what);
            try {
                checkFatal();
                if (Thread.currentThread() == thread) {
                    task.run();
                    return;
                }
                queue.offer(task);
                if (dead) {
                    failQueued();
                } else {
                    wakeIfSleeping();
                }
            } finally {
                leave();
            }
        }

        /** On this reactor's thread: {@code b} goes into SQEs now, or after what is already waiting. */
        void submitFromReactor(IoBatch b) {
            if (filling || current != null || !pending.isEmpty()) {
                pending.add(b);
                return;
            }
            filling = true;
            try {
                current = b;
                currentNext = 0;
                prepareCurrent();
            } catch (Throwable t) { // the ring failed: the loop fails it (and what is left of b) after the reap
                if (directFailure == null) {
                    directFailure = t;
                }
            } finally {
                filling = false;
            }
        }

        @Override
        public void run() {
            Ring r = null;
            Arena arena = Arena.ofConfined();
            try {
                r = Ring.open(ringOptions());
                ring = r;
                if (index == 0) {
                    ringDescription = r.toString();
                }
                setUp(index == 0);
                wakeBuffer = arena.allocate(ValueLayout.JAVA_LONG);
                armWake();
                started.complete(null);
                loop();
            } catch (Throwable t) {
                recordFatal(t);
                if (!started.completeExceptionally(t)) {
                    LOG.log(System.Logger.Level.ERROR, "io_uring reactor of " + path() + " failed", t);
                }
                if (r != null) {
                    reapAfterFailure("the io_uring reactor failed: " + t);
                }
            } finally {
                Throwable f = fatal;
                String reason = f == null ? "the device is closed" : "the io_uring reactor failed: " + f;
                dead = true;
                failCurrent(reason);
                IoBatch b;
                while ((b = pending.poll()) != null) {
                    failRest(b, 0, reason);
                }
                failQueued();
                if (abandoned) {
                    // Operations were given up while still in the kernel: neither the ring (whose
                    // teardown would not wait for them) nor the memory they use may go.
                    LOG.log(System.Logger.Level.ERROR, "io_uring device " + path() + ": operations were abandoned in"
                            + " the kernel; its ring and memory stay allocated");
                } else {
                    if (r != null) {
                        closeRing(r);
                    }
                    arena.close();
                }
                ring = null;
            }
        }

        private void armWake() {
            long sqe = ring.prepRead(wake.fd(), wakeBuffer, 0, WAKE);
            if (sqe < 0) {
                throw new IllegalStateException("no SQE free to arm the wake-up read");
            }
            wakeArmed = true;
        }

        @Override
        void onWake() {
            if (!closing && !failing) {
                armWake();
            }
        }

        @Override
        boolean entersAfterReap() {
            return true; // loop(): after a reap, fill() then submitWaitAndReap, which submits what is prepared
        }

        private void loop() throws Throwable {
            Ring.CompletionHandler onCompletion = this::onCompletion;
            while (true) {
                fill();
                if (closing && inFlight == 0 && current == null && pending.isEmpty() && queue.isEmpty() && !wakeArmed) {
                    return;
                }
                // From here we block in the kernel (the wake-up READ is armed until close). While slots are
                // free, new work must wake us, so say we sleep, then look once more for work that raced in.
                // With every slot in flight, only completions can let us proceed: no wake-ups wanted.
                if (freeTop > 0) {
                    sleeping.set(true);
                    if (current == null && (!queue.isEmpty() || !pending.isEmpty())) {
                        sleeping.set(false);
                        continue;
                    }
                }
                tickAndWait(onCompletion);
                if (directFailure != null) {
                    throw directFailure;
                }
            }
        }

        private void tickAndWait(Ring.CompletionHandler onCompletion) throws IOException {
            try {
                submitWaitAndReap(onCompletion);
            } finally {
                sleeping.set(false);
            }
        }

        /** Moves work into SQEs while slots last: batches its own callbacks submitted first, then the queue. */
        private void fill() throws IOException {
            filling = true;
            try {
                while (true) {
                    if (current == null) {
                        Object next = pending.poll();
                        if (next == null) {
                            next = queue.poll();
                        }
                        if (next == null) {
                            return;
                        }
                        if (next instanceof Runnable task) {
                            task.run();
                            continue;
                        }
                        current = (IoBatch) next;
                        currentNext = 0;
                    }
                    if (!prepareCurrent()) {
                        return;
                    }
                }
            } finally {
                filling = false;
            }
        }

        /** Fails every batch still queued (the kernel never saw them); runs tasks, which fail without a ring. */
        void failQueued() {
            Throwable f = fatal;
            String reason = f == null ? "the device " + path() + " is closed"
                    : "the io_uring reactor of " + path() + " failed: " + f;
            Object o;
            while ((o = queue.poll()) != null) {
                if (o instanceof IoBatch b) {
                    failRest(b, 0, reason);
                } else if (o instanceof Runnable task) {
                    task.run();
                }
            }
        }
    }

    // ---- a caller's own ring ----

    /**
     * The ring of one thread that calls {@link #execute}: it prepares, submits, waits for and reaps its
     * batch itself, everything prepared in one {@code io_uring_enter} with the wait (nothing else feeds
     * this ring, so holding SQEs back never leaves the device idle). Slots here are this ring's own
     * (user_data only: batches with deallocations go through a reactor).
     */
    private final class CallerRing extends RingDriver {
        boolean broken;

        CallerRing() {
            super(0, SubmitPolicy.PER_CYCLE);
        }

        void open() throws IOException {
            ring = Ring.open(ringOptions().withSqPoll(0), true); // closed by the device's close, on its thread
            try {
                setUp(false);
            } catch (IOException | RuntimeException e) {
                closeRing(ring);
                throw e;
            }
        }

        void run(IoBatch b) throws IOException {
            batchesRun = batchesRun + 1;
            current = b;
            currentNext = 0;
            currentPart = 0;
            Ring.CompletionHandler onCompletion = this::onCompletion;
            try {
                syncRegions();
                while (b.remaining > 0) {
                    if (current != null) {
                        prepareCurrent();
                    }
                    submitWaitAndReap(onCompletion);
                }
            } catch (Throwable t) {
                String reason = "the io_uring ring of the thread " + Thread.currentThread().getName() + " on " + path()
                        + " failed: " + t;
                reapAfterFailure(reason);
                failCurrent(reason);
                broken = true;
                callerRings.remove(this);
                if (!abandoned) {
                    closeRing(ring);
                }
                LOG.log(System.Logger.Level.WARNING, reason + "; this thread's blocking I/O goes through the reactor"
                        + " from now on", t);
            }
        }

        void close() {
            if (!abandoned && !broken) {
                closeRing(ring);
            }
        }
    }

    private static void failRest(IoBatch b, int from, String reason) {
        for (int i = from; i < b.size(); i++) {
            b.fail(i, reason);
            if (--b.remaining == 0) {
                complete(b, b.callback);
            }
        }
    }

    /**
     * Stops accepting work, lets every accepted batch complete, then tears down the rings and closes
     * the file. Waits at most {@link #CLOSE_WAIT_SECONDS}; past that it says what it abandoned and
     * leaves the rings and memory allocated. Called from a completion callback it does not wait (the
     * reactors finish by themselves).
     */
    @Override
    public void close() {
        if (!markClosedAndDrain()) {
            return;
        }
        closing = true;
        for (CallerRing cr : callerRings) { // idle: no caller is inside the device any more
            cr.close();
        }
        callerRings.clear();
        boolean onReactor = false;
        for (Reactor r : reactors) {
            r.wake.signal();
            onReactor |= Thread.currentThread() == r.thread;
        }
        if (!onReactor) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CLOSE_WAIT_SECONDS);
            boolean all = true;
            for (Reactor r : reactors) { // one never started (its predecessor failed) counts as ended
                all &= Threads.joinUninterruptibly(r.thread, Math.max(1, deadline - System.nanoTime()));
            }
            if (all) {
                release();
            } else {
                long queued = 0;
                for (Reactor r : reactors) {
                    queued += r.queue.size();
                }
                LOG.log(System.Logger.Level.ERROR, "io_uring device " + path() + ": " + queued
                        + " batches queued and operations in flight did not complete within " + CLOSE_WAIT_SECONDS
                        + " s of close; they are abandoned, the rings and buffers stay allocated");
            }
        } else { // called from a completion callback: the reactors finish by themselves
            Thread.ofPlatform().daemon().start(() -> {
                for (Reactor r : reactors) {
                    Threads.joinUninterruptibly(r.thread);
                }
                release();
            });
        }
    }

    private void release() {
        if (leaked) {
            return; // see Reactor.run(): the kernel may still use this memory
        }
        try {
            fdOwner.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "closing " + path() + " failed", e);
        }
        for (Reactor r : reactors) {
            r.wake.close();
        }
        buffers().close();
        releaseMemory();
    }

    /** Frees what an engine allocated for the kernel to use; runs once, after every operation was reaped. */
    void releaseMemory() {
    }
}
