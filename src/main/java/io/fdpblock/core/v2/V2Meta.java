package io.fdpblock.core.v2;

import com.dynatrace.hash4j.hashing.HashValue128;
import io.fdpblock.core.MetaStore;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.RecoveryResult;
import io.fdpblock.core.StoreContext;
import io.fdpblock.core.StoreEntry;
import io.fdpblock.core.StoreKey;
import io.fdpblock.core.StoreReadOnlyException;
import io.fdpblock.core.StoreRefusedException;
import io.fdpblock.device.IoBatch;

import io.fdpblock.util.Threads;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;

/**
 * fdpblock_v2 ({@code docs/on-device-format.md}): the compact index ({@link CompactIndex}), every change
 * appended to the metadata log ({@link LogWriter}, group commits), and snapshots of the index written in
 * the background ({@link Snapshots}) when a quarter of the log is in use since the last one, whose
 * start frees the log before it. Recovery loads the newest valid snapshot and replays the log after it.
 *
 * <p>A deleted key's slot is reused before its delete record is durable: a replay may then find the key
 * pointing at another key's bytes, which no load serves ({@code SlotReleaser.releaseDeleted}).
 */
public final class V2Meta implements MetaStore {
    private final StoreContext core;
    private final V2Layout layout;
    private final CompactIndex index;
    private final boolean created;
    private final String createdNote;
    private LogWriter log;
    private Thread snapshotter;
    private final Object snapshotMutex = new Object();
    private final Object trigger = new Object();
    private boolean snapshotWanted;
    private boolean stopping;
    private Snapshots.Header newest;
    /**
     * A background snapshot rests this many times as long as each of its steps took (it works a quarter of
     * the time) while the log has room: its copying, checksumming and writing otherwise slow the puts that
     * run beside it on a machine with few cores (the scale benchmark, 2 cores, 2M entries: put p99.9 during
     * a snapshot 2.95x the p99.9 without; paced, 1.26x). It runs at full speed once the log since the newest
     * snapshot reaches half the ring (a quarter past when this one was asked for, a quarter before commits
     * would wait), when the store stops, and for {@link #checkpointNow()}.
     */
    private static final int SNAPSHOT_REST = 3;
    private final AtomicLong snapshotBytes = new AtomicLong();
    private volatile long snapshotsWritten;
    private volatile long lastSnapshotMillis;
    private volatile String lastSnapshotError;
    /** Written only by the snapshot, under {@link #snapshotMutex}; see {@link MetaStore#snapshotEpoch()}. */
    private volatile long snapshotEpoch;
    private long committedChanges;
    /** Built once the log failed: every refused put names it. */
    private volatile StoreReadOnlyException readOnly;
    private long replayedRecords;
    /** Opened past damage: a snapshot before any work starts the log after the chunks that were skipped. */
    private boolean snapshotAtStart;

    /** @param createdNote what happened when the device was formatted just now (nothing to recover), or null */
    V2Meta(StoreContext core, V2Layout layout, CompactIndex index, String createdNote) {
        this.core = core;
        this.layout = layout;
        this.index = index;
        this.created = createdNote != null;
        this.createdNote = createdNote;
    }

    public V2Layout layout() {
        return layout;
    }

    /** Whether a snapshot is being written now (the scale benchmark splits put latencies by it). */
    boolean snapshotRunning() {
        return (snapshotEpoch & 1) == 1;
    }

    @Override
    public long snapshotEpoch() {
        return snapshotEpoch;
    }

    /** Recovers the index and the slots in use from the newest snapshot and the log after it. */
    RecoveryResult recover() throws IOException {
        String path = core.device().path();
        List<Snapshots.Header> headers = created ? List.of() : Snapshots.headers(core.device(), layout);
        if (!created && !core.config().loadCheckpointOnInit()) {
            throw new StoreRefusedException(StoreRefusedException.Reason.WOULD_DISCARD, path + " holds an fdpblock_v2"
                    + " store; load_checkpoint_on_init = false would discard it: set it to true to recover it, or set"
                    + " \"format\": true to start over (its keys are then lost)");
        }
        int maxSlots = core.slots().maxSlots();
        boolean openDamaged = core.config().openDamaged();
        List<String> damage = new ArrayList<>();
        List<String> areaNotes = created ? List.of() : snapshotAreaDamage(headers);
        if (!areaNotes.isEmpty() && headers.isEmpty()) {
            // without a snapshot the log from LSN 0 is replayed, and a store that has snapshots has overwritten it
            String what = "both fdpblock_v2 snapshot headers are damaged (" + String.join("; ", areaNotes) + ")";
            if (!openDamaged) {
                throw damaged(path, what, "its keys");
            }
            damage.add(what);
        }
        V2Recovery.Outcome o = V2Recovery.run(core.device(), layout, maxSlots, headers, index, core.salts());
        List<String> notes = new ArrayList<>(o.notes());
        if (!created) {
            notes.addAll(superblockDamage()); // the other copy serves: nothing lost, but said
        }
        if (!headers.isEmpty()) {
            notes.addAll(areaNotes); // the other area held a snapshot, maybe a newer one: recovered from this one
        }
        newest = o.snapshot();
        long lost = 0;
        long resume = -1;
        if (o.logDamaged()) {
            LogReader.Beyond b = o.beyond();
            String what = "the fdpblock_v2 log stops at LSN " + o.log().endLsn() + " (device offset "
                    + physicalLog(o.log().endLsn()) + ": " + o.log().stop() + "), yet " + b.chunks() + " intact chunks of"
                    + " later commits follow it (the first at LSN " + b.firstLsn() + ", device offset "
                    + physicalLog(b.firstLsn()) + ") with " + b.puts() + " puts: that is damage, not a write a crash"
                    + " cut short";
            if (!openDamaged) {
                throw damaged(path, what, "the keys of those commits");
            }
            damage.add(what);
            lost = b.keys().size() - Math.min(b.keys().size(), countHeld(b.keys())); // put past it, not held now
            resume = b.resumeLsn();
        }
        if (newest == null && !headers.isEmpty()) {
            // the log before the oldest snapshot may have been overwritten: replaying it alone would not do
            throw new StoreRefusedException(StoreRefusedException.Reason.UNREADABLE, "raw_block on " + path + ": every"
                    + " fdpblock_v2 snapshot is unreadable (" + String.join("; ", notes) + "). Nothing was changed;"
                    + " \"format\": true starts over (its keys are then lost)");
        }
        // after a clean close the next commit writes over the close marker; after damage opened anyway, past
        // every chunk of the later commits (a snapshot at once then starts the log there)
        long end = resume >= 0 ? resume : o.log().closed() ? o.log().closedAt() : o.log().endLsn();
        snapshotAtStart = resume >= 0;
        replayedRecords = o.records();
        int highest = o.highestUsed();
        core.slots().rebuild((int) Math.max(o.nextSlot(), highest + 1), o.used(),
                core.config().fdpSlotAffinityEnabled() ? o.groups() : null);
        long snapshotStart = newest == null ? 0 : newest.startLsn();
        long reclaim = snapshotStart; // the other snapshot's log is kept too: a fallback to it replays from there
        for (Snapshots.Header h : headers) {
            if (newest != null && h.seq() < newest.seq()) {
                reclaim = Math.min(reclaim, h.startLsn());
            }
        }
        if (end - reclaim > layout.logBytes()) { // its log is gone already (written before it was kept)
            reclaim = snapshotStart;
        }
        if (resume >= 0) {
            reclaim = snapshotStart; // the damaged log is not kept for a fallback: the snapshot at once replaces it
        }
        log = new LogWriter(core.device(), layout, end, reclaim, snapshotStart, core.config().metaSyncIntervalMs(),
                core.metadata(), this::wantSnapshot);
        boolean fellBack = !notes.isEmpty();
        String damageText = damage.isEmpty() ? null : String.join("; ", damage);
        String note = created ? createdNote : "recovered " + index.size() + " keys (fdpblock_v2): snapshot "
                + (newest == null ? "none" : "seq " + newest.seq() + " with " + newest.entries() + " entries")
                + " (" + o.snapshotMillis() + " ms), then " + o.records() + " log records up to LSN " + o.log().endLsn()
                + (o.log().torn() ? " (ignored after it: " + o.log().stop() + ")" : "") + " (" + o.logMillis() + " ms)"
                + (fellBack ? "; fell back: " + String.join("; ", notes) : "")
                + (damageText == null ? "" : "; DAMAGED, opened as asked (open_damaged): " + damageText
                        + (lost > 0 ? "; " + lost + " keys put past the damage are lost" : ""));
        RawBlockCore.LOG.log(damageText != null ? System.Logger.Level.ERROR : fellBack ? System.Logger.Level.WARNING
                : System.Logger.Level.INFO, "raw_block on " + path + ": " + note);
        return new RecoveryResult(newest == null ? 0 : newest.seq(), note, index.size(), 0, fellBack, damageText,
                damageText == null ? 0 : o.logDamaged() ? lost : -1);
    }

    /**
     * What the snapshot areas without a valid header say, when one of them shows damage rather than
     * absence: a header of this store that fails its CRC32C or holds implausible values, or an area
     * with no header beside a snapshot whose sequence number says the other area was written too.
     */
    private List<String> snapshotAreaDamage(List<Snapshots.Header> valid) throws IOException {
        List<String> out = new ArrayList<>();
        for (Snapshots.Area a : Snapshots.areas(core.device(), layout)) {
            if (a.header() != null) {
                continue;
            }
            boolean expected = !valid.isEmpty() && valid.get(0).seq() >= 2; // the areas alternate from seq 1 on
            if (a.damaged() || expected) {
                out.add("snapshot area " + a.area() + " at device offset " + a.offset() + ": " + a.problem()
                        + (expected ? " (seq " + valid.get(0).seq() + " in the other area says it held one)" : ""));
            }
        }
        return out;
    }

    /** The superblock copies that are not valid (the store opened with the other). */
    private List<String> superblockDamage() throws IOException {
        List<String> out = new ArrayList<>();
        int align = layout.blockAlign();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment block = arena.allocate(align, 4096);
            for (int copy = 0; copy < 2; copy++) {
                IoBatch b = new IoBatch(1);
                b.read((long) copy * align, block);
                core.device().execute(b);
                if (V2Layout.read(block) == null) {
                    out.add("superblock copy " + (copy == 0 ? "A" : "B") + " at device offset " + (long) copy * align
                            + " is damaged; the other copy was used");
                }
            }
        }
        return out;
    }

    private long physicalLog(long lsn) {
        return layout.logOffset() + Math.floorMod(lsn, layout.logBytes());
    }

    /** How many of these keys (by h1) the recovered index holds under any h2 (approximate, for a report). */
    private long countHeld(Set<Long> h1s) throws IOException {
        long[] n = {0};
        KeyListing.forEach(core.device(), core.dataBase(), core.slotBytes(), core.headerBytes(), index, core.lock(), false,
                (h1, h2, slot, size, crc, salt, h) -> {
                    if (h1s.contains(h1)) {
                        n[0]++;
                    }
                });
        return n[0];
    }

    private static StoreRefusedException damaged(String path, String what, String lost) {
        return new StoreRefusedException(StoreRefusedException.Reason.DAMAGED, "raw_block on " + path + ": " + what
                + ". Opening it would lose " + lost + ". Nothing was changed. Restore the device from a copy, or"
                + " open what is readable with \"open_damaged\": true (--open-damaged on the command line): the store"
                + " then reports what was lost and stays unhealthy");
    }

    // ------------------------------------------------------------------ changes

    @Override
    public long putCommitted(StoreKey key, int slot, int size, int crc, int group, int saltId, boolean newSalt) {
        if (newSalt && log.appendSalt(saltId, core.salts().salt(saltId)) < 0) {
            return -1;
        }
        long ticket = log.appendPut(key.h1(), key.h2(), slot, size, crc, group, saltId,
                key.text().getBytes(StandardCharsets.UTF_8));
        if (ticket > 0) {
            committedChanges++;
        }
        return ticket;
    }

    @Override
    public void deleted(StoreKey key, int slot) {
        committedChanges++;
        log.appendDelete(key.h1(), key.h2(), slot);
    }

    @Override
    public void whenDurable(long ticket, LongConsumer action) {
        log.whenDurable(ticket, action);
    }

    @Override
    public boolean acknowledgesWhenDurable() {
        return core.config().metaSyncIntervalMs() == 0;
    }

    @Override
    public boolean dirty() {
        return log.appendedTicket() > 0 && log.bytesSinceSnapshot() > 0;
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
        log.start(Path.of(core.config().devicePath()).getFileName().toString());
        snapshotter = Thread.ofPlatform().daemon().name("fdpblock-snapshot-"
                + Path.of(core.config().devicePath()).getFileName()).start(this::snapshotLoop);
        if (snapshotAtStart) {
            try {
                snapshot(false);
            } catch (IOException | RuntimeException e) {
                lastSnapshotError = e.getMessage();
                RawBlockCore.LOG.log(System.Logger.Level.ERROR, "fdpblock_v2 snapshot of " + core.device().path()
                        + " after opening it damaged failed: the next open finds the same damage", e);
            }
        }
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
                snapshot(true);
            } catch (IOException | RuntimeException e) {
                lastSnapshotError = e.getMessage();
                RawBlockCore.LOG.log(System.Logger.Level.ERROR, "fdpblock_v2 snapshot of " + core.device().path()
                        + " failed: " + e.getMessage(), e);
            }
        }
    }

    /**
     * Writes a snapshot of the index now, into the area that does not hold the newest one.
     *
     * @param paced spread out while the log has room ({@link #SNAPSHOT_REST})
     */
    private void snapshot(boolean paced) throws IOException {
        IOException failed = log.failureCause();
        if (failed != null) { // the index holds puts whose records were lost: a snapshot would not follow the log
            throw new IOException("no fdpblock_v2 snapshot of " + core.device().path() + ": the log commit failed before ("
                    + failed.getMessage() + ")", failed);
        }
        synchronized (snapshotMutex) {
            long t0 = System.nanoTime();
            snapshotEpoch++; // odd: running
            try {
                int area = newest == null ? 0 : 1 - newest.area();
                long seq = newest == null ? 1 : newest.seq() + 1;
                long startLsn = log.nextLsn();
                Snapshots.Source source = Snapshots.Source.of(index, core.salts()::definitions, core.slots()::nextSlot,
                        core.slots()::groupOf);
                Snapshots.Header h = Snapshots.write(core.device(), layout, area, seq, startLsn, source, core.lock(),
                        core.metadata(), snapshotBytes, paced ? this::rest : Snapshots.Pacer.NONE);
                long older = newest == null ? startLsn : newest.startLsn(); // now the older of the two kept
                newest = h;
                log.snapshotDurable(startLsn, older);
                synchronized (trigger) {
                    // Requests made while it ran measured the log against the start it just moved: run on them,
                    // the next snapshot would follow at once and cover almost nothing new. One still due is
                    // asked for again by the next commit.
                    snapshotWanted = false;
                }
                snapshotsWritten++;
                lastSnapshotError = null;
                lastSnapshotMillis = (System.nanoTime() - t0) / 1_000_000;
            } finally {
                snapshotEpoch++;
            }
        }
    }

    /** A paced snapshot's rest after a step of {@code stepNanos}; none once the log is half used or when stopping. */
    private void rest(long stepNanos) {
        synchronized (trigger) {
            if (stopping) {
                return;
            }
        }
        if (log.bytesSinceSnapshot() < layout.logBytes() / 2) {
            LockSupport.parkNanos(stepNanos * SNAPSHOT_REST);
        }
    }

    @Override
    public void checkpointNow() throws IOException {
        log.commitNow();
        snapshot(false);
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
                || Threads.joinUninterruptibly(snapshotter, TimeUnit.MILLISECONDS.toNanos(timeoutMillis));
    }

    @Override
    public void closeDurably() throws IOException {
        try {
            // The snapshot thread is stopped: when the final commit needs log space, this thread frees it.
            while (!log.commitNow(true)) {
                snapshot(false);
            }
        } finally {
            log.stop(core.config().closeTimeoutMs());
        }
    }

    @Override
    public void markClosedCleanly() throws IOException {
        if (!log.writeCloseMarker()) {
            RawBlockCore.LOG.log(System.Logger.Level.DEBUG, "fdpblock_v2 log of " + core.device().path() + ": no close"
                    + " marker written; the next open checks the log past its end");
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
    public StoreReadOnlyException readOnlyCause() {
        IOException failed = log == null ? null : log.failureCause();
        if (failed == null) {
            return null;
        }
        StoreReadOnlyException e = readOnly;
        if (e == null) {
            e = new StoreReadOnlyException("raw_block on " + core.device().path() + " is read-only: the fdpblock_v2 log"
                    + " commit failed (" + failed.getMessage() + "), so no put is acknowledged from then on (after a"
                    + " failed write or flush no later commit can be trusted to keep what it lost). Free space on, or"
                    + " replace, the device, then close the store and reopen it: the reopen recovers every key whose"
                    + " commit completed", failed);
            readOnly = e;
        }
        return e;
    }

    @Override
    public long acknowledgedNotDurable() {
        // acknowledged once durable (0 ms): those of the failed commit were reported failed instead
        return log == null || acknowledgesWhenDurable() ? 0 : log.putsNotDurable();
    }

    @Override
    public String notDurable() {
        if (log == null || log.failureCause() == null) {
            return null;
        }
        long puts = log.putsNotDurable();
        long deletes = log.deletesNotDurable();
        String d = deletes == 0 ? "" : "; " + (deletes == 1 ? "1 delete was" : deletes + " deletes were") + " not made"
                + " durable either (a reopen may hold those keys again)";
        if (acknowledgesWhenDurable()) {
            return "no acknowledged put was lost (" + (puts == 1 ? "1 put whose commit failed was" : puts + " puts whose"
                    + " commit failed were") + " reported failed)" + d;
        }
        return (puts == 1 ? "1 acknowledged put was" : puts + " acknowledged puts were") + " not made durable (a"
                + " reopen does not hold them, unless the device kept the failed commit)" + d;
    }

    @Override
    public Map<String, Integer> keySizes() throws IOException {
        return KeyListing.fromSlotHeaders(core, index);
    }

    /**
     * From the compact index, which keeps no key: each entry's key is the one its slot header names, when
     * that key hashes to the entry ({@link KeyListing#headerProblem}); else it is null and the problem
     * says why. The CRC32C is the index's.
     */
    @Override
    public void forEachEntry(StoreEntry.Visitor visitor) throws IOException {
        KeyListing.forEach(core.device(), core.dataBase(), core.slotBytes(), core.headerBytes(), index, core.lock(),
                true, (h1, h2, slot, size, crc, saltId, h) -> {
                    String problem = KeyListing.headerProblem(h, h1, h2, size);
                    visitor.entry(new StoreEntry(problem == null ? h.key() : null, slot, size, crc, true, null, h,
                            problem));
                });
    }

    @Override
    public void status(Map<String, Object> s) {
        s.put("meta_format", RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2.configName());
        s.put("meta_total_bytes", layout.metaTotalBytes());
        s.put("meta_sync_interval_ms", core.config().metaSyncIntervalMs());
        s.put("log_bytes", layout.logBytes());
        s.put("log_next_lsn", log.nextLsn());
        s.put("log_bytes_since_snapshot", log.bytesSinceSnapshot());
        s.put("log_commits", log.commits());
        s.put("log_commit_write_ms", log.writeNanos() / 1_000_000);
        s.put("log_commit_flush_ms", log.flushNanos() / 1_000_000);
        s.put("log_bytes_written", log.bytesWritten());
        s.put("snapshot_seq", newest == null ? 0 : newest.seq());
        s.put("snapshots_written", snapshotsWritten);
        s.put("snapshot_bytes_written", snapshotBytes.get());
        s.put("last_snapshot_ms", lastSnapshotMillis);
        s.put("last_meta_error", lastError());
        s.put("not_durable_deletes", log.deletesNotDurable());
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
