package io.fdpblock.device;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HexFormat;
import java.util.zip.CRC32C;

/**
 * The label at the start of every member of a striped store: which store it belongs to, where in it,
 * and the geometry the members were cut into. A member that carries none, another store's, or another
 * position's is refused at open, so that a wrong list of {@code device_paths} cannot map the store's
 * slots onto the wrong bytes.
 *
 * <pre>
 * 0 magic "FDPBML01" | 8 u32 version 1 | 12 u32 state (1 prepared, 2 committed) | 16 u64 store id, high
 * | 24 u64 store id, low | 32 u32 member index | 36 u32 member count | 40 u64 stripe bytes
 * | 48 u64 member bytes | 56 u64 data offset | 64 u64 created (ms since the epoch) | 72 u32 CRC32C of 0..71
 * </pre>
 *
 * The rest of the label's block is zero. A member's share of the store lies at
 * {@code [dataOffset, dataOffset + memberBytes)} on it.
 *
 * @param idHigh the store's 128-bit identity, chosen at random when it was created: high half
 * @param idLow low half
 * @param committed false while the store is being created: member 0's committed label is the commit
 * @param index this member's position in the store's {@code device_paths}, from 0
 * @param count how many members the store has
 * @param stripeBytes the unit of striping (the store's slot_bytes)
 * @param memberBytes each member's share, a multiple of the stripe
 * @param dataOffset where that share starts on each member (after the label's block)
 * @param createdMillis when the store was created, for people telling stores apart
 */
public record MemberLabel(long idHigh, long idLow, boolean committed, int index, int count, long stripeBytes,
        long memberBytes, long dataOffset, long createdMillis) {
    public static final String MAGIC = "FDPBML01";
    public static final int VERSION = 1;
    /** The bytes a label takes at the start of a member (at least one logical block, see {@link #blockBytes}). */
    public static final int BYTES = 4096;
    static final int ENCODED = 76;
    private static final int PREPARED = 1;
    private static final int COMMITTED = 2;
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The store's identity as 32 hex digits. */
    public String storeId() {
        return HexFormat.of().toHexDigits(idHigh) + HexFormat.of().toHexDigits(idLow);
    }

    public boolean sameStore(MemberLabel o) {
        return idHigh == o.idHigh && idLow == o.idLow;
    }

    /** The same label as member {@code i} would carry, in state {@code c}. */
    public MemberLabel asMember(int i, boolean c) {
        return new MemberLabel(idHigh, idLow, c, i, count, stripeBytes, memberBytes, dataOffset, createdMillis);
    }

    /** What people read: store, position, state. */
    public String describe() {
        return "member " + index + " of " + count + " of striped store " + storeId() + " (created "
                + Instant.ofEpochMilli(createdMillis) + (committed ? "" : ", its creation not completed") + ")";
    }

    /** The bytes a label's block takes on a device of logical block size {@code lbs}. */
    public static int blockBytes(int lbs) {
        return Math.max(BYTES, lbs);
    }

    void encode(MemorySegment block) {
        block.fill((byte) 0);
        MemorySegment.copy(MemorySegment.ofArray(MAGIC.getBytes(StandardCharsets.US_ASCII)), 0, block, 0, 8);
        block.set(U32, 8, VERSION);
        block.set(U32, 12, committed ? COMMITTED : PREPARED);
        block.set(U64, 16, idHigh);
        block.set(U64, 24, idLow);
        block.set(U32, 32, index);
        block.set(U32, 36, count);
        block.set(U64, 40, stripeBytes);
        block.set(U64, 48, memberBytes);
        block.set(U64, 56, dataOffset);
        block.set(U64, 64, createdMillis);
        block.set(U32, 72, crc(block));
    }

    private static int crc(MemorySegment block) {
        CRC32C c = new CRC32C();
        c.update(block.asSlice(0, 72).asByteBuffer());
        return (int) c.getValue();
    }

    /** What a member's first block holds. */
    public sealed interface Read {
        /** All zeros: no label, no data. */
        record Blank() implements Read {}

        /** A well-formed label: which store the member belongs to and where in it. */
        record Label(MemberLabel label) implements Read {}

        /** The label's magic with a wrong CRC, version or impossible fields. */
        record Damaged(String problem) implements Read {}

        /** Neither zeros nor a label: e.g. a store written before labels, or other data. */
        record Other(String firstBytes) implements Read {}
    }

    /** Decodes a member's first block (at least {@link #BYTES} of it). */
    public static Read decode(MemorySegment block) {
        byte[] magic = block.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE);
        if (!MAGIC.equals(new String(magic, StandardCharsets.ISO_8859_1))) {
            for (long i = 0; i < BYTES; i++) {
                if (block.get(ValueLayout.JAVA_BYTE, i) != 0) {
                    return new Read.Other(firstBytes(block));
                }
            }
            return new Read.Blank();
        }
        if (block.get(U32, 72) != crc(block)) {
            return new Read.Damaged("its CRC32C does not match (stored " + Integer.toHexString(block.get(U32, 72))
                    + ", computed " + Integer.toHexString(crc(block)) + ")");
        }
        int version = block.get(U32, 8);
        if (version != VERSION) {
            return new Read.Damaged("label version " + version + ", this build reads " + VERSION);
        }
        int state = block.get(U32, 12);
        int index = block.get(U32, 32);
        int count = block.get(U32, 36);
        long stripe = block.get(U64, 40);
        long memberBytes = block.get(U64, 48);
        long dataOffset = block.get(U64, 56);
        if ((state != PREPARED && state != COMMITTED) || count < 2 || index < 0 || index >= count || stripe <= 0
                || memberBytes <= 0 || memberBytes % stripe != 0 || dataOffset < BYTES) {
            return new Read.Damaged("impossible fields (state " + state + ", member " + index + " of " + count
                    + ", stripe " + stripe + ", member bytes " + memberBytes + ", data offset " + dataOffset + ")");
        }
        return new Read.Label(new MemberLabel(block.get(U64, 16), block.get(U64, 24), state == COMMITTED, index,
                count, stripe, memberBytes, dataOffset, block.get(U64, 64)));
    }

    private static String firstBytes(MemorySegment block) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 16; i++) {
            int b = block.get(ValueLayout.JAVA_BYTE, i) & 0xff;
            s.append(b >= 0x20 && b < 0x7f ? Character.toString(b) : ".");
        }
        return "\"" + s + "\" (hex " + HexFormat.of().formatHex(block.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE))
                + "...)";
    }

    /** Reads what {@code member}'s first block holds. */
    public static Read read(BlockDevice member) throws IOException {
        int bytes = blockBytes(member.logicalBlockSize());
        if (member.sizeBytes() < bytes) {
            return new Read.Other("(the device holds only " + member.sizeBytes() + " bytes)");
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment block = arena.allocate(bytes, Math.max(4096, member.bufferAlignment()));
            IoBatch b = new IoBatch(1);
            b.read(0, block);
            member.execute(b);
            return decode(block);
        }
    }

    /** Writes this label at the start of {@code member} and flushes it: durable when this returns. */
    public void write(BlockDevice member) throws IOException {
        int bytes = blockBytes(member.logicalBlockSize());
        try (Arena arena = Arena.ofShared()) {
            MemorySegment block = arena.allocate(bytes, Math.max(4096, member.bufferAlignment()));
            encode(block);
            IoBatch b = new IoBatch(1);
            b.write(0, block);
            member.execute(b);
            member.flush();
        }
    }
}
