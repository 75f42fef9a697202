package io.fdpblock.device;

import io.fdpblock.uring.EventFd;
import io.fdpblock.uring.NativeFile;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
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
 */
final class IoUringBlockDevice extends AbstractBlockDevice {
    private static final long WAKE = -1L;
    /** Registered buffer slots; the kernel caps one registered buffer at 1 GiB. */
    private static final int MAX_REGIONS = 64;
    private static final long MAX_REGION_BYTES = 1L << 30;

    private final NativeFile file;
    private final DeviceOptions options;
    private final ConcurrentLinkedQueue<Object> queue = new ConcurrentLinkedQueue<>();
    private final EventFd wake;
    private final AtomicBoolean sleeping = new AtomicBoolean();
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private final Thread reactor;
    private volatile boolean closing;
    private volatile Throwable fatal;
    private final AtomicLong fixedOps = new AtomicLong();
    private final AtomicLong plainOps = new AtomicLong();
    private volatile String ringDescription = "not started";

    // Reactor-only state.
    private Ring ring;
    private int fileIndex;
    private int sqeFileFlags;
    private final IoBatch[] slotBatch;
    private final int[] slotOp;
    private final int[] freeSlots;
    private int freeTop;
    private int inFlight;
    private IoBatch current;
    private int currentNext;
    private final long[] regionBase = new long[MAX_REGIONS];
    private final long[] regionEnd = new long[MAX_REGIONS];
    private int regionCount;
    private boolean fixedBuffers;
    private MemorySegment wakeBuffer;

    private IoUringBlockDevice(NativeFile file, long size, int blockSize, DeviceOptions options) throws IOException {
        super(file.path().toString(), size, blockSize, 1 << 30, blockSize, options);
        this.file = file;
        this.options = options;
        int depth = options.queueDepth();
        this.slotBatch = new IoBatch[depth];
        this.slotOp = new int[depth];
        this.freeSlots = new int[depth];
        for (int i = 0; i < depth; i++) {
            freeSlots[i] = depth - 1 - i;
        }
        this.freeTop = depth;
        this.wake = EventFd.createBlocking();
        this.reactor = Thread.ofPlatform().daemon().name("fdpblock-io_uring-" + file.path().getFileName())
                .unstarted(this::run);
    }

    static IoUringBlockDevice open(NativeFile file, DeviceOptions options) throws IOException {
        IoUringBlockDevice d = new IoUringBlockDevice(file, file.size(), file.logicalBlockSize(), options);
        d.reactor.start();
        try {
            d.started.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            d.close();
            throw new IOException("interrupted while starting the io_uring reactor for " + file.path(), e);
        } catch (ExecutionException e) {
            d.close();
            Throwable c = e.getCause();
            throw c instanceof IOException io ? io : new IOException(c);
        }
        return d;
    }

    @Override
    public IoEngine engine() {
        return IoEngine.IO_URING;
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
            wakeIfSleeping();
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
    public void flush() throws IOException {
        IoBatch b = new IoBatch(1);
        b.flush();
        execute(b);
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
        enter(what);
        try {
            checkFatal();
            queue.offer((Runnable) () -> {
                try {
                    done.complete(task.call());
                } catch (Throwable t) {
                    done.completeExceptionally(t);
                }
            });
            wakeIfSleeping();
        } finally {
            leave();
        }
        try {
            return done.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted during " + what + " on " + path(), e);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        }
    }

    // ---- reactor ----

    private void run() {
        try (Arena arena = Arena.ofConfined();
             Ring r = Ring.open(RingOptions.of(options.queueDepth()).withSqPoll(options.sqPollIdleMillis()))) {
            ring = r;
            ringDescription = r.toString();
            try {
                r.registerFiles(file.fd());
                fileIndex = 0;
                sqeFileFlags = Ring.SQE_FIXED_FILE;
            } catch (IOException e) {
                LOG.log(System.Logger.Level.INFO, "registered files unavailable, using the plain fd: " + e.getMessage());
                fileIndex = file.fd();
                sqeFileFlags = 0;
            }
            try {
                r.registerSparseBuffers(MAX_REGIONS);
                fixedBuffers = true;
                if (buffers().capacity() > 0) {
                    registerRegion(buffers().region());
                }
            } catch (IOException e) {
                fixedBuffers = false;
                LOG.log(System.Logger.Level.WARNING, "fixed buffers unavailable on " + path()
                        + ", every I/O copies its iovec each time: " + e.getMessage());
            }
            wakeBuffer = arena.allocate(ValueLayout.JAVA_LONG);
            armWake();
            started.complete(null);
            loop();
        } catch (Throwable t) {
            ring = null;
            fatal = t;
            if (!started.completeExceptionally(t)) {
                LOG.log(System.Logger.Level.ERROR, "io_uring reactor of " + path() + " failed", t);
            }
            failEverything("the io_uring reactor failed: " + t);
        } finally {
            ring = null;
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
    }

    private void loop() throws IOException {
        Ring.CompletionHandler onCompletion = this::onCompletion;
        while (true) {
            fill();
            if (closing && inFlight == 0 && current == null && queue.isEmpty()) {
                return;
            }
            // From here we block in the kernel (the wake-up READ is always armed). While slots are free,
            // new work must wake us, so say we sleep, then look once more for work that raced in. With
            // every slot in flight, only completions can let us proceed: no wake-ups wanted.
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
                long sqe = prepare(current, currentNext, slot);
                if (sqe < 0) {
                    ring.submit(); // SQ full: hand what we have to the kernel, then retry once
                    sqe = prepare(current, currentNext, slot);
                    if (sqe < 0) {
                        return;
                    }
                }
                freeTop--;
                slotBatch[slot] = current;
                slotOp[slot] = currentNext;
                inFlight++;
                currentNext++;
            }
            current = null;
        }
    }

    private long prepare(IoBatch b, int i, int slot) {
        byte kind = b.kind(i);
        long sqe;
        if (kind == IoBatch.FLUSH) {
            sqe = ring.prepFsync(fileIndex, true, slot);
        } else {
            MemorySegment buf = b.buffer(i);
            int region = regionOf(buf);
            boolean read = kind == IoBatch.READ;
            if (region >= 0) {
                sqe = read ? ring.prepReadFixed(fileIndex, buf, b.offset(i), region, slot)
                        : ring.prepWriteFixed(fileIndex, buf, b.offset(i), region, slot);
            } else {
                sqe = read ? ring.prepRead(fileIndex, buf, b.offset(i), slot)
                        : ring.prepWrite(fileIndex, buf, b.offset(i), slot);
            }
            if (sqe >= 0) {
                (region >= 0 ? fixedOps : plainOps).getAndIncrement();
            }
        }
        if (sqe >= 0 && sqeFileFlags != 0) {
            ring.addSqeFlags(sqe, sqeFileFlags);
        }
        return sqe;
    }

    private void onCompletion(long userData, int res, int flags, long extra) {
        if (userData == WAKE) {
            if (!closing) {
                armWake();
            }
            return;
        }
        int slot = (int) userData;
        IoBatch b = slotBatch[slot];
        int op = slotOp[slot];
        slotBatch[slot] = null;
        freeSlots[freeTop++] = slot;
        inFlight--;
        b.complete(op, res);
        if (--b.remaining == 0) {
            complete(b, b.callback);
        }
    }

    /** After a reactor failure: every batch in flight or queued completes, failed. */
    private void failEverything(String reason) {
        for (int slot = 0; slot < slotBatch.length; slot++) {
            IoBatch b = slotBatch[slot];
            if (b != null) {
                slotBatch[slot] = null;
                b.fail(slotOp[slot], reason);
                if (--b.remaining == 0) {
                    complete(b, b.callback);
                }
            }
        }
        if (current != null) {
            failRest(current, currentNext, reason);
            current = null;
        }
        Object o;
        while ((o = queue.poll()) != null) {
            if (o instanceof IoBatch b) {
                failRest(b, 0, reason);
            } else if (o instanceof Runnable task) {
                task.run(); // registration tasks answer for themselves (ring == null makes them fail)
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
     * the file. Called from a completion callback it does not wait (the reactor finishes by itself).
     */
    @Override
    public void close() {
        if (!markClosedAndDrain()) {
            return;
        }
        closing = true;
        wake.signal();
        if (Thread.currentThread() != reactor) {
            joinUninterruptibly(reactor);
            release();
        } else { // called from a completion callback: the reactor finishes by itself
            Thread.ofPlatform().daemon().start(() -> {
                joinUninterruptibly(reactor);
                release();
            });
        }
    }

    private static void joinUninterruptibly(Thread t) {
        boolean interrupted = false;
        while (true) {
            try {
                t.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void release() {
        file.close();
        wake.close();
        buffers().close();
    }
}
