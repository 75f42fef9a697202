package io.fdpblock.device;

import io.fdpblock.linux.Errno;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.util.Segments;
import io.fdpblock.util.Threads;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * pread/pwrite on a few I/O threads of the device's own: a submit never blocks its caller on I/O (the
 * contract's submits are non-blocking whatever the engine), and several batches run at once. Each
 * batch runs in order on one thread; its callback runs there. The reference engine the others are
 * checked against, and the fallback where io_uring is unavailable.
 */
final class PosixBlockDevice extends AbstractBlockDevice {
    /** I/O threads at most: each blocks in pread/pwrite, so a few give the device some depth. */
    private static final int MAX_THREADS = 4;
    /** How long close waits for the batches still queued or running. */
    private static final long CLOSE_WAIT_SECONDS = 60;

    private final NativeFile file;
    private final ExecutorService io;

    private PosixBlockDevice(NativeFile file, long size, int blockSize, DeviceOptions options) {
        super(file.path().toString(), size, blockSize, 1 << 30, file.isDirect() ? blockSize : 1, options);
        this.file = file;
        String name = "fdpblock-posix-" + file.path().getFileName();
        this.io = Executors.newFixedThreadPool(Math.min(MAX_THREADS, options.queueDepth()),
                Thread.ofPlatform().daemon().name(name + "-", 0).factory());
    }

    static PosixBlockDevice open(NativeFile file, DeviceOptions options) throws IOException {
        return new PosixBlockDevice(file, file.size(), file.logicalBlockSize(), options);
    }

    @Override
    public IoEngine engine() {
        return IoEngine.POSIX;
    }

    @Override
    boolean isDirectIo() {
        return file.isDirect();
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        enter("submit");
        try {
            validate(batch);
            refuseConfinedBuffers(batch);
            batch.callback = callback;
            io.execute(() -> {
                for (int i = 0; i < batch.size(); i++) {
                    batch.complete(i, runOrFail(batch, i));
                }
                complete(batch, callback);
            });
        } catch (RejectedExecutionException e) {
            throw closedException("submit");
        } finally {
            leave();
        }
    }

    /**
     * The I/O threads pass each buffer to pread/pwrite, which a segment confined to the submitting thread
     * refuses: said at submit, where the caller can act on it, instead of a batch that never completes.
     */
    private static void refuseConfinedBuffers(IoBatch batch) throws IOException {
        for (int i = 0; i < batch.size(); i++) {
            byte kind = batch.kind(i);
            if ((kind == IoBatch.READ || kind == IoBatch.WRITE) && Segments.isConfined(batch.buffer(i))) {
                throw new IOException(batch.describe(i) + ": its buffer is confined to one thread (Arena.ofConfined()),"
                        + " and the posix engine does its I/O on threads of its own: allocate I/O buffers from a shared"
                        + " or global arena (Arena.ofShared(), IoMemory.allocate)");
            }
        }
    }

    /** {@link #run}, and -EIO for anything it throws: every operation of a batch completes, whatever happens. */
    private long runOrFail(IoBatch batch, int i) {
        try {
            return run(batch, i);
        } catch (RuntimeException | Error e) {
            LOG.log(System.Logger.Level.ERROR, batch.describe(i) + " failed on the I/O thread", e);
            return -Errno.EIO;
        }
    }

    /** @return bytes transferred, or -errno */
    private long run(IoBatch batch, int i) {
        byte kind = batch.kind(i);
        if (kind == IoBatch.DEALLOCATE) {
            return 0; // nothing to tell a file
        }
        if (kind == IoBatch.FLUSH) {
            try {
                file.fdatasync();
                return 0;
            } catch (Errno.NativeIOException e) {
                return -e.errno();
            }
        }
        MemorySegment buf = batch.buffer(i);
        long offset = batch.offset(i);
        long done = 0;
        long len = buf.byteSize();
        try {
            while (done < len) { // pread/pwrite may transfer less than asked; only EOF ends a read early
                MemorySegment rest = done == 0 ? buf : buf.asSlice(done);
                long n = kind == IoBatch.READ ? file.pread(rest, offset + done) : file.pwrite(rest, offset + done);
                if (n == 0) {
                    break;
                }
                done += n;
            }
            return done;
        } catch (Errno.NativeIOException e) {
            return done > 0 ? done : -e.errno();
        }
    }

    @Override
    public void flush() throws IOException {
        enter("flush");
        try {
            file.fdatasync();
        } finally {
            leave();
        }
    }

    /** Runs the batches accepted so far, then closes the file; see {@link BlockDevice#close()}. */
    @Override
    public void close() {
        if (!markClosedAndDrain()) {
            return;
        }
        // close never abandons I/O because of an interrupt: the wait goes on through them
        if (!Threads.shutdownAndAwait(io, TimeUnit.SECONDS.toNanos(CLOSE_WAIT_SECONDS))) {
            LOG.log(System.Logger.Level.ERROR, "posix device " + path() + ": I/O still running after "
                    + CLOSE_WAIT_SECONDS + " s at close; its file and buffers are left open and allocated");
            return;
        }
        file.close();
        buffers().close();
    }
}
