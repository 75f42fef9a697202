package io.fdpblock.core.v2;

import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.PutRequest;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;

/**
 * fdpblock_v2's log format: the chunks of the ring and the records in them, their constants, and the
 * decoding of a chunk's body that replay trusts ({@link #visit}). The writer ({@link LogWriter}) and the
 * reader ({@link LogReader}) share it.
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
 */
final class LogFormat {
    private LogFormat() {}

    static final byte[] MAGIC = "FDPBLG02".getBytes(StandardCharsets.US_ASCII);
    // A chunk header's fields (the table above, docs/on-device-format.md), for the writer and the reader.
    private static final int INCARNATION_AT = 8;
    private static final int LSN_AT = 16;
    private static final int BODY_BYTES_AT = 24;
    private static final int RECORDS_AT = 28;
    private static final int BODY_CRC_AT = 32;
    private static final int HEADER_CRC_AT = 36;
    /** Bytes of a chunk header: the body starts here. */
    static final int CHUNK_HEADER = 40;
    static final byte PUT = 1;
    /** Bytes of a PUT record before its key. */
    static final int PUT_RECORD = 35;
    static final byte DELETE = 2;
    /** Bytes of a DELETE record. */
    static final int DELETE_RECORD = 21;
    static final byte SALT = 3;
    /** Bytes of a SALT record before its UTF-8 salt. */
    static final int SALT_RECORD = 5;
    /**
     * First record of every chunk: the LSN of its commit's first chunk. Recovery tells by it a chunk that
     * continues a commit from one that starts the next (so a damaged chunk followed by a later commit is
     * corruption, not a torn tail), and a stale chunk of an unfinished commit from the chain.
     */
    static final byte COMMIT = 4;
    /** Last record of the chunk a clean close writes: the log ends here, nothing was torn. */
    static final byte CLOSED = 5;
    static final int COMMIT_RECORD = 9;
    /** Where a COMMIT record keeps its LSN: after its type byte. */
    private static final int COMMIT_LSN_AT = 1;
    /** The record count of a padding chunk, which fills the ring to its end. */
    static final int PAD = -1;

    /** What replay hands each record to. */
    interface Visitor {
        void put(long h1, long h2, int slot, int size, int crc, int group, int saltId, String key);

        void delete(long h1, long h2, int slot);

        void salt(int id, String salt);
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
        return chunkBytes(maxChunkBody(layout), layout.blockAlign());
    }

    /** The bytes a chunk of {@code body} body bytes takes in the log: header and body, to the next block. */
    static long chunkBytes(long body, int blockAlign) {
        return OnDiskFormat.roundUp(CHUNK_HEADER + body, blockAlign);
    }

    /**
     * Puts a salt's definition: {@code u16 id | u16 length | UTF-8}, the body of a SALT record and of each
     * salt in a snapshot's body.
     */
    static ByteBuffer putSalt(ByteBuffer b, int id, byte[] utf8) {
        return b.putShort((short) id).putShort((short) utf8.length).put(utf8);
    }

    /** Bytes of the record that starts at {@code at} (PUT, DELETE or SALT). */
    static int recordLength(ByteBuffer b, int at) {
        return switch (b.get(at)) {
            case PUT -> PUT_RECORD + Short.toUnsignedInt(b.getShort(at + 1));
            case DELETE -> DELETE_RECORD;
            case SALT -> SALT_RECORD + Short.toUnsignedInt(b.getShort(at + 3));
            default -> throw new IllegalStateException("log record type " + b.get(at));
        };
    }

    /** Writes a chunk's header: the magic, incarnation, LSN, body bytes, records and CRCs. */
    static void writeHeader(MemorySegment buf, long incarnation, long lsn, int body, int records, int bodyCrc) {
        buf.set(OnDiskFormat.U64, INCARNATION_AT, incarnation);
        buf.set(OnDiskFormat.U64, LSN_AT, lsn);
        buf.set(OnDiskFormat.U32, BODY_BYTES_AT, body);
        buf.set(OnDiskFormat.U32, RECORDS_AT, records);
        buf.set(OnDiskFormat.U32, BODY_CRC_AT, bodyCrc);
        HeaderFrame.seal(buf, MAGIC, HEADER_CRC_AT);
    }

    // A chunk header's fields as read (its magic and CRC checked by the reader, in its own order).

    static boolean hasMagic(MemorySegment h) {
        return OnDiskFormat.hasMagic(h, MAGIC);
    }

    static long incarnation(MemorySegment h) {
        return h.get(OnDiskFormat.U64, INCARNATION_AT);
    }

    /** Whether the header's CRC32C holds. */
    static boolean headerIntact(MemorySegment h) {
        return HeaderFrame.crcHolds(h, HEADER_CRC_AT);
    }

    static long lsn(MemorySegment h) {
        return h.get(OnDiskFormat.U64, LSN_AT);
    }

    /** Bytes of the body (a u32). */
    static long bodyBytes(MemorySegment h) {
        return Integer.toUnsignedLong(h.get(OnDiskFormat.U32, BODY_BYTES_AT));
    }

    /** Records in the body, or {@link #PAD}. */
    static int records(MemorySegment h) {
        return h.get(OnDiskFormat.U32, RECORDS_AT);
    }

    static int bodyCrc(MemorySegment h) {
        return h.get(OnDiskFormat.U32, BODY_CRC_AT);
    }

    /** Puts the COMMIT record that opens a chunk's {@code body}: the LSN of its commit's first chunk. */
    static void putCommit(MemorySegment body, long commitStart) {
        body.set(ValueLayout.JAVA_BYTE, 0, COMMIT);
        body.set(OnDiskFormat.U64, COMMIT_LSN_AT, commitStart);
    }

    /** The LSN of the commit a chunk's body belongs to (its COMMIT record), or -1 (written before they were). */
    static long commitStart(byte[] body) {
        return body.length >= COMMIT_RECORD && body[0] == COMMIT
                ? ByteBuffer.wrap(body, COMMIT_LSN_AT, 8).order(ByteOrder.LITTLE_ENDIAN).getLong() : -1;
    }

    /** The chunk a clean close writes: exactly a COMMIT and a CLOSED record (a parsed body's last byte alone could be any record's). */
    static boolean isCloseMarker(byte[] body, int records) {
        return records == 2 && body.length == COMMIT_RECORD + 1 && body[0] == COMMIT && body[COMMIT_RECORD] == CLOSED;
    }

    /** Keys are ASCII as {@code KeyCodec} writes them: valid UTF-8 without a decoder (one per record was most of a replay). */
    private static boolean isAscii(byte[] b, int from, int length) {
        for (int i = from; i < from + length; i++) {
            if (b[i] < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Parses a chunk's body: exactly {@code records} records, each one the store can have written (a put
     * of a key of 1 to {@value PutRequest#MAX_KEY_BYTES} bytes of well-formed UTF-8 and an entry
     * {@link V2Layout#holdsEntry} accepts, a delete of one of its slots, a salt).
     *
     * @param v what gets the records, or null to check the body only
     * @return false when it does not parse (the chunk is then not trusted)
     */
    static boolean visit(byte[] body, int records, V2Layout layout, Visitor v) {
        if (records < 0) {
            return false; // a count above 2^31: more records than any chunk holds
        }
        if (v != null) { // parsed already: whatever the visitor throws is its own failure, never "does not parse"
            try {
                return walk(body, records, layout, v);
            } catch (CharacterCodingException e) {
                throw new IllegalStateException("a log chunk that parsed does not decode", e); // only the check decodes
            }
        }
        try {
            return walk(body, records, layout, null);
        } catch (RuntimeException | CharacterCodingException e) {
            return false; // a record cut off, or a key that is not UTF-8
        }
    }

    private static boolean walk(byte[] body, int records, V2Layout layout, Visitor v)
            throws CharacterCodingException {
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
