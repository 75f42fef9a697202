package io.fdpblock.fuzz;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What the fuzz targets share: the rule for an exception a decoder documents (it must say what is wrong)
 * and little-endian reads of the raw input, so that targets check decoded fields against the bytes
 * themselves rather than against the decoder's own arithmetic.
 */
public final class Fuzzing {
    private Fuzzing() {}

    /**
     * A documented exception escaped the decoder: it is an answer, not a finding, when it says what is
     * wrong. One without a message is a finding (the user would learn nothing).
     */
    public static void requireMessage(Exception e) {
        if (e.getMessage() == null || e.getMessage().isBlank()) {
            throw new AssertionError("documented exception without a message", e);
        }
    }

    /** An oracle disagreed with the decoder: a finding. */
    public static AssertionError wrong(String what, Object got, Object expected) {
        return new AssertionError(what + ": got " + got + ", expected " + expected);
    }

    /** {@code data} zero-padded (or cut) to {@code size} bytes: a device returns whole blocks. */
    public static byte[] padded(byte[] data, int from, int size) {
        byte[] out = new byte[size];
        if (from < data.length) {
            System.arraycopy(data, from, out, 0, Math.min(size, data.length - from));
        }
        return out;
    }

    public static long u64(byte[] b, int off) {
        return ByteBuffer.wrap(b, off, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    public static long u32(byte[] b, int off) {
        return Integer.toUnsignedLong(ByteBuffer.wrap(b, off, 4).order(ByteOrder.LITTLE_ENDIAN).getInt());
    }

    public static int u16(byte[] b, int off) {
        return Short.toUnsignedInt(ByteBuffer.wrap(b, off, 2).order(ByteOrder.LITTLE_ENDIAN).getShort());
    }
}
