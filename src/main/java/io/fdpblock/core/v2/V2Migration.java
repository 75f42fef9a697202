package io.fdpblock.core.v2;

import io.fdpblock.core.Detection;
import io.fdpblock.core.FormatMigration;
import io.fdpblock.core.FormatRefusedException;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.ProbeContext;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.SaltTable;
import io.fdpblock.core.StoreEntry;
import io.fdpblock.core.StoreKey;
import io.fdpblock.core.StoreLayout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * fdpblock_v2's part in the tools' migration ({@link FormatMigration}): the layout its superblock records,
 * and the store as a migration's source (a fresh snapshot, so that recovery needs none of the log's
 * region; then the superblocks zeroed, which commits) or its target (slot headers completed with key and
 * CRC32C, a snapshot of every key, then the superblocks, which commit).
 */
final class V2Migration {
    private static final SecureRandom RANDOM = new SecureRandom();
    /** Slot headers (or payloads, to compute a CRC) per device submission. */
    private static final int BATCH = 64;

    private V2Migration() {}

    /** The superblock's; a store whose superblocks are both damaged has no layout to tell. */
    static StoreLayout recordedLayout(ProbeContext probe, Detection found) throws IOException {
        if (found.kind() == Detection.Kind.DAMAGED) {
            throw new FormatRefusedException(FormatRefusedException.Reason.UNREADABLE, "both fdpblock_v2 superblocks"
                    + " are damaged (bad CRC or impossible geometry), so its layout is unknown. Nothing was changed");
        }
        if (found.kind() != Detection.Kind.STORE) {
            return null;
        }
        V2Layout l = V2Format.readSuperblock(probe.device(), probe.config().blockAlign());
        if (l == null) {
            throw new FormatRefusedException(FormatRefusedException.Reason.UNREADABLE, "its fdpblock_v2 superblocks"
                    + " changed while they were read. Nothing was changed");
        }
        return new StoreLayout(l.capacityBytes(), l.blockAlign(), l.headerBytes(), l.slotBytes(), l.metaTotalBytes());
    }

    // ------------------------------------------------------------------ as the source

    /**
     * A fresh snapshot before the store closes: recovery then needs only the superblocks and snapshot
     * areas, and the target may write into the log's region. Zeroing superblock A, then B, commits.
     */
    static final class Source implements FormatMigration.Source {
        private final RawBlockCore store;
        private final V2Layout layout;

        Source(RawBlockCore store, StoreLayout layout) throws IOException {
            this.store = store;
            this.layout = V2Format.readSuperblock(store.device(), layout.blockAlign());
        }

        @Override
        public FormatMigration.Extent keeps() {
            return new FormatMigration.Extent(0, layout.logOffset(), "the fdpblock_v2 superblocks and snapshot areas");
        }

        @Override
        public String heldIn() {
            return "superblock copy B";
        }

        @Override
        public String whenEntriesDisagree() {
            return "fdpblock inspect lists them; delete those keys through the store (or leave it in fdpblock_v2)";
        }

        @Override
        public FormatMigration.Metadata plan(List<StoreEntry> entries, int nextSlot) throws IOException {
            List<Snapshots.Header> headers = Snapshots.headers(store.device(), layout);
            long logInUse = ((Number) store.status().get("log_bytes_since_snapshot")).longValue();
            Snapshots.Header newest = headers.isEmpty() ? null : headers.get(0);
            return new FormatMigration.Metadata("fdpblock_v2 " + (newest == null ? "no snapshot" : "snapshot seq "
                    + newest.seq() + " (" + newest.entries() + " entries, " + newest.bodyBytes() + " bytes of body)")
                    + " and " + logInUse + " bytes of log after it",
                    (newest == null ? 0 : newest.bodyBytes()) + logInUse);
        }

        @Override
        public void beforeClose(FormatMigration.Progress p) throws IOException {
            p.begin("wrote a fresh fdpblock_v2 snapshot");
            long before = metaBytesWritten();
            store.checkpointNow(); // recovery then needs no log: the target may write into the log's region
            p.wrote(metaBytesWritten() - before);
            p.done("wrote a fresh fdpblock_v2 snapshot, so that recovery needs none of the log's region");
        }

        private long metaBytesWritten() {
            return ((Number) store.status().get("meta_bytes_written")).longValue();
        }

        /** Nothing: the snapshot before the store closed confined it. */
        @Override
        public void confine(FormatMigration.Progress p) {}

        @Override
        public void erase(FormatMigration.Progress p) throws IOException {
            int ba = layout.blockAlign();
            p.begin("zeroed the fdpblock_v2 superblocks");
            FormatMigration.zeroBlock(store.device(), 0, ba);
            p.committing("the zeroing of superblock B");
            FormatMigration.zeroBlock(store.device(), ba, ba);
            p.wrote(2L * ba);
            p.committed();
            p.done("zeroed the fdpblock_v2 superblocks (A, then B): committed, the store is " + p.target());
        }
    }

    // ------------------------------------------------------------------ as the target

    /**
     * A layout for the store's metadata area (the data stays where it is), a new incarnation. Slot headers
     * without fdpblock's key or CRC32C (LMCache writes neither; fdpblock_v2 reads keys back from slot
     * headers and checks every payload) are completed first; then the snapshot into area 0, the log empty;
     * superblock B, then A over whatever offset 0 held, commits. Object metadata is not kept.
     */
    static final class Target implements FormatMigration.Target {
        private final BlockDevice device;
        private final StoreLayout store;
        private final V2Layout layout;
        private List<StoreEntry> entries;
        private int nextSlot;
        private Map<Integer, Integer> crcBySlot = Map.of();
        private int completed;
        private int metaDropped;
        private CompactIndex index;
        private Snapshots.Header snapshot;

        Target(BlockDevice device, StoreLayout store) throws FormatRefusedException {
            this.device = device;
            this.store = store;
            int ba = store.blockAlign();
            long meta = store.metaTotalBytes();
            long maxSlots = store.maxSlots();
            long needed = V2Layout.requiredMetaBytes(ba, maxSlots, ba);
            if (meta < needed) {
                throw new FormatRefusedException(FormatRefusedException.Reason.DOES_NOT_FIT, "its metadata for the "
                        + maxSlots + " slots of this device needs " + needed + " bytes (two snapshot areas and a log),"
                        + " but the metadata area is " + meta + " bytes (meta_total_bytes) and the data starts right"
                        + " after it, which a migration never moves. Nothing was changed; keep this store in its"
                        + " format, or copy its keys to a device made for fdpblock_v2");
            }
            layout = V2Layout.create(ba, store.headerBytes(), store.slotBytes(), store.capacityBytes(), meta, ba,
                    RANDOM.nextLong());
            if (layout.maxSlots() != maxSlots || layout.dataBase() != meta) {
                throw new FormatRefusedException(FormatRefusedException.Reason.DOES_NOT_FIT, "its fdpblock_v2 layout"
                        + " would hold " + layout.maxSlots() + " slots from offset " + layout.dataBase() + ", not the"
                        + " store's " + maxSlots + " from offset " + meta + ". Nothing was changed");
            }
        }

        @Override
        public FormatMigration.Extent writesBeforeCommit() {
            return new FormatMigration.Extent(layout.blockAlign(), layout.logOffset(),
                    "its fdpblock_v2 superblock B and snapshot areas");
        }

        @Override
        public String heldIn() {
            return "superblocks and snapshot seq 1";
        }

        @Override
        public void plan(List<StoreEntry> entries, int nextSlot) {
            this.entries = entries;
            this.nextSlot = nextSlot;
        }

        @Override
        public void prepareSlots(FormatMigration.Progress p) throws IOException {
            List<StoreEntry> incomplete = new ArrayList<>();
            for (StoreEntry e : entries) {
                if (!e.hasCrc() || (e.header().key() == null
                        && OnDiskFormat.SLOT_KEY_OFFSET + 2 + utf8(e.key()).length <= store.headerBytes())) {
                    incomplete.add(e);
                }
            }
            p.begin("completed the slot headers LMCache wrote");
            if (!incomplete.isEmpty()) {
                crcBySlot = completeSlotHeaders(incomplete, p);
                completed = incomplete.size();
                p.done("completed " + completed + " slot headers written by LMCache with their key and CRC32C (bytes"
                        + " 0..23, which LMCache reads, unchanged)");
            }
        }

        /**
         * Rewrites the headers of {@code incomplete} in fdpblock's form, bytes 0..23 as they were, then flushes.
         *
         * @return by slot, each entry's payload CRC32C (computed from the payload on the device where the header
         *         had none)
         */
        private Map<Integer, Integer> completeSlotHeaders(List<StoreEntry> incomplete, FormatMigration.Progress p)
                throws IOException {
            int ba = store.blockAlign();
            int hb = store.headerBytes();
            long maxPayload = OnDiskFormat.roundUp(store.maxPayloadBytes(), ba);
            int perBatch = (int) Math.max(1, Math.min(BATCH, (64L << 20) / maxPayload));
            Map<Integer, Integer> crcs = new HashMap<>();
            try (Arena arena = Arena.ofShared()) {
                MemorySegment payloads = arena.allocate(perBatch * maxPayload, 4096);
                MemorySegment headers = arena.allocate((long) perBatch * hb, 4096);
                for (int from = 0; from < incomplete.size(); from += perBatch) {
                    int to = Math.min(incomplete.size(), from + perBatch);
                    IoBatch b = new IoBatch(to - from);
                    for (int i = from; i < to; i++) {
                        StoreEntry e = incomplete.get(i);
                        if (!e.hasCrc()) {
                            b.read(store.slotOffset(e.slot()) + hb, payloads.asSlice((i - from) * maxPayload,
                                    OnDiskFormat.roundUp(e.size(), ba)));
                        }
                    }
                    if (b.size() > 0) {
                        device.execute(b);
                    }
                    b = new IoBatch(to - from);
                    for (int i = from; i < to; i++) {
                        StoreEntry e = incomplete.get(i);
                        int crc = e.hasCrc() ? e.crc()
                                : OnDiskFormat.crc32c(payloads.asSlice((i - from) * maxPayload, e.size()));
                        crcs.put(e.slot(), crc);
                        MemorySegment h = headers.asSlice((long) (i - from) * hb, hb);
                        OnDiskFormat.writeSlotHeader(h, e.header().identity(), e.size(), crc, utf8(e.key()));
                        b.write(store.slotOffset(e.slot()), h);
                    }
                    device.execute(b);
                    p.wrote((long) (to - from) * hb);
                }
            }
            device.flush(); // durable before any metadata that relies on them
            return crcs;
        }

        @Override
        public void writeBody(FormatMigration.Progress p) throws IOException {
            index = new CompactIndex(layout.maxSlots());
            SaltTable salts = new SaltTable();
            for (StoreEntry e : entries) {
                int crc = e.hasCrc() ? e.crc() : crcBySlot.get(e.slot());
                // every id taken: no salt, as a put does
                int saltId = Math.max(0, salts.idOf(SaltTable.saltOf(e.key())));
                index.put(new StoreKey(e.key()), e.slot(), e.size(), crc, true, null, saltId);
                salts.added(saltId);
                if (hasObjectMeta(e.meta())) {
                    metaDropped++;
                }
            }
            p.begin("wrote the fdpblock_v2 snapshot");
            snapshot = Snapshots.write(device, layout, 0, 1, 0, Snapshots.Source.of(index, salts::definitions,
                    () -> nextSlot, s -> 0), new ReentrantLock(), PlacementId.NONE, p.written(), Snapshots.Pacer.NONE);
            p.done("wrote fdpblock_v2 snapshot seq 1 (" + snapshot.entries() + " entries, " + snapshot.bodyBytes()
                    + " bytes) into snapshot area 0");
        }

        @Override
        public void commit(FormatMigration.Progress p) throws IOException {
            p.begin("wrote the fdpblock_v2 superblocks");
            p.committing("superblock A");
            try (Arena arena = Arena.ofShared()) {
                V2Format.writeSuperblocks(device, layout, arena, PlacementId.NONE); // no FDP discovery here
            }
            p.wrote(2L * layout.blockAlign());
            p.committed();
            p.done("wrote the fdpblock_v2 superblocks (copy B, then A at offset 0): committed");
        }

        /** Nothing more to write: the log starts empty. */
        @Override
        public FormatMigration.Written finish(FormatMigration.Progress p) {
            int ba = layout.blockAlign();
            return new FormatMigration.Written(new FormatMigration.Metadata("fdpblock_v2 superblocks and snapshot seq 1"
                    + " of " + snapshot.entries() + " entries (" + snapshot.bodyBytes() + " bytes of body); log of "
                    + layout.logBytes() + " bytes, empty", 3L * ba + OnDiskFormat.roundUp(snapshot.bodyBytes(), ba)),
                    completed, metaDropped);
        }

        @Override
        public void close() {
            if (index != null) {
                index.close();
            }
        }
    }

    private static boolean hasObjectMeta(ObjectMeta m) {
        return m != null && (m.shape() != null || m.dtype() != null || m.fmt() != null || m.cachedPositions() != null);
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
