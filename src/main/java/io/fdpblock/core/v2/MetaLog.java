package io.fdpblock.core.v2;

import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.nvme.PlacementId;

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
 * The fdpblock_v2 metadata log: every committed put and delete is a small checksummed record,
 * appended in group commits (one write carries every record that arrived since the last one, then a
 * flush makes it, and every slot written before it, durable) at most every
 * {@code meta_sync_interval_ms}, or as soon as records wait when that is 0 (puts are then
 * acknowledged only once durable). The log is a ring of chunks in the metadata area; a chunk's space is
 * reused only once the older of the two snapshots no longer needs it ({@link #snapshotDurable}): recovery
 * falls back to the older snapshot when the newest is damaged, and replays the log from its start.
 *
 * <pre>
 * chunk (from a block boundary): 0 "FDPBLG02" | 8 u64 incarnation | 16 u64 LSN (its place in the endless log)
 *   | 24 u32 body bytes | 28 u32 records (0xFFFFFFFF: padding to the end of the ring) | 32 u32 CRC32C of the body
 *   | 36 u32 CRC32C of bytes 0..35 | 40 records...; the next chunk starts at the next block boundary
 * PUT    1 | u16 key length | u32 slot | u32 size | u32 CRC32C | u16 group | u16 salt id | u64 h1 | u64 h2 | key
 * DELETE 2 | u32 slot | u64 h1 | u64 h2
 * SALT   3 | u16 salt id | u16 length | UTF-8 salt
 * COMMIT 4 | u64 LSN of the commit's first chunk (the first record of every chunk)
 * CLOSED 5 (the chunk a clean close writes: COMMIT, CLOSED)
 * </pre>
 *
 * A torn or stale chunk (bad CRC, another incarnation, an LSN that does not follow, a chunk of an
 * unfinished earlier commit) ends the log; {@link #probe} tells a torn tail from damage with later
 * commits after it.
 *
 * <p>A commit whose write or flush fails is the log's last: after a failed write or flush the device's
 * state of that batch is unknown (a failed fdatasync may drop the dirty pages it could not write, and
 * a later one then succeeds without them), so a later commit could make records durable while earlier
 * ones were lost. From then on no record is taken ({@link #appendPut} and {@link #appendSalt} refuse),
 * nothing more is written, and {@link #putsNotDurable} counts the puts that were not made durable;
 * a reopen recovers every commit that completed.
 */
public final class MetaLog {
    static final byte[] MAGIC = "FDPBLG02".getBytes(StandardCharsets.US_ASCII);
    static final int CHUNK_HEADER = 40;
    static final byte PUT = 1;
    static final byte DELETE = 2;
    static final byte SALT = 3;
    /**
     * First record of every chunk: the LSN of its commit's first chunk. Recovery tells by it a chunk that
     * continues a commit from one that starts the next (so a damaged chunk followed by a later commit is
     * corruption, not a torn tail), and a stale chunk of an unfinished commit from the chain.
     */
    static final byte COMMIT = 4;
    /** Last record of the chunk a clean close writes: the log ends here, nothing was torn. */
    static final byte CLOSED = 5;
    static final int COMMIT_RECORD = 9;
    private static final int PAD = -1;

    /** What replay hands each record to. */
    interface Visitor {
        void put(long h1, long h2, int slot, int size, int crc, int group, int saltId, String key);

        void delete(long h1, long h2, int slot);

        void salt(int id, String salt);
    }

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

    MetaLog(BlockDevice device, V2Layout layout, long nextLsn, long reclaimLsn, long snapshotLsn, int syncIntervalMs,
            PlacementId placement, Runnable wantSnapshot) {
        this.device = device;
        this.layout = layout;
        this.blockAlign = layout.blockAlign();
        this.placement = placement;
        this.syncIntervalMs = syncIntervalMs;
        this.nextLsn = nextLsn;
        this.reclaimLsn = reclaimLsn;
        this.snapshotLsn = Math.max(reclaimLsn, snapshotLsn);
        this.maxChunkBody = maxChunkBody(layout);
        this.wantSnapshot = wantSnapshot;
    }

    /**
     * Body bytes a chunk holds at most: a group commit with more is written as several chunks (a record
     * is never split, and none is longer than this).
     */
    static long maxChunkBody(V2Layout layout) {
        return Math.max(layout.blockAlign(), Math.min(8L << 20, layout.logBytes() / 8) - CHUNK_HEADER);
    }

    /** The longest chunk the log writes, header included: replay reads windows at least this large. */
    static long maxChunkBytes(V2Layout layout) {
        return V2Layout.roundUp(CHUNK_HEADER + maxChunkBody(layout), layout.blockAlign());
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
            ensure(35 + key.length);
            pending.put(PUT).putShort((short) key.length).putInt(slot).putInt(size).putInt(crc).putShort((short) group)
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
            ensure(21);
            pending.put(DELETE).putInt(slot).putLong(h1).putLong(h2);
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
            ensure(5 + b.length);
            pending.put(SALT).putShort((short) id).putShort((short) b.length).put(b);
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
     * ({@link #CLOSED}), flushed, so that the next open knows the end was not torn. Skipped (the next open
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

    /** Writes {@code batch}'s records as chunks of at most {@link #maxChunkBody} bytes, whole records each. */
    private void write(ByteBuffer batch) throws IOException {
        batch.flip();
        long commitStart = -1;
        long room = maxChunkBody - COMMIT_RECORD;
        while (batch.hasRemaining()) {
            int from = batch.position();
            int end = from;
            while (end < batch.limit() && end - from < room) {
                int len = recordLength(batch, end);
                if (end + len - from > room && end > from) {
                    break;
                }
                end += len;
            }
            commitStart = writeChunk(batch, from, end, commitStart, false);
            batch.position(end);
        }
    }

    private static int recordLength(ByteBuffer b, int at) {
        return switch (b.get(at)) {
            case PUT -> 35 + Short.toUnsignedInt(b.getShort(at + 1));
            case DELETE -> 21;
            case SALT -> 5 + Short.toUnsignedInt(b.getShort(at + 3));
            default -> throw new IllegalStateException("log record type " + b.get(at));
        };
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
        for (int at = from; at < end; at += recordLength(batch, at)) {
            records++;
        }
        int body = COMMIT_RECORD + end - from + (closing ? 1 : 0);
        long size = V2Layout.roundUp(CHUNK_HEADER + body, blockAlign);
        long lsn = spaceFor(size);
        long start = commitStart < 0 ? lsn : commitStart;
        MemorySegment buf = buffer(size);
        buf.asSlice(0, size).fill((byte) 0);
        buf.set(ValueLayout.JAVA_BYTE, CHUNK_HEADER, COMMIT);
        buf.set(OnDiskFormat.U64, CHUNK_HEADER + 1, start);
        MemorySegment.copy(batch.array(), from, buf, ValueLayout.JAVA_BYTE, CHUNK_HEADER + COMMIT_RECORD, end - from);
        if (closing) {
            buf.set(ValueLayout.JAVA_BYTE, CHUNK_HEADER + body - 1, CLOSED);
        }
        CRC32C crc = new CRC32C();
        crc.update(buf.asSlice(CHUNK_HEADER, body).asByteBuffer());
        writeHeader(buf, lsn, body, records, (int) crc.getValue());
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

    private void writeHeader(MemorySegment buf, long lsn, int body, int records, int bodyCrc) {
        MemorySegment.copy(MAGIC, 0, buf, ValueLayout.JAVA_BYTE, 0, MAGIC.length);
        buf.set(OnDiskFormat.U64, 8, layout.incarnation());
        buf.set(OnDiskFormat.U64, 16, lsn);
        buf.set(OnDiskFormat.U32, 24, body);
        buf.set(OnDiskFormat.U32, 28, records);
        buf.set(OnDiskFormat.U32, 32, bodyCrc);
        CRC32C c = new CRC32C();
        c.update(buf.asSlice(0, 36).asByteBuffer());
        buf.set(OnDiskFormat.U32, 36, (int) c.getValue());
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
            writeHeader(pad, lsn, 0, PAD, 0);
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
        return writer == null || io.fdpblock.util.Threads.joinUninterruptibly(writer,
                TimeUnit.MILLISECONDS.toNanos(timeoutMillis));
    }

    /** Frees the write buffer; only after the thread stopped (no write of it can be in flight). */
    void release() {
        arena.close();
    }

    // ------------------------------------------------------------------ replay

    /**
     * Where a replay stopped and why.
     *
     * @param endLsn the LSN after the last valid chunk: where the next one is written
     * @param chunks valid chunks read (padding chunks included)
     * @param stop why the chunk at {@code endLsn} was not taken
     * @param torn whether that chunk is one of this log's, cut off or damaged (a torn tail), rather than
     *        no chunk or an older one (the log's clean end)
     */
    public record Replay(long endLsn, long chunks, String stop, boolean torn, long closedAt) {
        Replay(long endLsn, long chunks, String stop, boolean torn) {
            this(endLsn, chunks, stop, torn, -1);
        }

        /** The log ends at the chunk a clean close wrote: nothing after it can be the store's. */
        boolean closed() {
            return closedAt >= 0;
        }
    }

    /** The LSN of the commit a chunk's body belongs to (its COMMIT record), or -1 (written before they were). */
    static long commitStart(byte[] body) {
        return body.length >= COMMIT_RECORD && body[0] == COMMIT
                ? ByteBuffer.wrap(body, 1, 8).order(ByteOrder.LITTLE_ENDIAN).getLong() : -1;
    }

    /** The chunk a clean close writes: exactly a COMMIT and a CLOSED record (a parsed body's last byte alone could be any record's). */
    private static boolean isCloseMarker(byte[] body, int records) {
        return records == 2 && body.length == COMMIT_RECORD + 1 && body[0] == COMMIT && body[COMMIT_RECORD] == CLOSED;
    }

    /**
     * Reads the log from {@code fromLsn} until a chunk is missing, torn, stale or does not parse (a
     * record the store cannot have written: see {@link #visit}), handing every record of the chunks before
     * it to {@code visitor}, and none of that chunk's.
     *
     * @param fromLsn where a chunk starts: a non-negative multiple of block_align (a snapshot's start LSN,
     *        which {@link Snapshots} checks)
     * @return the LSN after the last valid chunk: where the next one is written
     */
    static long replay(BlockDevice device, V2Layout layout, long fromLsn, Visitor visitor) throws IOException {
        return scan(device, layout, fromLsn, visitor).endLsn();
    }

    /** {@link #replay}, also saying where and why it stopped (recovery notes, {@code inspect}). */
    static Replay scan(BlockDevice device, V2Layout layout, long fromLsn, Visitor visitor) throws IOException {
        int blockAlign = layout.blockAlign();
        // every chunk fits a window: one that did not would end the replay there, and lose what follows
        long window = Math.min(layout.logBytes(), Math.max(4L << 20, maxChunkBytes(layout)));
        long lsn = fromLsn;
        long chunks = 0;
        long prevCommit = -1; // the commit of the chunk before, once one is read
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(window, 4096);
            long bufLsn = -1; // LSN of buf's first byte
            long bufLen = 0;
            while (lsn <= Long.MAX_VALUE - layout.logBytes()) { // beyond, LSNs of a next lap would overflow
                long lap = layout.logBytes() - lsn % layout.logBytes();
                // make sure the header block is in the window
                if (bufLsn < 0 || lsn < bufLsn || lsn + blockAlign > bufLsn + bufLen) {
                    bufLen = Math.min(window, lap);
                    read(device, layout, lsn, buf.asSlice(0, bufLen));
                    bufLsn = lsn;
                }
                MemorySegment h = buf.asSlice(lsn - bufLsn, blockAlign);
                if (!OnDiskFormat.hasMagic(h, MAGIC)) {
                    return new Replay(lsn, chunks, "no chunk at LSN " + lsn, false);
                }
                if (h.get(OnDiskFormat.U64, 8) != layout.incarnation()) {
                    return new Replay(lsn, chunks, "a chunk of another incarnation at LSN " + lsn + " (written before"
                            + " the store was formatted or migrated)", false);
                }
                if (h.get(OnDiskFormat.U32, 36) != headerCrc(h)) {
                    return new Replay(lsn, chunks, "torn chunk at LSN " + lsn + ": its header fails its CRC32C", true);
                }
                long stored = h.get(OnDiskFormat.U64, 16);
                if (stored != lsn) {
                    return stored < lsn && (lsn - stored) % layout.logBytes() == 0
                            ? new Replay(lsn, chunks, "an older lap's chunk (LSN " + stored + ") at LSN " + lsn, false)
                            : new Replay(lsn, chunks, "a chunk at LSN " + lsn + " that says LSN " + stored, true);
                }
                int records = h.get(OnDiskFormat.U32, 28);
                if (records == PAD) {
                    chunks++;
                    lsn += lap;
                    continue;
                }
                long body = Integer.toUnsignedLong(h.get(OnDiskFormat.U32, 24));
                long size = V2Layout.roundUp(CHUNK_HEADER + body, blockAlign);
                if (size > lap || size > window) { // crossing the ring's end, or larger than any chunk we write
                    return new Replay(lsn, chunks, "a chunk at LSN " + lsn + " of " + size + " bytes, more than the"
                            + " log writes", true);
                }
                if (lsn + size > bufLsn + bufLen) {
                    bufLen = Math.min(window, lap);
                    read(device, layout, lsn, buf.asSlice(0, bufLen));
                    bufLsn = lsn;
                }
                MemorySegment chunk = buf.asSlice(lsn - bufLsn, size);
                byte[] bytes = chunk.asSlice(CHUNK_HEADER, body).toArray(ValueLayout.JAVA_BYTE);
                CRC32C c = new CRC32C();
                c.update(bytes);
                if ((int) c.getValue() != chunk.get(OnDiskFormat.U32, 32)) {
                    return new Replay(lsn, chunks, "torn chunk at LSN " + lsn + ": its body fails its CRC32C", true);
                }
                if (!visit(bytes, records, layout, null)) {
                    return new Replay(lsn, chunks, "a chunk at LSN " + lsn + " whose records do not parse", true);
                }
                long commit = commitStart(bytes);
                if (commit > lsn || (commit >= 0 && commit < lsn && prevCommit >= 0 && commit != prevCommit)) {
                    // a chunk left of a commit that a crash cut short, which a later commit did not reach yet
                    return new Replay(lsn, chunks, "a chunk at LSN " + lsn + " of a commit from LSN " + commit
                            + ", which the log before it does not continue (left of an unfinished commit)", true);
                }
                prevCommit = commit < 0 ? prevCommit : commit;
                visit(bytes, records, layout, visitor); // only once the whole chunk parsed
                chunks++;
                if (isCloseMarker(bytes, records)) {
                    return new Replay(lsn + size, chunks, "closed cleanly at LSN " + lsn, false, lsn);
                }
                lsn += size;
            }
            return new Replay(lsn, chunks, "LSN " + lsn + ": no log reaches that far (a damaged snapshot's start)", true);
        }
    }

    /**
     * Chunks past where a replay stopped that prove the log goes on: intact chunks of this incarnation,
     * at their place in the ring, of a commit that began after the stop (or written before commits were
     * marked, so unknown). A crash tears only the commit in progress, whose chunks all began at or before
     * the stop; a later commit is written only once the one before it was flushed.
     *
     * @param firstLsn the lowest LSN of them
     * @param chunks how many
     * @param puts their PUT records, which a replay that stops at the damage does not apply
     * @param keys the distinct keys of those PUTs, by h1
     * @param resumeLsn past the highest of them: where a store opened anyway writes on, clear of them
     */
    public record Beyond(long firstLsn, long chunks, long puts, java.util.Set<Long> keys, long resumeLsn) {}

    /**
     * Looks over the whole ring for chunks that prove the log goes on past {@code stopLsn} (a read of the
     * log area, done only when a replay did not end at a clean close).
     *
     * @return null when there are none: what follows {@code stopLsn} is a torn tail or the log's end
     */
    static Beyond probe(BlockDevice device, V2Layout layout, long stopLsn) throws IOException {
        int blockAlign = layout.blockAlign();
        long ringBytes = layout.logBytes();
        long window = Math.min(ringBytes, 4L << 20);
        long first = Long.MAX_VALUE;
        long chunks = 0;
        long[] puts = {0};
        java.util.Set<Long> keys = new java.util.HashSet<>();
        long resume = -1;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(window, 4096);
            MemorySegment chunkBuf = null;
            for (long base = 0; base < ringBytes; base += window) {
                long len = Math.min(window, ringBytes - base);
                IoBatch b = new IoBatch(1);
                b.read(layout.logOffset() + base, buf.asSlice(0, len));
                device.execute(b);
                for (long off = 0; off < len; off += blockAlign) {
                    MemorySegment h = buf.asSlice(off, blockAlign);
                    long place = base + off;
                    if (!OnDiskFormat.hasMagic(h, MAGIC) || h.get(OnDiskFormat.U64, 8) != layout.incarnation()
                            || h.get(OnDiskFormat.U32, 36) != headerCrc(h) || h.get(OnDiskFormat.U32, 28) == PAD) {
                        continue;
                    }
                    long lsn = h.get(OnDiskFormat.U64, 16);
                    long body = Integer.toUnsignedLong(h.get(OnDiskFormat.U32, 24));
                    long size = V2Layout.roundUp(CHUNK_HEADER + body, blockAlign);
                    if (lsn <= stopLsn || Math.floorMod(lsn, ringBytes) != place || place + size > ringBytes) {
                        continue;
                    }
                    if (chunkBuf == null || chunkBuf.byteSize() < size) {
                        chunkBuf = arena.allocate(Math.max(size, 1 << 20), 4096);
                    }
                    IoBatch c = new IoBatch(1);
                    c.read(layout.logOffset() + place, chunkBuf.asSlice(0, size));
                    device.execute(c);
                    byte[] bytes = chunkBuf.asSlice(CHUNK_HEADER, body).toArray(ValueLayout.JAVA_BYTE);
                    CRC32C crc = new CRC32C();
                    crc.update(bytes);
                    int records = h.get(OnDiskFormat.U32, 28);
                    if ((int) crc.getValue() != h.get(OnDiskFormat.U32, 32) || !visit(bytes, records, layout, null)) {
                        continue;
                    }
                    long commit = commitStart(bytes);
                    if (commit >= 0 && commit <= stopLsn) {
                        continue; // the rest of the commit the stop cut short, or left of an earlier one
                    }
                    chunks++;
                    first = Math.min(first, lsn);
                    resume = Math.max(resume, lsn + size);
                    visit(bytes, records, layout, new Visitor() {
                        @Override
                        public void put(long h1, long h2, int slot, int size, int crc, int group, int saltId, String key) {
                            puts[0]++;
                            keys.add(h1);
                        }

                        @Override
                        public void delete(long h1, long h2, int slot) {}

                        @Override
                        public void salt(int id, String salt) {}
                    });
                }
            }
        }
        return chunks == 0 ? null : new Beyond(first, chunks, puts[0], keys, resume);
    }

    private static int headerCrc(MemorySegment h) {
        CRC32C c = new CRC32C();
        c.update(h.asSlice(0, 36).asByteBuffer());
        return (int) c.getValue();
    }

    private static void read(BlockDevice device, V2Layout layout, long lsn, MemorySegment into) throws IOException {
        IoBatch b = new IoBatch(1);
        b.read(layout.logOffset() + lsn % layout.logBytes(), into);
        device.execute(b);
    }

    /**
     * Parses a chunk's body: exactly {@code records} records, each one the store can have written (a put
     * of a key of 1 to {@value PutRequest#MAX_KEY_BYTES} bytes of well-formed UTF-8 and an entry
     * {@link V2Layout#holdsEntry} accepts, a delete of one of its slots, a salt).
     *
     * @param v what gets the records, or null to check the body only
     * @return false when it does not parse (the chunk is then not trusted)
     */
    /** Keys are ASCII as {@code KeyCodec} writes them: valid UTF-8 without a decoder (one per record was most of a replay). */
    private static boolean isAscii(byte[] b, int from, int length) {
        for (int i = from; i < from + length; i++) {
            if (b[i] < 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean visit(byte[] body, int records, V2Layout layout, Visitor v) {
        if (records < 0) {
            return false; // a count above 2^31: more records than any chunk holds
        }
        if (v != null) { // parsed already: whatever the visitor throws is its own failure, never "does not parse"
            try {
                return walk(body, records, layout, v);
            } catch (java.nio.charset.CharacterCodingException e) {
                throw new IllegalStateException("a log chunk that parsed does not decode", e); // only the check decodes
            }
        }
        try {
            return walk(body, records, layout, null);
        } catch (RuntimeException | java.nio.charset.CharacterCodingException e) {
            return false; // a record cut off, or a key that is not UTF-8
        }
    }

    private static boolean walk(byte[] body, int records, V2Layout layout, Visitor v)
            throws java.nio.charset.CharacterCodingException {
        ByteBuffer b = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < records; r++) {
            byte type = b.get();
            switch (type) {
                case PUT -> {
                    int keyLen = Short.toUnsignedInt(b.getShort());
                    int slot = b.getInt();
                    int size = b.getInt();
                    int crc = b.getInt();
                    int group = Short.toUnsignedInt(b.getShort());
                    int salt = Short.toUnsignedInt(b.getShort());
                    long h1 = b.getLong();
                    long h2 = b.getLong();
                    if (keyLen == 0 || keyLen > PutRequest.MAX_KEY_BYTES || !layout.holdsEntry(slot, size)) {
                        return false;
                    }
                    int at = b.position();
                    b.position(at + keyLen);
                    if (v == null) { // the check pass: the key must be UTF-8
                        if (!isAscii(body, at, keyLen)) {
                            StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(body, at, keyLen));
                        }
                    } else { // checked already: decoded the quick way
                        v.put(h1, h2, slot, size, crc, group, salt, new String(body, at, keyLen, StandardCharsets.UTF_8));
                    }
                }
                case DELETE -> {
                    int slot = b.getInt();
                    long h1 = b.getLong();
                    long h2 = b.getLong();
                    if (!layout.holdsSlot(slot)) {
                        return false;
                    }
                    if (v != null) {
                        v.delete(h1, h2, slot);
                    }
                }
                case COMMIT -> { // the first record only; recovery reads it from the chunk (commitStart)
                    if (r != 0) {
                        return false;
                    }
                    b.getLong();
                }
                case CLOSED -> { // the last record only
                    if (r != records - 1) {
                        return false;
                    }
                }
                case SALT -> {
                    int id = Short.toUnsignedInt(b.getShort());
                    byte[] s = new byte[Short.toUnsignedInt(b.getShort())];
                    b.get(s);
                    if (v != null) {
                        v.salt(id, new String(s, StandardCharsets.UTF_8));
                    }
                }
                default -> {
                    return false;
                }
            }
        }
        return b.position() == body.length;
    }
}
