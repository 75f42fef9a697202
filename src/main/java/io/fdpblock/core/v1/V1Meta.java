package io.fdpblock.core.v1;

import io.fdpblock.core.MetaStore;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.RecoveryResult;
import io.fdpblock.core.StoreContext;
import io.fdpblock.core.StoreEntry;
import io.fdpblock.core.StoreIndex;
import io.fdpblock.core.StoreKey;
import io.fdpblock.core.StoreReadOnlyException;

import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * LMCache raw_block state v1: the whole index as a JSON checkpoint in two mirrored containers,
 * periodically and at close ({@link Checkpointer}); open recovers the newest valid one ({@link Recovery}).
 * Every change is durable at the next checkpoint, so nothing waits for durability. While the last
 * checkpoint failed, puts are refused ({@link #readOnlyCause}): each would be one more acknowledged key
 * that the next checkpoint may not make durable either. A checkpoint holds the whole index, so the next
 * one that succeeds makes every earlier change durable at once, and puts are taken again.
 */
final class V1Meta implements MetaStore {
    /** Slot headers per device submission when entries are listed with their headers. */
    private static final int HEADER_READS = 64;
    private final StoreContext core;
    private final MetadataArea area;
    private final CheckpointCodec.Layout layout;
    private final HeapKeyIndex index;
    private Checkpointer checkpointer;
    private boolean fitsFullIndex;
    private long dirtyCount;
    private long persistedCount;
    /** Guarded by the core's lock: puts committed, those the checkpoint being written holds, those the last durable one held. */
    private long putCount;
    private long snapshotPuts;
    private long persistedPuts;
    /** The refusal for {@link #readOnlyError}, built once per failure. */
    private volatile StoreReadOnlyException readOnly;
    private volatile String readOnlyError;

    V1Meta(StoreContext core, CheckpointCodec.Layout layout, HeapKeyIndex index) {
        this.core = core;
        this.layout = layout;
        this.index = index;
        this.area = new MetadataArea(core.device(), layout.blockAlign(), layout.metaTotalBytes());
    }

    MetadataArea area() {
        return area;
    }

    /** Recovers the index and the slots in use; writes the first checkpoint of a new store. */
    RecoveryResult recover() throws IOException {
        RecoveryResult r = new Recovery(core.config(), core.device(), area, layout, index, core.slots(), core.salts()).run();
        index.forEach((k, e) -> core.salts().added(e.saltId()));
        if (r.droppedKeys() > 0 || r.damage() != null) {
            dirtyCount++; // the next checkpoint persists the cleanup, or rewrites the damaged container
        }
        checkpointer = new Checkpointer(area, layout, core.metadata(), this::snapshot, this::persisted, r.seq());
        if (r.seq() == 0) {
            // A new (or formatted) store commits an empty checkpoint (seq 1, container 0) before anything
            // else: from then on, checkpoint JSON without its header is a committed store whose headers
            // were destroyed, which recovery refuses instead of starting over (MetadataArea.classify).
            dirtyCount++;
            checkpointer.checkpoint();
        }
        fitsFullIndex = Checkpointer.fitsFullIndex(core.device().path(), core.slots().maxSlots(), area.payloadRoom(),
                core.config());
        return r;
    }

    @Override
    public long putCommitted(StoreKey key, int slot, int size, int crc, int group, int saltId, boolean newSalt) {
        putCount++;
        return ++dirtyCount;
    }

    @Override
    public void deleted(StoreKey key, int slot) {
        dirtyCount++;
    }

    @Override
    public void whenDurable(long ticket, LongConsumer action) {
        action.accept(ticket); // durability is the next checkpoint's business: nothing waits for it here
    }

    @Override
    public boolean acknowledgesWhenDurable() {
        return false;
    }

    @Override
    public void checkpointNow() throws IOException {
        checkpointer.checkpoint();
    }

    @Override
    public void startBackground() {
        if (core.config().metaEnablePeriodic()) {
            checkpointer.startPeriodic(core.config().metaCheckpointIntervalSec());
        }
    }

    @Override
    public boolean stopBackground(long timeoutMillis) {
        return checkpointer.stopPeriodic(timeoutMillis);
    }

    @Override
    public void closeDurably() throws IOException {
        checkpointer.checkpoint();
    }

    @Override
    public void release() {
    }

    @Override
    public boolean dirty() {
        return dirtyCount != persistedCount;
    }

    private void persisted(long dirtyAt) {
        core.lock().lock();
        try {
            persistedCount = dirtyAt;
            persistedPuts = snapshotPuts;
        } finally {
            core.lock().unlock();
        }
    }

    private Checkpointer.Snapshot snapshot() {
        core.lock().lock();
        try {
            if (dirtyCount == persistedCount) {
                return null;
            }
            List<CheckpointCodec.SnapshotEntry> entries = new ArrayList<>(index.size());
            index.forEach((k, e) -> entries.add(new CheckpointCodec.SnapshotEntry(k, core.slotOffset(e.slot()),
                    e.size(), e.meta())));
            snapshotPuts = putCount;
            return new Checkpointer.Snapshot(dirtyCount, core.slots().nextSlot(), entries);
        } finally {
            core.lock().unlock();
        }
    }

    @Override
    public Map<String, Integer> keySizes() {
        core.lock().lock();
        try {
            Map<String, Integer> out = new LinkedHashMap<>(index.size() * 2);
            index.forEach((k, e) -> out.put(k, e.size()));
            return out;
        } finally {
            core.lock().unlock();
        }
    }

    /**
     * From the heap index; a slot header checks out when it has the magic, the key's identity and the
     * entry's length (recovery's verify), and names no other key where it names one (LMCache's name none).
     * The CRC32C is the header's: LMCache writes none.
     */
    @Override
    public void forEachEntry(StoreEntry.Visitor visitor) throws IOException {
        List<Map.Entry<String, StoreIndex.Found>> all = new ArrayList<>();
        core.lock().lock();
        try {
            index.forEach((k, e) -> all.add(Map.entry(k, e)));
        } finally {
            core.lock().unlock();
        }
        int hb = core.headerBytes();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate((long) HEADER_READS * hb, 4096);
            for (int from = 0; from < all.size(); from += HEADER_READS) {
                int to = Math.min(all.size(), from + HEADER_READS);
                IoBatch b = new IoBatch(to - from);
                for (int i = from; i < to; i++) {
                    b.read(core.slotOffset(all.get(i).getValue().slot()), buf.asSlice((long) (i - from) * hb, hb));
                }
                core.device().execute(b);
                for (int i = from; i < to; i++) {
                    String key = all.get(i).getKey();
                    StoreIndex.Found e = all.get(i).getValue();
                    OnDiskFormat.SlotHeader h = OnDiskFormat.readSlotHeader(buf.asSlice((long) (i - from) * hb, hb));
                    String problem = OnDiskFormat.slotHeaderProblem(h, key, e.size());
                    if (problem == null && h.key() != null && !h.key().equals(key)) {
                        problem = "names another key, " + h.key();
                    }
                    visitor.entry(new StoreEntry(key, e.slot(), e.size(), h.crc32c(), h.hasCrc(), e.meta(), h,
                            problem));
                }
            }
        }
    }

    @Override
    public void status(Map<String, Object> s) {
        s.put("meta_format", RawBlockCoreConfig.MetaFormat.LMCACHE_V1.configName());
        s.put("checkpoint_seq", checkpointer.seq());
        s.put("checkpoints_written", checkpointer.written());
        s.put("last_checkpoint_bytes", checkpointer.lastBytes());
        s.put("last_checkpoint_ms", checkpointer.lastMillis());
        s.put("checkpoint_failures", checkpointer.failures());
        s.put("last_checkpoint_error", checkpointer.lastError());
        s.put("meta_container_bytes", area.containerBytes());
        s.put("meta_area_fits_full_index", fitsFullIndex);
        s.put("puts_since_checkpoint", putsSinceCheckpoint());
    }

    @Override
    public long snapshotEpoch() {
        return checkpointer == null ? 0 : checkpointer.epoch();
    }

    @Override
    public String lastError() {
        return checkpointer == null ? null : checkpointer.lastError();
    }

    /** Acknowledged puts the last durable checkpoint does not hold. */
    private long putsSinceCheckpoint() {
        core.lock().lock();
        try {
            return putCount - persistedPuts;
        } finally {
            core.lock().unlock();
        }
    }

    @Override
    public StoreReadOnlyException readOnlyCause() {
        String error = lastError();
        if (error == null) {
            return null;
        }
        StoreReadOnlyException e = readOnly;
        if (e == null || !error.equals(readOnlyError)) {
            e = new StoreReadOnlyException("raw_block on " + core.device().path() + " takes no puts: the last lmcache_v1 "
                    + error + ", so puts acknowledged now might never become durable. Free space on, or replace, the"
                    + " device (or raise meta_total_bytes when the checkpoint did not fit); puts are taken again once a"
                    + " checkpoint succeeds (" + (core.config().metaEnablePeriodic() ? "the periodic one retries every "
                    + core.config().metaCheckpointIntervalSec() + " s, or " : "") + "checkpointNow()), or after a reopen,"
                    + " which recovers the last durable checkpoint", null);
            readOnlyError = error;
            readOnly = e;
        }
        return e;
    }

    @Override
    public long acknowledgedNotDurable() {
        return lastError() == null ? 0 : putsSinceCheckpoint();
    }

    @Override
    public String notDurable() {
        if (lastError() == null) {
            return null;
        }
        long puts = putsSinceCheckpoint();
        return (puts == 1 ? "1 acknowledged put was" : puts + " acknowledged puts were") + " not made durable (the"
                + " changes since checkpoint " + checkpointer.seq() + ", which a reopen recovers)";
    }
}
