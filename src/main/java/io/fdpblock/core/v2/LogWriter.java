package io.fdpblock.core.v2;

import io.fdpblock.core.RawBlockCore;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.nvme.PlacementId;

import io.fdpblock.util.Threads;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;
import java.util.zip.CRC32C;

/**
 * Writes fdpblock_v2's metadata log ({@link LogFormat}): every committed put and delete is a small
 * checksummed record, appended in group commits (one write carries every record that arrived since the
 * last one, then a flush makes it, and every slot written before it, durable) at most every
 * {@code meta_sync_interval_ms}, or as soon as records wait when that is 0 (puts are then
 * acknowledged only once durable), on a thread of its own. The log is a ring of chunks in the metadata
 * area; a chunk's space is reused only once the older of the two snapshots no longer needs it
 * ({@link #snapshotDurable}): recovery falls back to the older snapshot when the newest is damaged, and
 * replays the log from its start ({@link LogReader}).
 *
 * <p>A commit whose write or flush fails is the log's last: after a failed write or flush the device's
 * state of that batch is unknown (a failed fdatasync may drop the dirty pages it could not write, and
 * a later one then succeeds without them), so a later commit could make records durable while earlier
 * ones were lost. From then on no record is taken ({@link #appendPut} and {@link #appendSalt} refuse),
 * nothing more is written, and {@link #putsNotDurable} counts the puts that were not made durable;
 * a reopen recovers every commit that completed.
 */
final class LogWriter {
    private final BlockDevice device;
    private final V2Layout layout;
    private final int blockAlign;
    private final PlacementId placement;
    private final int syncIntervalMs;
    private final long maxChunkBody;
    /** Told when the log wants a snapshot to free space (a quarter of it is in use since the last). */
    private final Runnable wantSnapshot;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final Condition progress = lock.newCondition();
    private ByteBuffer pending = newBuffer(64 << 10);
    private long pendingSince;
    /** Guarded by {@link #lock}: commit at once (closing). */
    private boolean eager;
    private long appendedTicket;
    private long durableTicket;
    private long nextLsn;
    private long reclaimLsn;
    /** Guarded by {@link #lock}: the newest durable snapshot's start (the next snapshot is due a quarter on). */
    private long snapshotLsn;
    /** Guarded by {@link #lock}: {@link #commitNow} waits for a commit of everything appended. */
    private boolean commitRequested;
    private boolean stopping;
    /** Set under {@link #lock}, once; read without it by the put path ({@link #failureCause}). */
    private volatile IOException failure;
    /** Guarded by {@link #lock}: a commit waits for a snapshot to free log space. */
    private boolean waitingForSpace;
    /** Guarded by {@link #lock}: put and delete records taken, and how many of them the last commit made durable. */
    private long appendedPuts;
    private long appendedDeletes;
    private long durablePuts;
    private long durableDeletes;
    private final List<Waiter> waiters = new ArrayList<>();
    private Thread writer;
    private final AtomicLong bytesWritten = new AtomicLong();
    private final AtomicLong commits = new AtomicLong();
    /** Time the commits spent writing their chunks, and in their flush (where a store's puts wait). */
    private final AtomicLong writeNanos = new AtomicLong();
    private final AtomicLong flushNanos = new AtomicLong();
    private MemorySegment writeBuffer;
    private final Arena arena = Arena.ofShared();

    private record Waiter(long ticket, LongConsumer action) {}

    LogWriter(BlockDevice device, V2Layout layout, long nextLsn, long reclaimLsn, long snapshotLsn, int syncIntervalMs,
            PlacementId placement, Runnable wantSnapshot) {
        this.device = device;
        this.layout = layout;
        this.blockAlign = layout.blockAlign();
        this.placement = placement;
        this.syncIntervalMs = syncIntervalMs;
        this.nextLsn = nextLsn;
        this.reclaimLsn = reclaimLsn;
        this.snapshotLsn = Math.max(reclaimLsn, snapshotLsn);
        this.maxChunkBody = LogFormat.maxChunkBody(layout);
        this.wantSnapshot = wantSnapshot;
    }

    private static ByteBuffer newBuffer(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    private void ensure(int bytes) {
        if (pending.remaining() < bytes) {
            ByteBuffer bigger = newBuffer(Math.max(pending.capacity() * 2, pending.position() + bytes));
            pending.flip();
            bigger.put(pending);
            pending = bigger;
        }
    }

    /** Starts the group-commit thread. */
    void start(String name) {
        writer = Thread.ofPlatform().daemon().name("fdpblock-metalog-" + name).start(this::run);
    }

    // ------------------------------------------------------------------ appends (any thread)

    /**
     * @return the record's ticket, for {@link #whenDurable}; -1 when a commit failed (nothing is taken:
     *         the put must not be committed)
     */
    long appendPut(long h1, long h2, int slot, int size, int crc, int group, int saltId, byte[] key) {
        lock.lock();
        try {
            if (failure != null) {
                return -1;
            }
            appendedPuts++;
            ensure(LogFormat.PUT_RECORD + key.length);
            pending.put(LogFormat.PUT).putShort((short) key.length).putInt(slot).putInt(size).putInt(crc).putShort((short) group)
                    .putShort((short) saltId).putLong(h1).putLong(h2).put(key);
            return appended();
        } finally {
            lock.unlock();
        }
    }

    /** After a failed commit the delete is only counted ({@link #deletesNotDurable}): it is never written. */
    void appendDelete(long h1, long h2, int slot) {
        lock.lock();
        try {
            appendedDeletes++;
            if (failure != null) {
                return;
            }
            ensure(LogFormat.DELETE_RECORD);
            pending.put(LogFormat.DELETE).putInt(slot).putLong(h1).putLong(h2);
            appended();
        } finally {
            lock.unlock();
        }
    }

    /** @return its ticket, or -1 when a commit failed (nothing is taken) */
    long appendSalt(int id, String salt) {
        byte[] b = salt.getBytes(StandardCharsets.UTF_8);
        lock.lock();
        try {
            if (failure != null) {
                return -1;
            }
            ensure(LogFormat.SALT_RECORD + b.length);
            LogFormat.putSalt(pending.put(LogFormat.SALT), id, b);
            return appended();
        } finally {
            lock.unlock();
        }
    }

    /** Under {@link #lock}. */
    private long appended() {
        if (pendingSince == 0) {
            pendingSince = System.nanoTime();
        }
        appendedTicket++;
        if (syncIntervalMs == 0 || pending.position() >= maxChunkBody) {
            work.signal();
        }
        return appendedTicket;
    }

    /**
     * Runs {@code action} once record {@code ticket} is durable: at once when it is, else on the
     * log's thread after the commit; {@code action} gets the durable ticket, or -1 when the log failed.
     */
    void whenDurable(long ticket, LongConsumer action) {
        long result;
        lock.lock();
        try {
            if (durableTicket >= ticket) {
                result = ticket; // durable before any failure
            } else if (failure != null) {
                result = -1;
            } else {
                waiters.add(new Waiter(ticket, action));
                work.signal();
                return;
            }
        } finally {
            lock.unlock();
        }
        action.accept(result);
    }

    /** The last ticket appended so far. */
    long appendedTicket() {
        lock.lock();
        try {
            return appendedTicket;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Makes every record appended so far durable, and waits.
     *
     * @throws IOException when the log could not be written
     */
    void commitNow() throws IOException {
        commitNow(false);
    }

    /**
     * {@link #commitNow()}, or, with {@code unlessFull}, false as soon as the commit waits for a snapshot to
     * free log space (the snapshot thread of a closing store is stopped: the caller takes one, then asks
     * again).
     */
    boolean commitNow(boolean unlessFull) throws IOException {
        long target;
        boolean interrupted = false; // a close is not interrupted: the interrupt is kept for the caller
        lock.lock();
        try {
            target = appendedTicket;
            commitRequested = true;
            work.signal();
            while (durableTicket < target && failure == null && writer != null && writer.isAlive()) {
                if (unlessFull && waitingForSpace) {
                    return false;
                }
                try {
                    progress.awaitNanos(TimeUnit.MILLISECONDS.toNanos(50));
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (failure != null) {
                throw new IOException("the fdpblock_v2 log of " + device.path() + " could not be written: "
                        + failure.getMessage(), failure);
            }
            if (durableTicket < target) {
                throw new IOException("the fdpblock_v2 log of " + device.path() + " is stopped with records not written");
            }
            return true;
        } finally {
            lock.unlock();
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * After the writer stopped, with nothing left to write: a last chunk that says the log ends here
     * ({@link LogFormat#CLOSED}), flushed, so that the next open knows the end was not torn. Skipped (the next open
     * then checks the log past its end) after a failure, or when the log has no room for it.
     *
     * @return whether it was written
     */
    boolean writeCloseMarker() throws IOException {
        lock.lock();
        try {
            if (failure != null || (writer != null && writer.isAlive()) || pending.position() > 0
                    || nextLsn + blockAlign - reclaimLsn > layout.logBytes()) {
                return false;
            }
        } finally {
            lock.unlock();
        }
        writeChunk(newBuffer(0), 0, 0, -1, true);
        device.flush();
        return true;
    }

    /**
     * From now on, commits whatever is appended at once instead of after {@code meta_sync_interval_ms}:
     * a closing store waits for the puts acknowledged once durable ({@code meta_sync_interval_ms} 0),
     * and should not wait an interval for each.
     */
    void commitEagerly() {
        lock.lock();
        try {
            eager = true;
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Where the next chunk goes: a snapshot started now must be followed by the log from here. */
    long nextLsn() {
        lock.lock();
        try {
            return nextLsn;
        } finally {
            lock.unlock();
        }
    }

    /**
     * A snapshot that starts at {@code newestStart} is durable, and the one still kept beside it starts at
     * {@code olderStart}: the log before the older one's start may be overwritten.
     */
    void snapshotDurable(long newestStart, long olderStart) {
        lock.lock();
        try {
            reclaimLsn = Math.max(reclaimLsn, Math.min(olderStart, newestStart));
            snapshotLsn = Math.max(snapshotLsn, newestStart);
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Bytes of log since the newest durable snapshot's start. */
    long bytesSinceSnapshot() {
        lock.lock();
        try {
            return nextLsn - snapshotLsn;
        } finally {
            lock.unlock();
        }
    }

    long bytesWritten() {
        return bytesWritten.get();
    }

    long commits() {
        return commits.get();
    }

    /** Nanoseconds the commits spent writing their chunks. */
    long writeNanos() {
        return writeNanos.get();
    }

    /** Nanoseconds the commits spent in their flush. */
    long flushNanos() {
        return flushNanos.get();
    }

    String failure() {
        IOException f = failure;
        return f == null ? null : f.getMessage();
    }

    /** The failure of the commit that stopped the log, or null while it takes records. Lock-free. */
    IOException failureCause() {
        return failure;
    }

    /** Put records taken that no commit made durable, once a commit failed (0 before). */
    long putsNotDurable() {
        lock.lock();
        try {
            return failure == null ? 0 : appendedPuts - durablePuts;
        } finally {
            lock.unlock();
        }
    }

    /** Delete records taken, or counted after the failure, that no commit made durable, once a commit failed (0 before). */
    long deletesNotDurable() {
        lock.lock();
        try {
            return failure == null ? 0 : appendedDeletes - durableDeletes;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ the group-commit thread

    private void run() {
        while (true) {
            ByteBuffer batch;
            long ticket;
            long batchPuts;
            long batchDeletes;
            lock.lock();
            try {
                while (!readyLocked()) {
                    if (stopping && pending.position() == 0) {
                        progress.signalAll();
                        return;
                    }
                    long waitNanos = pending.position() == 0 ? TimeUnit.SECONDS.toNanos(1)
                            : pendingSince + TimeUnit.MILLISECONDS.toNanos(syncIntervalMs) - System.nanoTime();
                    work.awaitNanos(Math.max(1, waitNanos));
                }
                batch = pending;
                pending = newBuffer(Math.max(64 << 10, batch.capacity() / 2));
                ticket = appendedTicket;
                batchPuts = appendedPuts;
                batchDeletes = appendedDeletes;
                pendingSince = 0;
                commitRequested = false;
            } catch (InterruptedException e) {
                continue; // the log is stopped by stop(), never by an interrupt
            } finally {
                lock.unlock();
            }
            IOException failed = null;
            if (batch.position() > 0) {
                try {
                    long t0 = System.nanoTime();
                    write(batch);
                    long t1 = System.nanoTime();
                    // The chunks, and every slot written before them, are durable. A power loss during the
                    // flush may keep a chunk and tear a slot its records point at: a load's CRC32C check
                    // makes those bytes a miss (RawBlockCore#unverifiedSlots under "recovery").
                    device.flush();
                    flushNanos.addAndGet(System.nanoTime() - t1);
                    writeNanos.addAndGet(t1 - t0);
                    commits.incrementAndGet();
                } catch (IOException e) {
                    failed = e;
                    lock.lock();
                    try {
                        failure = e; // before any callback runs: no record taken from now on is acknowledged
                    } finally {
                        lock.unlock();
                    }
                    RawBlockCore.LOG.log(System.Logger.Level.ERROR, "fdpblock_v2 log of " + device.path()
                            + " could not be written: " + e.getMessage() + "; the store is read-only until it is"
                            + " reopened (no later commit could be trusted to keep what this one lost)", e);
                }
            }
            // The callbacks of what became durable run before commitNow() hears of it: a caller that
            // committed finds the slots its deletes freed back in the allocator.
            long result = failed == null ? ticket : -1;
            List<Waiter> ready = takeWaiters(failed != null, ticket);
            while (!ready.isEmpty()) {
                for (Waiter w : ready) {
                    try {
                        w.action().accept(result);
                    } catch (Throwable t) {
                        RawBlockCore.LOG.log(System.Logger.Level.ERROR, "a durability callback threw", t);
                    }
                }
                ready = takeWaiters(failed != null, ticket); // registered while the others ran
            }
            lock.lock();
            try {
                if (failed == null) {
                    durableTicket = ticket;
                    durablePuts = batchPuts;
                    durableDeletes = batchDeletes;
                }
                ready = takeWaitersLocked(failed != null, ticket); // registered since: none may wait for nothing
                progress.signalAll();
            } finally {
                lock.unlock();
            }
            for (Waiter w : ready) {
                w.action().accept(result);
            }
            if (failed != null) {
                return; // later commits could not be trusted to land after this one
            }
        }
    }

    private List<Waiter> takeWaiters(boolean all, long upTo) {
        lock.lock();
        try {
            return takeWaitersLocked(all, upTo);
        } finally {
            lock.unlock();
        }
    }

    private List<Waiter> takeWaitersLocked(boolean all, long upTo) {
        List<Waiter> ready = new ArrayList<>();
        waiters.removeIf(w -> {
            if (all || w.ticket() <= upTo) {
                ready.add(w);
                return true;
            }
            return false;
        });
        return ready;
    }

    /** Under {@link #lock}: whether to commit now. */
    private boolean readyLocked() {
        if (pending.position() == 0) {
            return false;
        }
        return stopping || eager || commitRequested || syncIntervalMs == 0
                || pending.position() >= maxChunkBody
                || System.nanoTime() - pendingSince >= TimeUnit.MILLISECONDS.toNanos(syncIntervalMs);
    }

    /** Writes {@code batch}'s records as chunks of at most {@link LogFormat#maxChunkBody} bytes, whole records each. */
    private void write(ByteBuffer batch) throws IOException {
        batch.flip();
        long commitStart = -1;
        long room = maxChunkBody - LogFormat.COMMIT_RECORD;
        while (batch.hasRemaining()) {
            int from = batch.position();
            int end = from;
            while (end < batch.limit() && end - from < room) {
                int len = LogFormat.recordLength(batch, end);
                if (end + len - from > room && end > from) {
                    break;
                }
                end += len;
            }
            commitStart = writeChunk(batch, from, end, commitStart, false);
            batch.position(end);
        }
    }

    /**
     * Writes {@code batch[from, end)} as one chunk, after its COMMIT record (and before a CLOSED one when
     * {@code closing}).
     *
     * @param commitStart the LSN of this commit's first chunk, or -1 when this is it
     * @return the LSN of this commit's first chunk
     */
    private long writeChunk(ByteBuffer batch, int from, int end, long commitStart, boolean closing)
            throws IOException {
        int records = 1 + (closing ? 1 : 0);
        for (int at = from; at < end; at += LogFormat.recordLength(batch, at)) {
            records++;
        }
        int body = LogFormat.COMMIT_RECORD + end - from + (closing ? 1 : 0);
        long size = LogFormat.chunkBytes(body, blockAlign);
        long lsn = spaceFor(size);
        long start = commitStart < 0 ? lsn : commitStart;
        MemorySegment buf = buffer(size);
        buf.asSlice(0, size).fill((byte) 0);
        LogFormat.putCommit(buf.asSlice(LogFormat.CHUNK_HEADER), start);
        MemorySegment.copy(batch.array(), from, buf, ValueLayout.JAVA_BYTE, LogFormat.CHUNK_HEADER + LogFormat.COMMIT_RECORD, end - from);
        if (closing) {
            buf.set(ValueLayout.JAVA_BYTE, LogFormat.CHUNK_HEADER + body - 1, LogFormat.CLOSED);
        }
        CRC32C crc = new CRC32C();
        crc.update(buf.asSlice(LogFormat.CHUNK_HEADER, body).asByteBuffer());
        LogFormat.writeHeader(buf, layout.incarnation(), lsn, body, records, (int) crc.getValue());
        IoBatch b = new IoBatch(1);
        b.write(physical(lsn), buf.asSlice(0, size), placement);
        device.execute(b);
        bytesWritten.addAndGet(size);
        lock.lock();
        try {
            nextLsn = lsn + size;
        } finally {
            lock.unlock();
        }
        return start;
    }

    private long physical(long lsn) {
        return layout.logOffset() + lsn % layout.logBytes();
    }

    /**
     * The LSN where a chunk of {@code size} bytes goes: after a padding chunk when it would cross the end
     * of the ring; waiting for a snapshot while the space it needs is not yet reclaimed.
     */
    private long spaceFor(long size) throws IOException {
        long lsn;
        lock.lock();
        try {
            lsn = nextLsn;
        } finally {
            lock.unlock();
        }
        long room = layout.logBytes() - lsn % layout.logBytes();
        if (room < size) { // pad to the end of the ring: chunks never wrap
            waitForSpace(lsn, room);
            MemorySegment pad = buffer(blockAlign);
            pad.asSlice(0, blockAlign).fill((byte) 0);
            LogFormat.writeHeader(pad, layout.incarnation(), lsn, 0, LogFormat.PAD, 0);
            IoBatch b = new IoBatch(1);
            b.write(physical(lsn), pad.asSlice(0, blockAlign), placement);
            device.execute(b);
            bytesWritten.addAndGet(blockAlign);
            lsn += room;
            lock.lock();
            try {
                nextLsn = lsn;
            } finally {
                lock.unlock();
            }
        }
        waitForSpace(lsn, size);
        return lsn;
    }

    private void waitForSpace(long lsn, long size) throws IOException {
        lock.lock();
        try {
            long logged = 0;
            while (lsn + size - reclaimLsn > layout.logBytes()) {
                waitingForSpace = true;
                progress.signalAll();
                if (stopping) { // no snapshot will come: writing on would overwrite log that recovery needs
                    throw new IOException("the fdpblock_v2 log of " + device.path() + " is full and the store is"
                            + " closing: " + (lsn + size - reclaimLsn) + " bytes since the oldest snapshot kept, the"
                            + " log holds " + layout.logBytes());
                }
                wantSnapshot.run();
                if (System.nanoTime() - logged > TimeUnit.SECONDS.toNanos(10)) {
                    logged = System.nanoTime();
                    RawBlockCore.LOG.log(System.Logger.Level.WARNING, "fdpblock_v2 log of " + device.path() + " is"
                            + " full: commits wait for a snapshot to free its oldest part");
                }
                work.awaitNanos(TimeUnit.MILLISECONDS.toNanos(100));
            }
            waitingForSpace = false;
            if (lsn + size - snapshotLsn > layout.logBytes() / 4) {
                wantSnapshot.run(); // a quarter of the ring since the last snapshot: time for the next
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            waitingForSpace = false;
            lock.unlock();
        }
    }

    private MemorySegment buffer(long size) {
        if (writeBuffer == null || writeBuffer.byteSize() < size) {
            writeBuffer = arena.allocate(Math.max(size, 1 << 20), Math.max(4096, device.bufferAlignment()));
        }
        return writeBuffer;
    }

    /**
     * Writes what is pending, then stops the thread.
     *
     * @return false when it had not stopped within {@code timeoutMillis}
     */
    boolean stop(long timeoutMillis) {
        lock.lock();
        try {
            stopping = true;
            work.signalAll();
        } finally {
            lock.unlock();
        }
        return writer == null || Threads.joinUninterruptibly(writer,
                TimeUnit.MILLISECONDS.toNanos(timeoutMillis));
    }

    /** Frees the write buffer; only after the thread stopped (no write of it can be in flight). */
    void release() {
        arena.close();
    }
}
