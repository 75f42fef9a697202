package io.fdpblock.sim;

import io.fdpblock.tools.util.Threads;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Appends trace records (docs/trace-format.md) from any number of threads. Records go into one of two
 * direct buffers under a short lock (no allocation per record); a full buffer is handed to a writer
 * thread, so a device's I/O thread never waits on the trace file unless that file falls a whole buffer
 * behind (then it waits: records are never dropped while the file can be written).
 */
public final class TraceWriter implements AutoCloseable {
    /** Bytes per buffer: 32,768 records. */
    static final int BUFFER_BYTES = 1 << 20;

    private final Path path;
    private final FileChannel channel;
    private final long startNanos;
    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled when {@link #pending} is taken and written (its buffer is the spare again). */
    private final Condition written = lock.newCondition();
    /** Signalled when there is a buffer to write, or at close. */
    private final Condition work = lock.newCondition();
    private final Thread writer;

    private ByteBuffer current;
    private ByteBuffer spare;
    /** A full buffer waiting for the writer thread, or null. */
    private ByteBuffer pending;
    private boolean closing;
    private boolean closed;
    private IOException failure;
    private long records;
    private long lostRecords;

    private TraceWriter(Path path, FileChannel channel, long startNanos) {
        this.path = path;
        this.channel = channel;
        this.startNanos = startNanos;
        this.current = ByteBuffer.allocateDirect(BUFFER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        this.spare = ByteBuffer.allocateDirect(BUFFER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        this.writer = Thread.ofPlatform().daemon().name("fdpblock-trace-writer").unstarted(this::writeLoop);
    }

    /**
     * Creates (or truncates) {@code path} and writes the header for {@code device}.
     *
     * @param deviceBytes capacity of the traced device
     * @param lbaBytes its logical block size
     * @param reclaimUnitBytes its FDP reclaim unit size, 0 when unknown
     * @param placementIdCount the placement ids it reports, 0 without FDP
     */
    public static TraceWriter create(Path path, long deviceBytes, int lbaBytes, long reclaimUnitBytes,
            int placementIdCount) throws IOException {
        TraceFormat.Header h = new TraceFormat.Header(deviceBytes, lbaBytes, reclaimUnitBytes, placementIdCount,
                System.currentTimeMillis() * 1_000_000L);
        FileChannel ch;
        try {
            ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING);
        } catch (IOException e) {
            throw new IOException("cannot create trace file " + path + ": " + e, e);
        }
        try {
            ByteBuffer head = ByteBuffer.allocate(TraceFormat.HEADER_BYTES);
            TraceFormat.writeHeader(head, h);
            head.flip();
            while (head.hasRemaining()) {
                ch.write(head);
            }
        } catch (IOException e) {
            ch.close();
            throw new IOException("cannot write the header of trace file " + path + ": " + e, e);
        }
        TraceWriter w = new TraceWriter(path, ch, System.nanoTime());
        w.writer.start();
        return w;
    }

    public Path path() {
        return path;
    }

    /** Records a completed write of {@code length} bytes at {@code offset} with a placement id (0 = none). */
    public void write(long offset, long length, int placementId) {
        append(TraceFormat.OP_WRITE, offset, length, placementId);
    }

    public void flush() {
        append(TraceFormat.OP_FLUSH, 0, 0, 0);
    }

    public void deallocate(long offset, long length) {
        append(TraceFormat.OP_DEALLOCATE, offset, length, 0);
    }

    private void append(int op, long offset, long length, int placementId) {
        lock.lock();
        try {
            if (closed || failure != null) {
                lostRecords++; // after close (a late completion) or after the file failed: see lostRecords()
                return;
            }
            if (current.remaining() < TraceFormat.RECORD_BYTES) {
                handOver();
                if (failure != null) {
                    lostRecords++;
                    return;
                }
            }
            // the clock is read under the lock, so times never go backwards in file order
            TraceFormat.putRecord(current, System.nanoTime() - startNanos, op, offset, length, placementId);
            records++;
        } finally {
            lock.unlock();
        }
    }

    /** Gives the current buffer to the writer and takes the spare, waiting for it if the file lags. Locked. */
    private void handOver() {
        boolean interrupted = false;
        while (pending != null && failure == null) {
            try {
                written.await();
            } catch (InterruptedException e) {
                interrupted = true; // a device thread must not lose records to an interrupt; restored below
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (failure != null) {
            current.clear();
            return;
        }
        current.flip();
        pending = current;
        current = spare;
        current.clear();
        spare = null;
        work.signal();
    }

    private void writeLoop() {
        while (true) {
            ByteBuffer b;
            lock.lock();
            try {
                while (pending == null && !closing) {
                    work.awaitUninterruptibly();
                }
                if (pending == null) {
                    return;
                }
                b = pending;
            } finally {
                lock.unlock();
            }
            IOException error = null;
            try {
                while (b.hasRemaining()) {
                    channel.write(b);
                }
            } catch (IOException e) {
                error = e;
            }
            lock.lock();
            try {
                if (error != null && failure == null) {
                    failure = new IOException("writing trace file " + path + " failed after " + records
                            + " records: " + error, error);
                }
                b.clear();
                spare = b;
                pending = null;
                written.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** Records accepted so far. */
    public long records() {
        lock.lock();
        try {
            return records;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Writes what is buffered, makes the file durable and closes it. Idempotent.
     *
     * @throws IOException when any part of the trace could not be written (naming the file and the
     *         records written before the failure)
     */
    @Override
    public void close() throws IOException {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            if (current.position() > 0 && failure == null) {
                handOver();
            }
            while (pending != null) {
                written.awaitUninterruptibly();
            }
            closing = true;
            work.signal();
        } finally {
            lock.unlock();
        }
        Threads.joinUninterruptibly(writer);
        IOException err = failure;
        try {
            if (err == null) {
                channel.force(false);
            }
        } catch (IOException e) {
            err = new IOException("fsync of trace file " + path + " failed: " + e, e);
        } finally {
            channel.close();
        }
        if (err != null) {
            throw err;
        }
    }

    /** Records not written: they came after a write to the file failed, or after close. */
    public long lostRecords() {
        lock.lock();
        try {
            return lostRecords;
        } finally {
            lock.unlock();
        }
    }
}
