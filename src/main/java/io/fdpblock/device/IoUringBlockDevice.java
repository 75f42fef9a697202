package io.fdpblock.device;

import io.fdpblock.linux.NativeFile;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import io.fdpblock.util.Threads;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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
 *
 * <p>The device decides what an SQE says (subclasses: other engines) and holds what all its rings share;
 * {@link Reactor} (a reactor thread and its ring) and {@link CallerRing} (a caller's own ring) are both
 * {@link RingDriver}s, which keep the slots, submit and complete; {@link Regions} is the table of
 * registered buffers every ring applies.
 */
class IoUringBlockDevice extends AbstractBlockDevice {
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
        String name = "fdpblock-" + engine() + "-" + Path.of(path).getFileName();
        try {
            for (int k = 0; k < reactors.length; k++) {
                reactors[k] = new Reactor(this, k, reactors.length == 1 ? name : name + "-r" + k);
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
     * @param placementId the raw placement id ({@link PlacementId#NONE_VALUE}: none)
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

    private List<RingDriver> drivers() {
        List<RingDriver> l = new ArrayList<>(List.of(reactors));
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
            CallerRing cr = hasDeallocation(batch) ? null : callerRing();
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
        cr = new CallerRing(this);
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

    final void checkFatal() throws IOException {
        Throwable t = fatal;
        if (t != null) {
            throw new IOException("the io_uring reactor of " + path() + " failed: " + t.getMessage(), t);
        }
    }

    final synchronized void recordFatal(Throwable t) {
        if (fatal == null) {
            fatal = t;
        }
    }

    // ---- what the rings read and record on the device ----

    final DeviceOptions options() {
        return options;
    }

    /** The first reactor failure, or null. */
    final Throwable fatal() {
        return fatal;
    }

    /** {@link #close()} began: reactors stop re-arming their wake-up and end once idle. */
    final boolean isClosing() {
        return closing;
    }

    /** Called by the first ring: whether the SQEs name the file by its registered index or its fd. */
    final void useRegisteredFile(boolean registered) {
        fileIndex = registered ? 0 : deviceFd;
        sqeFileFlags = registered ? Ring.SQE_FIXED_FILE : 0;
    }

    /** Called by the first ring once its sparse buffer table is registered: regions can be registered. */
    final void fixedBuffersAvailable() {
        fixedBuffersAvailable = true;
    }

    /** Registered regions every ring applies. */
    final Regions regions() {
        return regions;
    }

    /** Operations were given up in the kernel: the device's memory stays allocated. */
    final void markLeaked() {
        leaked = true;
    }

    final void countWakeup() {
        wakeups.incrementAndGet();
    }

    final void describeRing(String description) {
        ringDescription = description;
    }

    /** A caller's ring that failed: no longer counted, closed or reported. */
    final void forgetCallerRing(CallerRing cr) {
        callerRings.remove(cr);
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
