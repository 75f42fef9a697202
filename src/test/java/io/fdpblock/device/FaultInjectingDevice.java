package io.fdpblock.device;

import io.fdpblock.linux.Errno;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A test wrapper around a real device: records every submission (ops and placement ids), and on
 * request fails the next submission, fails the next completion, or holds submissions until released;
 * and, like a full or failing disk, fails every write to a range ({@link #failWrites}) or every flush
 * ({@link #failFlushes}) with an errno until {@link #clearFaults()}.
 */
public final class FaultInjectingDevice implements BlockDevice {
    /** What one submit carried. */
    public record Submission(int ops, int writes, List<Integer> placementIds, List<Long> offsets) {}

    private final BlockDevice inner;
    private final List<Submission> submissions = new CopyOnWriteArrayList<>();
    private volatile boolean failNextSubmit;
    private volatile boolean failNextCompletion;
    private volatile boolean hold;
    private volatile boolean failRegistration;
    private final List<Runnable> held = new ArrayList<>();
    private volatile List<Integer> placementIds;
    private volatile long reclaimUnitBytes;
    private final List<long[]> deallocations = new CopyOnWriteArrayList<>();
    /** A write to [from, to) fails with errno. */
    private record WriteFault(long from, long to, int errno) {}
    private volatile WriteFault writeFault;
    private volatile int flushErrno;
    private final AtomicLong injectedFaults = new AtomicLong();

    public FaultInjectingDevice(BlockDevice inner) {
        this.inner = inner;
    }

    /** Acts as an FDP device: reports these placement ids and reclaim unit size, and takes deallocates. */
    public FaultInjectingDevice emulatePlacement(List<Integer> ids, long ruBytes) {
        this.placementIds = List.copyOf(ids);
        this.reclaimUnitBytes = ruBytes;
        return this;
    }

    /** (offset, length) of every deallocate, in order. */
    public List<long[]> deallocations() {
        return deallocations;
    }

    @Override
    public boolean supportsPlacement() {
        return placementIds != null;
    }

    @Override
    public List<Integer> placementIds() {
        return placementIds == null ? List.of() : placementIds;
    }

    @Override
    public long reclaimUnitBytes() {
        return reclaimUnitBytes;
    }

    @Override
    public boolean supportsDeallocate() {
        return placementIds != null;
    }


    public List<Submission> submissions() {
        return submissions;
    }

    public void clearSubmissions() {
        submissions.clear();
    }

    public void failNextSubmit() {
        failNextSubmit = true;
    }

    /** Every buffer registration fails (as with a low RLIMIT_MEMLOCK). */
    public void failRegistration() {
        failRegistration = true;
    }

    public void failNextCompletion() {
        failNextCompletion = true;
    }

    /**
     * From now on every batch with a write that overlaps {@code [from, to)} fails with {@code errno}
     * (e.g. {@link Errno#ENOSPC}, {@link Errno#EIO}) on each of its operations, and none of it reaches
     * the device: what a full file system does to a write it cannot place.
     */
    public void failWrites(long from, long to, int errno) {
        writeFault = new WriteFault(from, to, errno);
    }

    /** From now on every flush (and every batch with a flush) fails with {@code errno}; the writes before it stay written. */
    public void failFlushes(int errno) {
        flushErrno = errno;
    }

    /** Ends {@link #failWrites} and {@link #failFlushes}. */
    public void clearFaults() {
        writeFault = null;
        flushErrno = 0;
    }

    /** Operations failed by {@link #failWrites} or {@link #failFlushes} so far. */
    public long injectedFaults() {
        return injectedFaults.get();
    }

    /** The errno to fail {@code batch} with, or 0. */
    private int faultOf(IoBatch batch) {
        WriteFault w = writeFault;
        int flush = flushErrno;
        for (int i = 0; i < batch.size(); i++) {
            if (w != null && batch.isWrite(i) && batch.offset(i) < w.to() && batch.offset(i) + batch.length(i) > w.from()) {
                return w.errno();
            }
            if (flush != 0 && batch.kind(i) == IoBatch.FLUSH) {
                return flush;
            }
        }
        return 0;
    }

    /** Holds submissions (nothing reaches the device) until {@link #release()}. */
    public synchronized void hold() {
        hold = true;
    }

    public synchronized int heldCount() {
        return held.size();
    }

    /** Sends every held submission to the device and stops holding. */
    public void release() {
        List<Runnable> go;
        synchronized (this) {
            hold = false;
            go = new ArrayList<>(held);
            held.clear();
        }
        go.forEach(Runnable::run);
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        List<Integer> pids = new ArrayList<>();
        List<Long> offsets = new ArrayList<>();
        int writes = 0;
        for (int i = 0; i < batch.size(); i++) {
            if (batch.isWrite(i)) {
                writes++;
                pids.add(batch.placementId(i).value());
            }
            if (batch.isDeallocate(i)) {
                deallocations.add(new long[] {batch.offset(i), batch.length(i)});
            }
            offsets.add(batch.kind(i) == IoBatch.FLUSH ? -1L : batch.offset(i));
        }
        submissions.add(new Submission(batch.size(), writes, pids, offsets));
        if (failNextSubmit) {
            failNextSubmit = false;
            throw new IOException("injected submission failure");
        }
        int errno = faultOf(batch);
        if (errno != 0) {
            batch.devicePath = inner.path();
            for (int i = 0; i < batch.size(); i++) {
                batch.complete(i, -errno);
            }
            injectedFaults.incrementAndGet();
            callback.onComplete(batch);
            return;
        }
        IoBatch.Callback cb = callback;
        if (failNextCompletion) {
            failNextCompletion = false;
            cb = b -> {
                b.fail(b.size() - 1, "injected completion failure");
                callback.onComplete(b);
            };
        }
        IoBatch.Callback finalCb = cb;
        synchronized (this) {
            if (hold) {
                held.add(() -> {
                    try {
                        inner.submit(batch, finalCb);
                    } catch (IOException e) {
                        throw new IllegalStateException(e);
                    }
                });
                return;
            }
        }
        inner.submit(batch, finalCb);
    }

    @Override public String path() { return inner.path(); }
    @Override public IoEngine engine() { return inner.engine(); }
    @Override public long sizeBytes() { return inner.sizeBytes(); }
    @Override public int logicalBlockSize() { return inner.logicalBlockSize(); }
    @Override public int maxTransferBytes() { return inner.maxTransferBytes(); }
    @Override public int bufferAlignment() { return inner.bufferAlignment(); }
    @Override public AlignedBufferPool buffers() { return inner.buffers(); }
    @Override
    public boolean registerBuffers(MemorySegment region) throws IOException {
        if (failRegistration) {
            throw new IOException("io_uring_register_buffers_update_tag: ENOMEM (12, Cannot allocate memory)"
                    + " [injected: as with a low RLIMIT_MEMLOCK]");
        }
        return inner.registerBuffers(region);
    }
    @Override public void unregisterBuffers(MemorySegment region) throws IOException { inner.unregisterBuffers(region); }
    @Override
    public void flush() throws IOException {
        int errno = flushErrno;
        if (errno != 0) {
            injectedFaults.incrementAndGet();
            throw Errno.exception("fdatasync(" + inner.path() + ")", errno);
        }
        inner.flush();
    }
    @Override public void close() { inner.close(); }
}
