package io.fdpblock.core.v2;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashSet;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * Reads fdpblock_v2's log ({@link LogFormat}): replays it from a snapshot's start ({@link #scan}). A torn
 * or stale chunk (bad CRC, another incarnation, an LSN that does not follow, a chunk of an unfinished
 * earlier commit) ends the log; {@link #probe} looks past it for chunks that prove the log goes on,
 * which tells a torn tail from damage with later commits after it.
 */
public final class LogReader {
    private LogReader() {}

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

    /**
     * Reads the log from {@code fromLsn} until a chunk is missing, torn, stale or does not parse (a
     * record the store cannot have written: see {@link LogFormat#visit}), handing every record of the
     * chunks before it to {@code visitor}, and none of that chunk's.
     *
     * @param fromLsn where a chunk starts: a non-negative multiple of block_align (a snapshot's start LSN,
     *        which {@link Snapshots} checks)
     * @return the LSN after the last valid chunk: where the next one is written
     */
    static long replay(BlockDevice device, V2Layout layout, long fromLsn, LogFormat.Visitor visitor) throws IOException {
        return scan(device, layout, fromLsn, visitor).endLsn();
    }

    /** {@link #replay}, also saying where and why it stopped (recovery notes, {@code inspect}). */
    static Replay scan(BlockDevice device, V2Layout layout, long fromLsn, LogFormat.Visitor visitor) throws IOException {
        int blockAlign = layout.blockAlign();
        // every chunk fits a window: one that did not would end the replay there, and lose what follows
        long window = Math.min(layout.logBytes(), Math.max(4L << 20, LogFormat.maxChunkBytes(layout)));
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
                if (!LogFormat.hasMagic(h)) {
                    return new Replay(lsn, chunks, "no chunk at LSN " + lsn, false);
                }
                if (LogFormat.incarnation(h) != layout.incarnation()) {
                    return new Replay(lsn, chunks, "a chunk of another incarnation at LSN " + lsn + " (written before"
                            + " the store was formatted or migrated)", false);
                }
                if (!LogFormat.headerIntact(h)) {
                    return new Replay(lsn, chunks, "torn chunk at LSN " + lsn + ": its header fails its CRC32C", true);
                }
                long stored = LogFormat.lsn(h);
                if (stored != lsn) {
                    return stored < lsn && (lsn - stored) % layout.logBytes() == 0
                            ? new Replay(lsn, chunks, "an older lap's chunk (LSN " + stored + ") at LSN " + lsn, false)
                            : new Replay(lsn, chunks, "a chunk at LSN " + lsn + " that says LSN " + stored, true);
                }
                int records = LogFormat.records(h);
                if (records == LogFormat.PAD) {
                    chunks++;
                    lsn += lap;
                    continue;
                }
                long body = LogFormat.bodyBytes(h);
                long size = LogFormat.chunkBytes(body, blockAlign);
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
                byte[] bytes = chunk.asSlice(LogFormat.CHUNK_HEADER, body).toArray(ValueLayout.JAVA_BYTE);
                CRC32C c = new CRC32C();
                c.update(bytes);
                if ((int) c.getValue() != LogFormat.bodyCrc(chunk)) {
                    return new Replay(lsn, chunks, "torn chunk at LSN " + lsn + ": its body fails its CRC32C", true);
                }
                if (!LogFormat.visit(bytes, records, layout, null)) {
                    return new Replay(lsn, chunks, "a chunk at LSN " + lsn + " whose records do not parse", true);
                }
                long commit = LogFormat.commitStart(bytes);
                if (commit > lsn || (commit >= 0 && commit < lsn && prevCommit >= 0 && commit != prevCommit)) {
                    // a chunk left of a commit that a crash cut short, which a later commit did not reach yet
                    return new Replay(lsn, chunks, "a chunk at LSN " + lsn + " of a commit from LSN " + commit
                            + ", which the log before it does not continue (left of an unfinished commit)", true);
                }
                prevCommit = commit < 0 ? prevCommit : commit;
                LogFormat.visit(bytes, records, layout, visitor); // only once the whole chunk parsed
                chunks++;
                if (LogFormat.isCloseMarker(bytes, records)) {
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
    public record Beyond(long firstLsn, long chunks, long puts, Set<Long> keys, long resumeLsn) {}

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
        Set<Long> keys = new HashSet<>();
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
                    if (!LogFormat.hasMagic(h) || LogFormat.incarnation(h) != layout.incarnation()
                            || !LogFormat.headerIntact(h) || LogFormat.records(h) == LogFormat.PAD) {
                        continue;
                    }
                    long lsn = LogFormat.lsn(h);
                    long body = LogFormat.bodyBytes(h);
                    long size = LogFormat.chunkBytes(body, blockAlign);
                    if (lsn <= stopLsn || Math.floorMod(lsn, ringBytes) != place || place + size > ringBytes) {
                        continue;
                    }
                    if (chunkBuf == null || chunkBuf.byteSize() < size) {
                        chunkBuf = arena.allocate(Math.max(size, 1 << 20), 4096);
                    }
                    IoBatch c = new IoBatch(1);
                    c.read(layout.logOffset() + place, chunkBuf.asSlice(0, size));
                    device.execute(c);
                    byte[] bytes = chunkBuf.asSlice(LogFormat.CHUNK_HEADER, body).toArray(ValueLayout.JAVA_BYTE);
                    CRC32C crc = new CRC32C();
                    crc.update(bytes);
                    int records = LogFormat.records(h);
                    if ((int) crc.getValue() != LogFormat.bodyCrc(h) || !LogFormat.visit(bytes, records, layout, null)) {
                        continue;
                    }
                    long commit = LogFormat.commitStart(bytes);
                    if (commit >= 0 && commit <= stopLsn) {
                        continue; // the rest of the commit the stop cut short, or left of an earlier one
                    }
                    chunks++;
                    first = Math.min(first, lsn);
                    resume = Math.max(resume, lsn + size);
                    LogFormat.visit(bytes, records, layout, new LogFormat.Visitor() {
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

    private static void read(BlockDevice device, V2Layout layout, long lsn, MemorySegment into) throws IOException {
        IoBatch b = new IoBatch(1);
        b.read(layout.logOffset() + lsn % layout.logBytes(), into);
        device.execute(b);
    }
}
