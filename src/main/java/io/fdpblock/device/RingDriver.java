package io.fdpblock.device;

import io.fdpblock.uring.Ring;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/**
 * One ring of an {@link IoUringBlockDevice} and the operations in flight on it: one operation part (SQE)
 * per slot, user_data = {@code slotBase} + slot. It turns batches into SQEs, submits as the device's
 * {@link SubmitPolicy} says, hands completions back to their batches, and on a failure reaps what the
 * kernel still holds before the ring may go. Driven by one thread at a time (a {@link Reactor}'s, or a
 * {@link CallerRing}'s caller inside {@link IoUringBlockDevice#execute}), so it needs no locks; the
 * device decides what an SQE says (the engine), this class only when and in which slot.
 */
abstract class RingDriver {
    private static final System.Logger LOG = AbstractBlockDevice.LOG;
    /** user_data of a reactor's wake-up read. */
    static final long WAKE = -1L;
    /** user_data of the cancel requests the failure path sends (their completions are only counted). */
    static final long CANCEL = -2L;

    final IoUringBlockDevice device;
    final int slotBase;
    final SubmitPolicy policy;
    Ring ring;
    private boolean fixedBuffers;
    private final long[] appliedBase = new long[Regions.SLOTS];
    private final long[] appliedEnd = new long[Regions.SLOTS];
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

    RingDriver(IoUringBlockDevice device, int slotBase, SubmitPolicy policy) {
        this.device = device;
        this.slotBase = slotBase;
        this.policy = policy;
        int depth = device.options().queueDepth();
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
                ring.registerFiles(device.deviceFd());
                device.useRegisteredFile(true);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.INFO, "registered files unavailable, using the plain fd: " + e.getMessage());
                device.useRegisteredFile(false);
            }
        } else if (device.sqeFileFlags() != 0) {
            ring.registerFiles(device.deviceFd()); // the SQEs name the file by its index on every ring
        }
        try {
            ring.registerSparseBuffers(Regions.SLOTS);
            fixedBuffers = true;
            if (first) {
                device.fixedBuffersAvailable();
            }
            syncRegions();
        } catch (IOException e) { // e.g. RLIMIT_MEMLOCK: what could not be registered takes the plain path
            if (first) {
                LOG.log(System.Logger.Level.WARNING, "fixed buffers unavailable on " + device.path()
                        + ", every I/O copies its iovec each time: " + e.getMessage());
            }
        }
    }

    /**
     * Closes this ring, dropping its reference to the device file first. A closed ring lets go of its
     * registered files later, in a kernel worker; until then the file stays open, and an exclusive
     * reopen right after {@link IoUringBlockDevice#close()} (O_EXCL on a block device, the flock on either) would find
     * the device still in use. Every ring registers the file, so every ring does this.
     */
    final void closeRing(Ring r) {
        if (device.sqeFileFlags() != 0) {
            try {
                r.unregisterFiles();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "unregistering the file of " + device.path() + " before the ring's"
                        + " teardown: " + e.getMessage());
            }
        }
        r.close();
    }

    /**
     * Makes this ring's registered buffers those of {@link IoUringBlockDevice#regions()}; a slot that
     * fails stays empty.
     */
    final void syncRegions() throws IOException {
        Regions want = device.regions();
        if (want.generation() == appliedGeneration || !fixedBuffers) {
            appliedGeneration = want.generation();
            return;
        }
        IOException first = null;
        for (int i = 0; i < Regions.SLOTS; i++) {
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
        for (int i = 0; i < Regions.SLOTS; i++) {
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
                int covered = device.prepareDeallocate(ring, b, currentNext, slot);
                if (covered < 0) {
                    submitPending(); // SQ full: hand what we have to the kernel, then retry once
                    covered = device.prepareDeallocate(ring, b, currentNext, slot);
                    if (covered < 0) {
                        return false;
                    }
                }
                if (covered == 0) { // nothing to tell this device: done at once
                    b.complete(currentNext, 0);
                    currentNext++;
                    if (--b.remaining == 0) {
                        current = null;
                        AbstractBlockDevice.complete(b, b.callback);
                        return true;
                    }
                    continue;
                }
                take(local, b, currentNext, covered, 0);
                currentNext += covered;
                maybeSubmit(currentNext < b.size());
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
            maybeSubmit(currentNext < b.size());
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
        long split = device.splitBytes();
        return len <= split ? 1 : (int) ((len - 1) / split + 1);
    }

    private long preparePart(IoBatch b, int i, int part, int slot, int local) {
        if (b.kind(i) == IoBatch.FLUSH) {
            slotPartLength[local] = 0;
            return device.prepareFlush(ring, slot);
        }
        MemorySegment buf = b.buffer(i);
        long from = 0;
        MemorySegment piece = buf;
        if (currentParts > 1) {
            long split = device.splitBytes();
            from = part * split;
            piece = buf.asSlice(from, Math.min(split, buf.byteSize() - from));
        }
        int region = regionOf(piece);
        long sqe = device.prepareReadWrite(ring, b.kind(i) == IoBatch.READ, piece, b.offset(i) + from, region,
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
     *
     * @param batchContinues whether the next SQE of the same batch is prepared right after this one (the
     *        policy may then hold a few more; whatever is held goes at the latest with the ring's next wait)
     */
    private void maybeSubmit(boolean batchContinues) throws IOException {
        int inKernel = inFlight - unsubmitted;
        boolean now = batchContinues ? policy.submitWithinBatch(unsubmitted, inKernel)
                : policy.submitNow(unsubmitted, inKernel);
        if (now && !(reaping && entersAfterReap() && ring.reapLeft() == 0)) {
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
        submitAndWait();
        reap(handler);
    }

    /** Submits what is prepared and waits for one completion at least; reaps nothing. */
    final void submitAndWait() throws IOException {
        tick();
        int n = ring.submitAndWait(1);
        submitted(n);
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
                device.completePart(b, k, res, 0);
                batchDone |= --b.remaining == 0;
            }
        } else if (device.completePart(b, op, res, slotPartLength[local])) {
            batchDone = --b.remaining == 0;
        }
        if (batchDone) {
            completions = reapedIo; // counted before the callback: what it starts may read the stats
            AbstractBlockDevice.complete(b, b.callback);
            afterCallback();
        }
    }

    /** After a batch's callback ran inside a reap, with more completions maybe still to hand out. */
    void afterCallback() {
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
            device.markLeaked();
            LOG.log(System.Logger.Level.ERROR, "io_uring ring of " + device.path() + ": could not reap the " + inFlight
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
                        AbstractBlockDevice.complete(b, b.callback);
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
                AbstractBlockDevice.complete(b, b.callback);
                return;
            }
            from++;
        }
        failRest(b, from, reason);
    }

    /** Fails {@code b}'s ops from {@code from} on (none of them reached the kernel), completing it. */
    static void failRest(IoBatch b, int from, String reason) {
        for (int i = from; i < b.size(); i++) {
            b.fail(i, reason);
            if (--b.remaining == 0) {
                AbstractBlockDevice.complete(b, b.callback);
            }
        }
    }
}
