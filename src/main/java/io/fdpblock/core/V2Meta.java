package io.fdpblock.core;

import com.dynatrace.hash4j.hashing.HashValue128;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * fdpblock_v2 ({@code docs/on-device-format.md}): the compact index ({@link CompactIndex}), every change
 * appended to the metadata log ({@link MetaLog}, group commits), and snapshots of the index written in
 * the background ({@link Snapshots}) when a quarter of the log is in use since the last one, whose
 * start frees the log before it. Recovery loads the newest valid snapshot and replays the log after it.
 *
 * <p>A deleted key's slot is reused only once its delete record is durable: a recovery that replays the
 * log then never finds the key pointing at another key's bytes.
 */
final class V2Meta implements MetaStore {
    private final RawBlockCore core;
    private final V2Layout layout;
    private final CompactIndex index;
    private final boolean created;
    private final String createdNote;
    private MetaLog log;
    private Thread snapshotter;
    private final Object snapshotMutex = new Object();
    private final Object trigger = new Object();
    private boolean snapshotWanted;
    private boolean stopping;
    private Snapshots.Header newest;
    private final AtomicLong snapshotBytes = new AtomicLong();
    private volatile long snapshotsWritten;
    private volatile long lastSnapshotMillis;
    private volatile String lastSnapshotError;
    private volatile boolean snapshotRunning;
    private long committedChanges;
    private long replayedRecords;

    /** @param createdNote what happened when the device was formatted just now (nothing to recover), or null */
    V2Meta(RawBlockCore core, V2Layout layout, CompactIndex index, String createdNote) {
        this.core = core;
        this.layout = layout;
        this.index = index;
        this.created = createdNote != null;
        this.createdNote = createdNote;
    }

    V2Layout layout() {
        return layout;
    }

    /** Whether a snapshot is being written now (the scale benchmark splits put latencies by it). */
    boolean snapshotRunning() {
        return snapshotRunning;
    }

    @Override
    public Recovery.Result recover() throws IOException {
        String path = core.device.path();
        List<Snapshots.Header> headers = created ? List.of() : Snapshots.headers(core.device, layout);
        if (!created && !core.config.loadCheckpointOnInit()) {
            throw new StoreRefusedException(StoreRefusedException.Reason.WOULD_DISCARD, path + " holds an fdpblock_v2"
                    + " store; load_checkpoint_on_init = false would discard it: set it to true to recover it, or set"
                    + " \"format\": true to start over (its keys are then lost)");
        }
        int maxSlots = core.slots.maxSlots();
        V2Recovery.Outcome o = V2Recovery.run(core.device, layout, maxSlots, headers, index, core.salts);
        List<String> notes = o.notes();
        newest = o.snapshot();
        if (newest == null && !headers.isEmpty()) {
            // the log before the oldest snapshot may have been overwritten: replaying it alone would not do
            throw new StoreRefusedException(StoreRefusedException.Reason.UNREADABLE, "raw_block on " + path + ": every"
                    + " fdpblock_v2 snapshot is unreadable (" + String.join("; ", notes) + "). Nothing was changed;"
                    + " \"format\": true starts over (its keys are then lost)");
        }
        long end = o.log().endLsn();
        replayedRecords = o.records();
        int highest = o.highestUsed();
        core.slots.rebuild((int) Math.max(o.nextSlot(), highest + 1), o.used(),
                core.config.fdpSlotAffinityEnabled() ? o.groups() : null);
        long reclaim = newest == null ? 0 : newest.startLsn();
        log = new MetaLog(core.device, layout, end, reclaim, core.config.metaSyncIntervalMs(),
                core.placement.metadata(), this::wantSnapshot);
        boolean fellBack = !notes.isEmpty();
        String note = created ? createdNote : "recovered " + index.size() + " keys (fdpblock_v2): snapshot "
                + (newest == null ? "none" : "seq " + newest.seq() + " with " + newest.entries() + " entries")
                + ", then " + o.records() + " log records up to LSN " + end
                + (o.log().torn() ? " (ignored after it: " + o.log().stop() + ")" : "")
                + (fellBack ? "; fell back to the older snapshot: " + String.join("; ", notes) : "");
        RawBlockCore.LOG.log(fellBack ? System.Logger.Level.WARNING : System.Logger.Level.INFO, "raw_block on " + path
                + ": " + note);
        return new Recovery.Result(newest == null ? 0 : newest.seq(), note, index.size(), 0, fellBack);
    }

    // ------------------------------------------------------------------ changes

    @Override
    public long putCommitted(String key, int slot, int size, int crc, int group, int saltId, boolean newSalt) {
        if (newSalt) {
            log.appendSalt(saltId, core.salts.salt(saltId));
        }
        HashValue128 h = CompactIndex.hash(key);
        committedChanges++;
        return log.appendPut(h.getMostSignificantBits(), h.getLeastSignificantBits(), slot, size, crc, group, saltId,
                key.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public long deleted(String key, int slot) {
        HashValue128 h = CompactIndex.hash(key);
        committedChanges++;
        return log.appendDelete(h.getMostSignificantBits(), h.getLeastSignificantBits(), slot);
    }

    @Override
    public void whenDurable(long ticket, LongConsumer action) {
        log.whenDurable(ticket, action);
    }

    @Override
    public boolean acknowledgesWhenDurable() {
        return core.config.metaSyncIntervalMs() == 0;
    }

    @Override
    public void wantFreeSlots() {
        log.requestCommit();
    }

    @Override
    public boolean dirty() {
        return log.appendedTicket() > 0 && log.bytesSinceReclaim() > 0;
    }

    // ------------------------------------------------------------------ snapshots

    private void wantSnapshot() {
        synchronized (trigger) {
            snapshotWanted = true;
            trigger.notifyAll();
        }
    }

    @Override
    public void startBackground() {
        log.start(java.nio.file.Path.of(core.config.devicePath()).getFileName().toString());
        snapshotter = Thread.ofPlatform().daemon().name("fdpblock-snapshot-"
                + java.nio.file.Path.of(core.config.devicePath()).getFileName()).start(this::snapshotLoop);
    }

    private void snapshotLoop() {
        while (true) {
            synchronized (trigger) {
                while (!snapshotWanted && !stopping) {
                    try {
                        trigger.wait();
                    } catch (InterruptedException e) {
                        // stopped by stopBackground(), never by an interrupt
                    }
                }
                if (stopping) {
                    return;
                }
                snapshotWanted = false;
            }
            try {
                snapshot();
            } catch (IOException | RuntimeException e) {
                lastSnapshotError = e.getMessage();
                RawBlockCore.LOG.log(System.Logger.Level.ERROR, "fdpblock_v2 snapshot of " + core.device.path()
                        + " failed: " + e.getMessage(), e);
            }
        }
    }

    /** Writes a snapshot of the index now, into the area that does not hold the newest one. */
    private void snapshot() throws IOException {
        synchronized (snapshotMutex) {
            long t0 = System.nanoTime();
            snapshotRunning = true;
            try {
                int area = newest == null ? 0 : 1 - newest.area();
                long seq = newest == null ? 1 : newest.seq() + 1;
                long startLsn = log.nextLsn();
                Snapshots.Header h = Snapshots.write(core.device, layout, area, seq, startLsn, new Snapshots.Source() {
                    @Override
                    public Map<Integer, String> salts() {
                        return core.salts.definitions();
                    }

                    @Override
                    public long nextSlot() {
                        return core.slots.nextSlot();
                    }

                    @Override
                    public int copy(long from, long count, MemorySegment out) {
                        return index.copyLive(from, count, out, core.slots::groupOf);
                    }

                    @Override
                    public long capacity() {
                        return index.capacity();
                    }

                    @Override
                    public void beginCopy() {
                        index.beginCopy();
                    }

                    @Override
                    public void endCopy() {
                        index.endCopy();
                    }
                }, core.lock, core.placement.metadata(), snapshotBytes);
                newest = h;
                log.reclaimTo(startLsn);
                snapshotsWritten++;
                lastSnapshotError = null;
                lastSnapshotMillis = (System.nanoTime() - t0) / 1_000_000;
            } finally {
                snapshotRunning = false;
            }
        }
    }

    @Override
    public void checkpointNow() throws IOException {
        log.commitNow();
        snapshot();
    }

    @Override
    public boolean stopBackground(long timeoutMillis) {
        if (log != null) {
            log.commitEagerly(); // close waits for what waits on durability: no interval each
        }
        synchronized (trigger) {
            stopping = true;
            trigger.notifyAll();
        }
        return snapshotter == null
                || io.fdpblock.util.Threads.joinUninterruptibly(snapshotter, TimeUnit.MILLISECONDS.toNanos(timeoutMillis));
    }

    @Override
    public void closeDurably() throws IOException {
        try {
            log.commitNow();
        } finally {
            log.stop(core.config.closeTimeoutMs());
        }
    }

    @Override
    public void release() {
        log.release();
        index.close();
    }

    @Override
    public String lastError() {
        String f = log == null ? null : log.failure();
        return f != null ? f : lastSnapshotError;
    }

    @Override
    public void status(Map<String, Object> s) {
        s.put("meta_format", RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2.configName());
        s.put("meta_total_bytes", layout.metaTotalBytes());
        s.put("meta_sync_interval_ms", core.config.metaSyncIntervalMs());
        s.put("log_bytes", layout.logBytes());
        s.put("log_next_lsn", log.nextLsn());
        s.put("log_bytes_since_snapshot", log.bytesSinceReclaim());
        s.put("log_commits", log.commits());
        s.put("log_bytes_written", log.bytesWritten());
        s.put("snapshot_seq", newest == null ? 0 : newest.seq());
        s.put("snapshots_written", snapshotsWritten);
        s.put("snapshot_bytes_written", snapshotBytes.get());
        s.put("last_snapshot_ms", lastSnapshotMillis);
        s.put("last_meta_error", lastError());
        s.put("meta_bytes_written", log.bytesWritten() + snapshotBytes.get());
        s.put("committed_changes", committedChanges);
        s.put("replayed_log_records", replayedRecords);
        s.put("index_bytes", index.memoryBytes());
        // the checkpoint fields of v1, in v2's terms, for tools that read them
        s.put("checkpoint_seq", newest == null ? 0 : newest.seq());
        s.put("checkpoint_failures", lastError() == null ? 0L : 1L);
        s.put("last_checkpoint_error", lastError());
    }
}
