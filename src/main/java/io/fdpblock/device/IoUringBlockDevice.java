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
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * io_uring READ/WRITE with O_DIRECT on a file or block device.
 *
 * <p>One reactor thread owns the ring (set up on it, so SINGLE_ISSUER|DEFER_TASKRUN apply). Submitters
 * put whole batches on a lock-free queue and wake the reactor through an eventfd only when it sleeps;
 * the reactor keeps an io_uring READ armed on that eventfd, so one {@code io_uring_enter} waits for
 * both completions and new work. Buffers inside a registered region (the device's pool, or a region
 * given to {@link #registerBuffers}) use READ_FIXED/WRITE_FIXED; the file is a registered file.
 * Completion callbacks run on the reactor and must only record and signal.
 *
 * <p>Memory the kernel may touch is never released early: a batch's callback runs only once every
 * one of its operations was reaped. If the reactor fails, it first cancels what it can and reaps every
 * operation still in the kernel (their batches then complete, failed), fails the batches the kernel
 * never saw, and only then tears the ring down. Should even that be impossible, the batches still
 * in the kernel complete failed with {@link IoBatch#buffersMayBeInUse()} set, and the device's own
 * memory is left allocated.
 */
class IoUringBlockDevice extends AbstractBlockDevice {
    private static final long WAKE = -1L;
    /** user_data of the cancel requests the failure path sends (their completions are only counted). */
    private static final long CANCEL = -2L;
    /** Registered buffer slots; the kernel caps one registered buffer at 1 GiB. */
    private static final int MAX_REGIONS = 64;
    private static final long MAX_REGION_BYTES = 1L << 30;
    /** How long {@link #close()} waits for the reactor to complete what it accepted. */
    static final long CLOSE_WAIT_SECONDS = 60;

    /** Closes what the fd belongs to, after the ring is gone. */
    private final AutoCloseable fdOwner;
    private final int deviceFd;
    private final DeviceOptions options;
    private final ConcurrentLinkedQueue<Object> queue = new ConcurrentLinkedQueue<>();
    private final EventFd wake;
    private final AtomicBoolean sleeping = new AtomicBoolean();
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private final Thread reactor;
    private volatile boolean closing;
    private volatile Throwable fatal;
    /** Set once the reactor takes nothing more from the queue: submitters then fail what they queued. */
    private volatile boolean dead;
    /** Operations given up while still in the kernel: the device's memory must not be freed. */
    private volatile boolean leaked;
    private final AtomicLong fixedOps = new AtomicLong();
    private final AtomicLong plainOps = new AtomicLong();
    private volatile String ringDescription = "not started";

    // Reactor-only state.
    private Ring ring;
    private int fileIndex;
    private int sqeFileFlags;
    private final IoBatch[] slotBatch;
    private final int[] slotOp;
    /** Operations a slot's SQE covers (more than one for a deallocation of several ranges). */
    private final int[] slotOps;
    private final int[] freeSlots;
    private int freeTop;
    private int inFlight;
    private boolean wakeArmed;
    private IoBatch current;
    private int currentNext;
    /** Parts of {@code current}'s op {@code currentNext} already handed out, and how many it has. */
    private int currentPart;
    private int currentParts;
    private final long[] slotPartLength;
    private final long[] regionBase = new long[MAX_REGIONS];
    private final long[] regionEnd = new long[MAX_REGIONS];
    private int regionCount;
    private boolean fixedBuffers;
    private MemorySegment wakeBuffer;

    IoUringBlockDevice(String path, int fd, AutoCloseable fdOwner, long size, int blockSize, int maxTransfer,
            DeviceOptions options) throws IOException {
        super(path, size, blockSize, maxTransfer, blockSize, options);
        this.fdOwner = fdOwner;
        this.deviceFd = fd;
        this.options = options;
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
        this.wake = EventFd.createBlocking();
        this.reactor = Thread.ofPlatform().daemon().name("fdpblock-" + engine() + "-" + java.nio.file.Path.of(path)
                .getFileName()).unstarted(this::run);
    }

    static IoUringBlockDevice open(NativeFile file, DeviceOptions options) throws IOException {
        return start(new IoUringBlockDevice(file.path().toString(), file.fd(), file, file.size(),
                file.logicalBlockSize(), 1 << 30, options));
    }

    /** Starts the reactor and waits until its ring is set up (or failed). */
    static <D extends IoUringBlockDevice> D start(D device) throws IOException {
        IoUringBlockDevice d = device;
        d.reactor.start();
        try {
            d.started.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            d.close();
            throw new IOException("interrupted while starting the " + d.engine() + " reactor for " + d.path(), e);
        } catch (ExecutionException e) {
            d.close();
            Throwable c = e.getCause();
            throw c instanceof IOException io ? io : new IOException(c);
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
     * Prepares one SQE for {@code part} at {@code deviceOffset}.
     *
     * @param region registered buffer index holding {@code part}, or -1
     * @param placementId the raw placement id ({@link io.fdpblock.nvme.PlacementId#NONE_VALUE}: none)
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
     * same batch may share it).
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
        return fixedOps.get();
    }

    long plainOps() {
        return plainOps.get();
    }

    @Override
    public long fixedBufferOps() {
        return fixedOps.get();
    }

    /** The ring as set up, e.g. {@code Ring[fd=5, sq=256, cq=512, flags=SINGLE_ISSUER|DEFER_TASKRUN]}. */
    String ringDescription() {
        return ringDescription;
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        enter("submit");
        try {
            checkFatal();
            validate(batch);
            batch.callback = callback;
            batch.remaining = batch.size();
            if (batch.size() == 0) {
                complete(batch, callback);
                return;
            }
            queue.offer(batch);
            if (dead) {
                failQueued(); // the reactor died after checkFatal: it will not take this batch
            } else {
                wakeIfSleeping();
            }
        } finally {
            leave();
        }
    }

    private void wakeIfSleeping() {
        if (sleeping.get() && sleeping.compareAndSet(true, false)) {
            wake.signal();
        }
    }

    private void checkFatal() throws IOException {
        Throwable t = fatal;
        if (t != null) {
            throw new IOException("the io_uring reactor of " + path() + " failed: " + t.getMessage(), t);
        }
    }

    @Override
    public boolean registerBuffers(MemorySegment region) throws IOException {
        return onReactor("registerBuffers", () -> registerRegion(region));
    }

    @Override
    public void unregisterBuffers(MemorySegment region) throws IOException {
        onReactor("unregisterBuffers", () -> unregisterRegion(region));
    }

    /** Ring operations must run on the ring's owner: queue them like a batch and wait. */
    private <T> T onReactor(String what, Callable<T> task) throws IOException {
        CompletableFuture<T> done = new CompletableFuture<>();
        runOnReactor(what, () -> {
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

    /**
     * Queues {@code task} for the reactor. Should the reactor be gone, the task runs on this thread
     * (with no ring it fails; tests use it to stop the reactor).
     */
    void runOnReactor(String what, Runnable task) throws IOException {
        enter(what);
        try {
            checkFatal();
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

    // ---- reactor ----

    private void run() {
        Ring r = null;
        Arena arena = Arena.ofConfined();
        try {
            r = Ring.open(ringOptions());
            ring = r;
            ringDescription = r.toString();
            try {
                r.registerFiles(deviceFd);
                fileIndex = 0;
                sqeFileFlags = Ring.SQE_FIXED_FILE;
            } catch (IOException e) {
                LOG.log(System.Logger.Level.INFO, "registered files unavailable, using the plain fd: " + e.getMessage());
                fileIndex = deviceFd;
                sqeFileFlags = 0;
            }
            try {
                r.registerSparseBuffers(MAX_REGIONS);
                fixedBuffers = true;
                if (buffers().capacity() > 0) {
                    registerRegion(buffers().region());
                }
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "fixed buffers unavailable on " + path()
                        + ", every I/O copies its iovec each time: " + e.getMessage());
            }
            wakeBuffer = arena.allocate(ValueLayout.JAVA_LONG);
            armWake();
            started.complete(null);
            loop();
        } catch (Throwable t) {
            fatal = t;
            if (!started.completeExceptionally(t)) {
                LOG.log(System.Logger.Level.ERROR, "io_uring reactor of " + path() + " failed", t);
            }
            if (r != null) {
                reapAfterFailure("the io_uring reactor failed: " + t);
            }
        } finally {
            String reason = fatal == null ? "the device is closed" : "the io_uring reactor failed: " + fatal;
            dead = true;
            failCurrent(reason);
            failQueued();
            if (leaked) {
                // Operations were given up while still in the kernel: neither the ring (whose
                // teardown would not wait for them) nor the memory they use may go.
                LOG.log(System.Logger.Level.ERROR, "io_uring device " + path() + ": operations were abandoned in the"
                        + " kernel; its ring and memory stay allocated");
            } else {
                if (r != null) {
                    releaseRegisteredFile(r);
                    r.close();
                }
                arena.close();
            }
            ring = null;
        }
    }

    /**
     * Drops the ring's reference to the device file now. A closed ring lets go of its registered files
     * later, in a kernel worker; until then the file stays open, and an exclusive reopen right after
     * {@link #close()} (O_EXCL on a block device, the flock on either) would find the device still in use.
     */
    private void releaseRegisteredFile(Ring r) {
        if (sqeFileFlags == 0) {
            return;
        }
        try {
            r.unregisterFiles();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "unregistering the file of " + path() + " before the ring's teardown: "
                    + e.getMessage());
        }
    }

    private boolean registerRegion(MemorySegment region) throws IOException {
        if (ring == null) {
            throw new IOException("the io_uring reactor of " + path() + " has stopped");
        }
        if (!fixedBuffers) {
            return false;
        }
        long chunks = (region.byteSize() + MAX_REGION_BYTES - 1) / MAX_REGION_BYTES;
        int free = 0;
        for (int i = 0; i < MAX_REGIONS; i++) {
            free += regionEnd[i] == 0 ? 1 : 0;
        }
        if (chunks > free) {
            LOG.log(System.Logger.Level.WARNING, "no registered buffer slot left for a region of "
                    + region.byteSize() + " bytes on " + path() + ": its I/O takes the non-fixed path");
            return false;
        }
        int slot = 0;
        for (long off = 0; off < region.byteSize(); off += MAX_REGION_BYTES) {
            while (regionEnd[slot] != 0) {
                slot++;
            }
            MemorySegment chunk = region.asSlice(off, Math.min(MAX_REGION_BYTES, region.byteSize() - off));
            ring.updateBuffer(slot, chunk);
            regionBase[slot] = chunk.address();
            regionEnd[slot] = chunk.address() + chunk.byteSize();
            regionCount = Math.max(regionCount, slot + 1);
        }
        return true;
    }

    /** Empties every registered slot inside {@code region}: its memory may be freed afterwards. */
    private Void unregisterRegion(MemorySegment region) throws IOException {
        long a = region.address();
        long e = a + region.byteSize();
        for (int i = 0; i < regionCount; i++) {
            if (regionEnd[i] != 0 && regionBase[i] >= a && regionEnd[i] <= e) {
                if (ring != null) {
                    ring.clearBuffer(i);
                }
                regionBase[i] = 0;
                regionEnd[i] = 0;
            }
        }
        return null;
    }

    private int regionOf(MemorySegment buf) {
        long a = buf.address();
        long e = a + buf.byteSize();
        for (int i = 0; i < regionCount; i++) {
            if (a >= regionBase[i] && e <= regionEnd[i] && regionEnd[i] != 0) {
                return i;
            }
        }
        return -1;
    }

    private void armWake() {
        long sqe = ring.prepRead(wake.fd(), wakeBuffer, 0, WAKE);
        if (sqe < 0) {
            throw new IllegalStateException("no SQE free to arm the wake-up read");
        }
        wakeArmed = true;
    }

    private void loop() throws IOException {
        Ring.CompletionHandler onCompletion = this::onCompletion;
        while (true) {
            fill();
            if (closing && inFlight == 0 && current == null && queue.isEmpty() && !wakeArmed) {
                return;
            }
            // From here we block in the kernel (the wake-up READ is armed until close). While slots are
            // free, new work must wake us, so say we sleep, then look once more for work that raced in.
            // With every slot in flight, only completions can let us proceed: no wake-ups wanted.
            if (freeTop > 0) {
                sleeping.set(true);
                if (current == null && !queue.isEmpty()) {
                    sleeping.set(false);
                    continue;
                }
            }
            ring.submitAndWait(1);
            sleeping.set(false);
            ring.reap(onCompletion);
        }
    }

    /** Moves queued work into SQEs while slots last. */
    private void fill() throws IOException {
        while (true) {
            if (current == null) {
                Object next = queue.poll();
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
            while (currentNext < current.size()) {
                if (freeTop == 0) {
                    return; // queue depth reached: wait for completions
                }
                int slot = freeSlots[freeTop - 1];
                if (current.kind(currentNext) == IoBatch.DEALLOCATE) {
                    int covered = prepareDeallocate(ring, current, currentNext, slot);
                    if (covered < 0) {
                        ring.submit(); // SQ full: hand what we have to the kernel, then retry once
                        covered = prepareDeallocate(ring, current, currentNext, slot);
                        if (covered < 0) {
                            return;
                        }
                    }
                    if (covered == 0) { // nothing to tell this device: done at once
                        current.complete(currentNext, 0);
                        currentNext++;
                        if (--current.remaining == 0) {
                            IoBatch done = current;
                            current = null;
                            complete(done, done.callback);
                            break;
                        }
                        continue;
                    }
                    freeTop--;
                    slotBatch[slot] = current;
                    slotOp[slot] = currentNext;
                    slotOps[slot] = covered;
                    slotPartLength[slot] = 0;
                    inFlight++;
                    currentNext += covered;
                    continue;
                }
                if (currentPart == 0) {
                    currentParts = partsOf(current, currentNext);
                    current.beginParts(currentNext, currentParts);
                }
                long sqe = preparePart(current, currentNext, currentPart, slot);
                if (sqe < 0) {
                    ring.submit(); // SQ full: hand what we have to the kernel, then retry once
                    sqe = preparePart(current, currentNext, currentPart, slot);
                    if (sqe < 0) {
                        return;
                    }
                }
                freeTop--;
                slotBatch[slot] = current;
                slotOp[slot] = currentNext;
                slotOps[slot] = 1;
                inFlight++;
                if (++currentPart == currentParts) {
                    currentPart = 0;
                    currentNext++;
                }
            }
            current = null;
        }
    }

    private int partsOf(IoBatch b, int i) {
        if (b.kind(i) == IoBatch.FLUSH) {
            return 1;
        }
        long len = b.length(i);
        long split = splitBytes();
        return len <= split ? 1 : (int) ((len - 1) / split + 1);
    }

    private long preparePart(IoBatch b, int i, int part, int slot) {
        if (b.kind(i) == IoBatch.FLUSH) {
            slotPartLength[slot] = 0;
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
            slotPartLength[slot] = piece.byteSize();
            (region >= 0 ? fixedOps : plainOps).getAndIncrement();
        }
        return sqe;
    }

    private void onCompletion(long userData, int res, int flags, long extra) {
        if (userData == WAKE) {
            wakeArmed = false;
            if (!closing && fatal == null) {
                armWake();
            }
            return;
        }
        if (userData == CANCEL) {
            return;
        }
        int slot = (int) userData;
        IoBatch b = slotBatch[slot];
        int op = slotOp[slot];
        int ops = slotOps[slot];
        slotBatch[slot] = null;
        freeSlots[freeTop++] = slot;
        inFlight--;
        boolean batchDone = false;
        if (ops > 1 || b.kind(op) == IoBatch.DEALLOCATE) { // one SQE for several deallocations
            for (int k = op; k < op + ops; k++) {
                b.beginParts(k, 1);
                completePart(b, k, res, 0);
                batchDone |= --b.remaining == 0;
            }
        } else if (completePart(b, op, res, slotPartLength[slot])) {
            batchDone = --b.remaining == 0;
        }
        if (batchDone) {
            complete(b, b.callback);
        }
    }

    /**
     * The failure path, before the ring goes: cancel whatever can be cancelled (the wake-up read,
     * requests not yet issued) and reap every operation still in the kernel, completing its batch with
     * the real result. Only if the ring itself no longer answers are the operations given up (their
     * batches fail with {@link IoBatch#buffersMayBeInUse()}) and the memory kept.
     */
    private void reapAfterFailure(String reason) {
        try {
            for (int slot = 0; slot < slotBatch.length; slot++) {
                if (slotBatch[slot] != null) {
                    cancel(slot);
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
            leaked = true;
            LOG.log(System.Logger.Level.ERROR, "io_uring reactor of " + path() + ": could not reap the " + inFlight
                    + " operations still in the kernel after a failure (" + t + "); they are abandoned", t);
            for (int slot = 0; slot < slotBatch.length; slot++) {
                IoBatch b = slotBatch[slot];
                if (b != null) {
                    slotBatch[slot] = null;
                    b.markBuffersMayBeInUse();
                    boolean done = false;
                    for (int k = slotOp[slot]; k < slotOp[slot] + slotOps[slot]; k++) {
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

    /** The rest of a batch taken from the queue but not (all) handed to the kernel fails. */
    private void failCurrent(String reason) {
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
            if (done && --b.remaining == 0) {
                complete(b, b.callback);
                return;
            }
            from++;
        }
        failRest(b, from, reason);
    }

    /** Fails every batch still queued (the kernel never saw them); runs tasks, which fail without a ring. */
    private void failQueued() {
        String reason = fatal == null ? "the device " + path() + " is closed"
                : "the io_uring reactor of " + path() + " failed: " + fatal;
        Object o;
        while ((o = queue.poll()) != null) {
            if (o instanceof IoBatch b) {
                failRest(b, 0, reason);
            } else if (o instanceof Runnable task) {
                task.run();
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
     * Stops accepting work, lets every accepted batch complete, then tears down the ring and closes
     * the file. Waits at most {@link #CLOSE_WAIT_SECONDS}; past that it says what it abandoned and
     * leaves the ring and memory allocated. Called from a completion callback it does not wait (the
     * reactor finishes by itself).
     */
    @Override
    public void close() {
        if (!markClosedAndDrain()) {
            return;
        }
        closing = true;
        wake.signal();
        if (Thread.currentThread() != reactor) {
            if (Threads.joinUninterruptibly(reactor, TimeUnit.SECONDS.toNanos(CLOSE_WAIT_SECONDS))) {
                release();
            } else {
                LOG.log(System.Logger.Level.ERROR, "io_uring device " + path() + ": " + queue.size()
                        + " batches queued and operations in flight did not complete within " + CLOSE_WAIT_SECONDS
                        + " s of close; they are abandoned, the ring and buffers stay allocated");
            }
        } else { // called from a completion callback: the reactor finishes by itself
            Thread.ofPlatform().daemon().start(() -> {
                Threads.joinUninterruptibly(reactor);
                release();
            });
        }
    }

    private void release() {
        if (leaked) {
            return; // see run(): the kernel may still use this memory
        }
        try {
            fdOwner.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "closing " + path() + " failed", e);
        }
        wake.close();
        buffers().close();
        releaseMemory();
    }

    /** Frees what an engine allocated for the kernel to use; runs once, after every operation was reaped. */
    void releaseMemory() {
    }
}
