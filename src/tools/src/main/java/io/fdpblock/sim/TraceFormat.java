package io.fdpblock.sim;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The write-trace file (docs/trace-format.md): a 64-byte header, then 32-byte records, all little-endian.
 * This class owns the layout; {@link TraceWriter} and {@link TraceReader} only call it.
 */
public final class TraceFormat {
    /** The first 8 bytes of every trace. */
    public static final byte[] MAGIC = "FDPBTRCE".getBytes(StandardCharsets.US_ASCII);
    public static final int VERSION = 1;
    public static final int HEADER_BYTES = 64;
    public static final int RECORD_BYTES = 32;

    /** Record kinds (byte 24 of a record). */
    public static final int OP_WRITE = 1;
    public static final int OP_FLUSH = 2;
    public static final int OP_DEALLOCATE = 3;

    // header offsets
    private static final int H_VERSION = 8;
    private static final int H_HEADER_BYTES = 10;
    private static final int H_RECORD_BYTES = 12;
    private static final int H_PLACEMENT_IDS = 14;
    private static final int H_LBA = 16;
    private static final int H_DEVICE_BYTES = 24;
    private static final int H_RU_BYTES = 32;
    private static final int H_START_EPOCH_NANOS = 40;

    // record offsets
    static final int R_TIME = 0;
    static final int R_OFFSET = 8;
    static final int R_LENGTH = 16;
    static final int R_OP = 24;
    static final int R_PLACEMENT = 26;

    private TraceFormat() {}

    /**
     * What a trace says about the device it was recorded on.
     *
     * @param deviceBytes capacity of the traced device
     * @param lbaBytes its logical block size
     * @param reclaimUnitBytes FDP reclaim unit size it reported, 0 when unknown or without FDP
     * @param placementIdCount placement ids it reported (RUH Status), 0 when none
     * @param startEpochNanos wall-clock time of the first record's time 0, nanoseconds since 1970
     */
    public record Header(long deviceBytes, int lbaBytes, long reclaimUnitBytes, int placementIdCount,
            long startEpochNanos) {
        public Header {
            if (deviceBytes <= 0 || lbaBytes < 512 || Integer.bitCount(lbaBytes) != 1 || deviceBytes % lbaBytes != 0) {
                throw new IllegalArgumentException("trace header: device of " + deviceBytes + " bytes with LBA size "
                        + lbaBytes + " is not a positive multiple of a power-of-two LBA size >= 512");
            }
            if (reclaimUnitBytes < 0 || placementIdCount < 0 || placementIdCount > 0xFFFF) {
                throw new IllegalArgumentException("trace header: reclaim unit bytes " + reclaimUnitBytes
                        + " must be >= 0 and placement id count " + placementIdCount + " in 0..65535");
            }
        }
    }

    static void writeHeader(ByteBuffer b, Header h) {
        b.order(ByteOrder.LITTLE_ENDIAN);
        int at = b.position();
        b.put(MAGIC);
        b.putShort(at + H_VERSION, (short) VERSION);
        b.putShort(at + H_HEADER_BYTES, (short) HEADER_BYTES);
        b.putShort(at + H_RECORD_BYTES, (short) RECORD_BYTES);
        b.putShort(at + H_PLACEMENT_IDS, (short) h.placementIdCount());
        b.putInt(at + H_LBA, h.lbaBytes());
        b.putLong(at + H_DEVICE_BYTES, h.deviceBytes());
        b.putLong(at + H_RU_BYTES, h.reclaimUnitBytes());
        b.putLong(at + H_START_EPOCH_NANOS, h.startEpochNanos());
        b.position(at + HEADER_BYTES);
    }

    /** @throws IOException naming the file and what is wrong with its header */
    static Header readHeader(ByteBuffer b, String file) throws IOException {
        b.order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < HEADER_BYTES) {
            throw new IOException(file + " is not an fdpblock trace: " + b.remaining() + " bytes, a header needs "
                    + HEADER_BYTES);
        }
        int at = b.position();
        byte[] magic = new byte[MAGIC.length];
        b.get(magic);
        if (!Arrays.equals(magic, MAGIC)) {
            throw new IOException(file + " is not an fdpblock trace: it starts with "
                    + new String(magic, StandardCharsets.ISO_8859_1).replaceAll("\\p{Cntrl}", "?") + ", not "
                    + new String(MAGIC, StandardCharsets.US_ASCII));
        }
        int version = Short.toUnsignedInt(b.getShort(at + H_VERSION));
        int headerBytes = Short.toUnsignedInt(b.getShort(at + H_HEADER_BYTES));
        int recordBytes = Short.toUnsignedInt(b.getShort(at + H_RECORD_BYTES));
        if (version != VERSION || headerBytes != HEADER_BYTES || recordBytes != RECORD_BYTES) {
            throw new IOException(file + ": trace version " + version + " (header " + headerBytes + " bytes, records "
                    + recordBytes + " bytes); this build reads version " + VERSION + " (" + HEADER_BYTES + ", "
                    + RECORD_BYTES + ")");
        }
        try {
            Header h = new Header(b.getLong(at + H_DEVICE_BYTES), b.getInt(at + H_LBA), b.getLong(at + H_RU_BYTES),
                    Short.toUnsignedInt(b.getShort(at + H_PLACEMENT_IDS)), b.getLong(at + H_START_EPOCH_NANOS));
            b.position(at + HEADER_BYTES);
            return h;
        } catch (IllegalArgumentException e) {
            throw new IOException(file + ": " + e.getMessage(), e);
        }
    }

    static void putRecord(ByteBuffer b, long timeNanos, int op, long offset, long length, int placementId) {
        int at = b.position();
        b.putLong(at + R_TIME, timeNanos);
        b.putLong(at + R_OFFSET, offset);
        b.putLong(at + R_LENGTH, length);
        b.put(at + R_OP, (byte) op);
        b.put(at + R_OP + 1, (byte) 0);
        b.putShort(at + R_PLACEMENT, (short) placementId);
        b.putInt(at + R_PLACEMENT + 2, 0);
        b.position(at + RECORD_BYTES);
    }

    public static String opName(int op) {
        return switch (op) {
            case OP_WRITE -> "write";
            case OP_FLUSH -> "flush";
            case OP_DEALLOCATE -> "deallocate";
            default -> "op " + op;
        };
    }
}
