package io.fdpblock.core.v2;

import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.SaltTable;
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
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.function.IntUnaryOperator;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.zip.CRC32C;

/**
 * fdpblock_v2 snapshots: the compact index written out (32 bytes an entry) with the salt table, into the
 * snapshot area that does not hold the newest one, body first, then a flush, then the header that
 * commits it. Written a step at a time on a thread of its own: the store's lock is held only while a
 * step's entries are copied (entries never move in the index while they live), never across I/O. A
 * snapshot covers the log from the LSN where it started: recovery loads the newest valid snapshot and
 * replays the log from there, which also settles what changed while it was being taken. Each slot is
 * written once (the first entry copied with it), so a snapshot never holds more entries than slots.
 *
 * <pre>
 * header block: 0 "FDPBSN02" | 8 u64 incarnation | 16 u64 seq | 24 u64 start LSN | 32 u64 entries
 *   | 40 u64 body bytes | 48 u64 next slot | 56 u32 CRC32C of the body | 60 u32 CRC32C of bytes 0..59
 * body: u32 salt count | (u16 id | u16 length | UTF-8) per salt | entries (h1, h2, u32 slot, u32 size,
 *   u32 CRC32C, u16 group, u16 salt id), then zeros to the block
 * </pre>
 */
public final class Snapshots {
    static final byte[] MAGIC = "FDPBSN02".getBytes(StandardCharsets.US_ASCII);
    // The header block's fields (the table above, docs/on-device-format.md), for the writer and the reader.
    private static final int INCARNATION_AT = 8;
    private static final int SEQ_AT = 16;
    private static final int START_LSN_AT = 24;
    private static final int ENTRIES_AT = 32;
    private static final int BODY_BYTES_AT = 40;
    private static final int NEXT_SLOT_AT = 48;
    private static final int BODY_CRC_AT = 56;
    private static final int HEADER_CRC_AT = 60;
    /** Index positions copied per step (the lock is held while they are). */
    private static final int STEP = 16_384;
    private static final int WRITE_BYTES = 1 << 20;

    /** A snapshot header, as written or read. */
    public record Header(int area, long seq, long startLsn, long entries, long bodyBytes, long nextSlot, int bodyCrc) {
        /** Writes this header into {@code block} (its other bytes zero), sealed by its CRC32C. */
        void write(MemorySegment block, long incarnation) {
            block.fill((byte) 0);
            block.set(OnDiskFormat.U64, INCARNATION_AT, incarnation);
            block.set(OnDiskFormat.U64, SEQ_AT, seq);
            block.set(OnDiskFormat.U64, START_LSN_AT, startLsn);
            block.set(OnDiskFormat.U64, ENTRIES_AT, entries);
            block.set(OnDiskFormat.U64, BODY_BYTES_AT, bodyBytes);
            block.set(OnDiskFormat.U64, NEXT_SLOT_AT, nextSlot);
            block.set(OnDiskFormat.U32, BODY_CRC_AT, bodyCrc);
            HeaderFrame.seal(block, MAGIC, HEADER_CRC_AT);
        }

        /** The header fields in {@code block}, as they are (its magic, incarnation and CRC checked apart). */
        static Header read(MemorySegment block, int area) {
            return new Header(area, block.get(OnDiskFormat.U64, SEQ_AT), block.get(OnDiskFormat.U64, START_LSN_AT),
                    block.get(OnDiskFormat.U64, ENTRIES_AT), block.get(OnDiskFormat.U64, BODY_BYTES_AT),
                    block.get(OnDiskFormat.U64, NEXT_SLOT_AT), block.get(OnDiskFormat.U32, BODY_CRC_AT));
        }

        /** The incarnation {@code block}'s header was written in. */
        static long incarnation(MemorySegment block) {
            return block.get(OnDiskFormat.U64, INCARNATION_AT);
        }
    }

    private Snapshots() {}

    // ------------------------------------------------------------------ reading

    /**
     * What one snapshot area's header block holds.
     *
     * @param header the valid header, or null when {@code problem} says why there is none
     */
    public record Area(int area, long offset, Header header, String problem) {
        /** A header of this store that no write leaves (CRC or values wrong), as opposed to no header at all. */
        public boolean damaged() {
            return header == null && (problem.startsWith(HEADER_CRC_FAILS) || problem.startsWith(IMPLAUSIBLE));
        }
    }

    private static final String HEADER_CRC_FAILS = "header fails its CRC32C";
    private static final String IMPLAUSIBLE = "implausible header";

    /** The valid snapshot headers of both areas (of this incarnation), newest first. */
    public static List<Header> headers(BlockDevice device, V2Layout layout) throws IOException {
        List<Header> out = new ArrayList<>(2);
        for (Area a : areas(device, layout)) {
            if (a.header() != null) {
                out.add(a.header());
            }
        }
        out.sort((x, y) -> Long.compare(y.seq(), x.seq()));
        return out;
    }

    /** Both areas' header blocks, area 0 first, each valid or with the reason it is not. */
    public static List<Area> areas(BlockDevice device, V2Layout layout) throws IOException {
        List<Area> out = new ArrayList<>(2);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment block = arena.allocate(layout.blockAlign(), 4096);
            for (int area = 0; area < 2; area++) {
                IoBatch b = new IoBatch(1);
                b.read(layout.snapshotOffset(area), block);
                device.execute(b);
                out.add(parseHeader(block, area, layout));
            }
        }
        return out;
    }

    private static Area parseHeader(MemorySegment h, int area, V2Layout layout) {
        long offset = layout.snapshotOffset(area);
        if (!OnDiskFormat.hasMagic(h, MAGIC)) {
            return new Area(area, offset, null, "no snapshot (no FDPBSN02 header)");
        }
        if (Header.incarnation(h) != layout.incarnation()) {
            return new Area(area, offset, null, "a snapshot of another incarnation (written before the store was"
                    + " formatted or migrated)");
        }
        if (!HeaderFrame.crcHolds(h, HEADER_CRC_AT)) {
            return new Area(area, offset, null, HEADER_CRC_FAILS);
        }
        Header read = Header.read(h, area);
        long startLsn = read.startLsn();
        long entries = read.entries();
        long body = read.bodyBytes();
        if (entries < 0 || entries > layout.maxSlots() || body < 4 || body > layout.snapshotBytes() - layout.blockAlign()
                || startLsn < 0 || startLsn % layout.blockAlign() != 0) { // the log is replayed from a chunk's start
            return new Area(area, offset, null, IMPLAUSIBLE + " (" + entries + " entries, " + body + " body bytes,"
                    + " start LSN " + startLsn + ")");
        }
        return new Area(area, offset, read, null);
    }

    /** What a snapshot's body holds, handed over as it is read. */
    interface Visitor {
        void salt(int id, String salt);

        void entry(long h1, long h2, int slot, int size, int crc, int group, int saltId);
    }

    private static final Visitor CHECK_ONLY = new Visitor() {
        @Override
        public void salt(int id, String salt) {}

        @Override
        public void entry(long h1, long h2, int slot, int size, int crc, int group, int saltId) {}
    };

    /**
     * Checks the body in a first pass (its CRC, and that it parses into the salts and the entries its
     * header counts, each entry one the store can have written: {@link V2Layout#holdsEntry}), then hands
     * its contents to {@code visitor}.
     *
     * @return false (nothing handed over) when the body does not match its header
     */
    static boolean load(BlockDevice device, V2Layout layout, Header h, Visitor visitor) throws IOException {
        if (!bodyChecks(device, layout, h)) {
            return false;
        }
        return scan(device, layout, h, visitor);
    }

    /** Whether the body matches its header's CRC32C (read only, nothing handed over). */
    public static boolean bodyChecks(BlockDevice device, V2Layout layout, Header h) throws IOException {
        return scan(device, layout, h, CHECK_ONLY);
    }

    /**
     * Keeps, of the {@code n} entries in {@code step}, those whose slot no earlier entry of this snapshot
     * holds (marking theirs in {@code slotsTaken}, a bit per slot), packed to the front.
     *
     * @return how many were kept
     */
    static int dropSlotsTaken(MemorySegment step, int n, MemorySegment slotsTaken, long maxSlots) {
        int kept = 0;
        for (int i = 0; i < n; i++) {
            long at = (long) i * V2Layout.SNAPSHOT_ENTRY_BYTES;
            long slot = Integer.toUnsignedLong(step.get(ValueLayout.JAVA_INT_UNALIGNED, at + 16));
            if (slot < maxSlots) {
                long word = slotsTaken.get(ValueLayout.JAVA_LONG, slot / 64 * 8);
                long bit = 1L << (slot % 64);
                if ((word & bit) != 0) {
                    continue;
                }
                slotsTaken.set(ValueLayout.JAVA_LONG, slot / 64 * 8, word | bit);
            }
            if (kept != i) {
                MemorySegment.copy(step, at, step, (long) kept * V2Layout.SNAPSHOT_ENTRY_BYTES,
                        V2Layout.SNAPSHOT_ENTRY_BYTES);
            }
            kept++;
        }
        return kept;
    }

    private static boolean scan(BlockDevice device, V2Layout layout, Header h, Visitor visitor) throws IOException {
        long base = layout.snapshotOffset(h.area()) + layout.blockAlign();
        long padded = OnDiskFormat.roundUp(h.bodyBytes(), layout.blockAlign());
        CRC32C crc = new CRC32C();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(WRITE_BYTES, 4096);
            BodyParser parser = new BodyParser(visitor, h.entries(), layout);
            for (long off = 0; off < padded; off += WRITE_BYTES) {
                long len = Math.min(WRITE_BYTES, padded - off);
                IoBatch b = new IoBatch(1);
                b.read(base + off, buf.asSlice(0, len));
                device.execute(b);
                long useful = Math.min(len, h.bodyBytes() - off);
                if (useful <= 0) {
                    break;
                }
                MemorySegment piece = buf.asSlice(0, useful);
                crc.update(piece.asByteBuffer());
                if (!parser.feed(piece)) {
                    return false;
                }
            }
            return (int) crc.getValue() == h.bodyCrc() && parser.complete();
        }
    }

    /**
     * Parses a body fed in pieces: the salt table, then fixed-size entries. Each piece is copied once,
     * behind what the previous one left unparsed (less than a record).
     */
    private static final class BodyParser {
        private final Visitor visitor;
        private final long entries;
        private final V2Layout layout;
        private ByteBuffer in = ByteBuffer.allocate(WRITE_BYTES + 4096).order(ByteOrder.LITTLE_ENDIAN);
        private long salts = -1;
        private long saltsSeen;
        private long entriesSeen;

        BodyParser(Visitor visitor, long entries, V2Layout layout) {
            this.visitor = visitor;
            this.entries = entries;
            this.layout = layout;
        }

        boolean feed(MemorySegment piece) {
            if (in.remaining() < piece.byteSize()) { // a long salt record left over: room for it and the piece
                ByteBuffer bigger = ByteBuffer.allocate(Math.toIntExact(in.position() + piece.byteSize()))
                        .order(ByteOrder.LITTLE_ENDIAN);
                in.flip();
                bigger.put(in);
                in = bigger;
            }
            in.put(piece.asByteBuffer());
            in.flip();
            while (true) {
                if (salts < 0) {
                    if (in.remaining() < 4) {
                        break;
                    }
                    salts = Integer.toUnsignedLong(in.getInt());
                    if (salts > SaltTable.MAX_IDS) {
                        return false;
                    }
                    continue;
                }
                if (saltsSeen < salts) {
                    if (in.remaining() < 4) {
                        break;
                    }
                    int at = in.position();
                    int id = Short.toUnsignedInt(in.getShort());
                    int len = Short.toUnsignedInt(in.getShort());
                    if (in.remaining() < len) {
                        in.position(at);
                        break;
                    }
                    byte[] s = new byte[len];
                    in.get(s);
                    visitor.salt(id, new String(s, StandardCharsets.UTF_8));
                    saltsSeen++;
                    continue;
                }
                if (entriesSeen < entries) {
                    if (in.remaining() < V2Layout.SNAPSHOT_ENTRY_BYTES) {
                        break;
                    }
                    long h1 = in.getLong();
                    long h2 = in.getLong();
                    int slot = in.getInt();
                    int size = in.getInt();
                    int crc = in.getInt();
                    int group = Short.toUnsignedInt(in.getShort());
                    int salt = Short.toUnsignedInt(in.getShort());
                    if (!layout.holdsEntry(slot, size)) {
                        return false;
                    }
                    visitor.entry(h1, h2, slot, size, crc, group, salt);
                    entriesSeen++;
                    continue;
                }
                break;
            }
            in.compact();
            return true;
        }

        boolean complete() {
            return saltsSeen == salts && entriesSeen == entries;
        }
    }

    // ------------------------------------------------------------------ writing

    /** Told, outside the store's lock, how long each step took (copy, checksum, and any write): may rest. */
    @FunctionalInterface
    public interface Pacer {
        Pacer NONE = stepNanos -> { };

        void stepDone(long stepNanos);
    }

    /** What a snapshot reads of the store, each call under the store's lock. */
    public interface Source {
        /** Salt definitions and the next slot, taken when the snapshot starts. */
        Map<Integer, String> salts();

        long nextSlot();

        /** Copies live index entries at positions [from, from + count) into {@code out}; see {@link CompactIndex#copyLive}. */
        int copy(long from, long count, MemorySegment out);

        long capacity();

        void beginCopy();

        void endCopy();

        /**
         * A compact index as a snapshot source.
         *
         * @param group the allocator group of a slot
         */
        static Source of(CompactIndex index, Supplier<Map<Integer, String>> salts,
                LongSupplier nextSlot, IntUnaryOperator group) {
            return new Source() {
                @Override
                public Map<Integer, String> salts() {
                    return salts.get();
                }

                @Override
                public long nextSlot() {
                    return nextSlot.getAsLong();
                }

                @Override
                public int copy(long from, long count, MemorySegment out) {
                    return index.copyLive(from, count, out, group);
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
            };
        }
    }

    /**
     * Writes a snapshot of {@code source} into {@code area}, starting the log at {@code startLsn}.
     *
     * @param lock the store's lock, held only around each step's copy
     * @param pacer told after each step (outside the lock): may rest to spread the snapshot out
     * @return its header
     */
    public static Header write(BlockDevice device, V2Layout layout, int area, long seq, long startLsn, Source source,
            Lock lock, PlacementId placement, AtomicLong written,
            Pacer pacer) throws IOException {
        int blockAlign = layout.blockAlign();
        long base = layout.snapshotOffset(area) + blockAlign;
        long room = layout.snapshotBytes() - blockAlign;
        CRC32C crc = new CRC32C();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(WRITE_BYTES + (long) STEP * V2Layout.SNAPSHOT_ENTRY_BYTES + blockAlign, 4096);
            MemorySegment step = arena.allocate((long) STEP * V2Layout.SNAPSHOT_ENTRY_BYTES, 8);
            // The copy is fuzzy: a key deleted after its step was copied whose slot went to a key placed in a
            // later step would make two entries of one slot (and more entries than slots under heavy churn).
            // The later one is dropped: its put came after the snapshot's start, so the log replays it.
            MemorySegment slotsTaken = arena.allocate((layout.maxSlots() + 63) / 64 * 8, 8);
            long[] at = {0}; // bytes in buf
            long[] out = {0}; // body bytes written to the device
            Map<Integer, String> salts;
            long nextSlot;
            lock.lock();
            try {
                salts = source.salts();
                nextSlot = source.nextSlot();
                source.beginCopy();
            } finally {
                lock.unlock();
            }
            long entries = 0;
            try {
                ByteBuffer head = ByteBuffer.allocate(4 + salts.size() * (4 + 3 * 128))
                        .order(ByteOrder.LITTLE_ENDIAN);
                head.putInt(salts.size());
                for (Map.Entry<Integer, String> s : salts.entrySet()) {
                    byte[] b = s.getValue().getBytes(StandardCharsets.UTF_8);
                    LogFormat.putSalt(head, s.getKey(), b);
                }
                append(buf, at, head.array(), head.position(), crc);
                long capacity = source.capacity();
                for (long pos = 0; pos < capacity; pos += STEP) {
                    long stepStart = System.nanoTime();
                    int n;
                    lock.lock();
                    try {
                        n = source.copy(pos, STEP, step);
                    } finally {
                        lock.unlock();
                    }
                    n = dropSlotsTaken(step, n, slotsTaken, layout.maxSlots());
                    entries += n;
                    long bytes = (long) n * V2Layout.SNAPSHOT_ENTRY_BYTES;
                    MemorySegment.copy(step, 0, buf, at[0], bytes);
                    crc.update(buf.asSlice(at[0], bytes).asByteBuffer());
                    at[0] += bytes;
                    if (at[0] >= WRITE_BYTES) {
                        flushBuffer(device, buf, at, out, base, room, blockAlign, false, placement, written);
                    }
                    pacer.stepDone(System.nanoTime() - stepStart);
                }
            } finally {
                lock.lock();
                try {
                    source.endCopy();
                } finally {
                    lock.unlock();
                }
            }
            long bodyBytes = out[0] + at[0];
            flushBuffer(device, buf, at, out, base, room, blockAlign, true, placement, written);
            device.flush(); // the body is durable before the header that commits it
            Header committing = new Header(area, seq, startLsn, entries, bodyBytes, nextSlot, (int) crc.getValue());
            MemorySegment header = arena.allocate(blockAlign, 4096);
            committing.write(header, layout.incarnation());
            IoBatch b = new IoBatch(1);
            b.write(layout.snapshotOffset(area), header, placement);
            device.execute(b);
            device.flush();
            written.addAndGet(blockAlign);
            return committing;
        }
    }

    private static void append(MemorySegment buf, long[] at, byte[] bytes, int len, CRC32C crc) {
        MemorySegment.copy(bytes, 0, buf, ValueLayout.JAVA_BYTE, at[0], len);
        crc.update(bytes, 0, len);
        at[0] += len;
    }

    /** Writes the whole blocks of {@code buf} (all of it, zero-padded, when {@code last}); keeps the rest. */
    private static void flushBuffer(BlockDevice device, MemorySegment buf, long[] at, long[] out, long base, long room,
            int blockAlign, boolean last, PlacementId placement, AtomicLong written)
            throws IOException {
        long whole = last ? OnDiskFormat.roundUp(at[0], blockAlign) : at[0] / blockAlign * blockAlign;
        if (whole == 0) {
            return;
        }
        if (out[0] + whole > room) {
            throw new IOException("snapshot does not fit its area of " + room + " bytes (metadata sized for fewer"
                    + " slots than the index holds?)");
        }
        if (last) {
            buf.asSlice(at[0], whole - at[0]).fill((byte) 0);
        }
        IoBatch b = new IoBatch(1);
        b.write(base + out[0], buf.asSlice(0, whole), placement);
        device.execute(b);
        written.addAndGet(whole);
        long keep = at[0] - Math.min(at[0], whole);
        MemorySegment.copy(buf, whole, buf, 0, keep);
        out[0] += whole;
        at[0] = keep;
    }
}
