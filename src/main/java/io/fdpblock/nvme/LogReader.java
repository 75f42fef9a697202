package io.fdpblock.nvme;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/** Bounds-checked little-endian reads of a returned data structure: a lie in it is an exception, never an overread. */
final class LogReader {
    private final String what;
    private final MemorySegment data;

    LogReader(String what, MemorySegment data) {
        this.what = what;
        this.data = data;
    }

    long size() {
        return data.byteSize();
    }

    void need(long offset, long length, String field) throws IOException {
        if (offset < 0 || length < 0 || offset + length > data.byteSize()) {
            throw new IOException(what + ": " + field + " at byte " + offset + " (+" + length + ") lies beyond the "
                    + data.byteSize() + " bytes the device returned (truncated or inconsistent data)");
        }
    }

    int u8(long off, String field) throws IOException {
        need(off, 1, field);
        return Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, off));
    }

    int u16(long off, String field) throws IOException {
        need(off, 2, field);
        return Short.toUnsignedInt(data.get(NvmeLayouts.U16, off));
    }

    long u32(long off, String field) throws IOException {
        need(off, 4, field);
        return Integer.toUnsignedLong(data.get(NvmeLayouts.U32, off));
    }

    long u64(long off, String field) throws IOException {
        need(off, 8, field);
        return data.get(NvmeLayouts.U64, off);
    }

    BigInteger u128(long off, String field) throws IOException {
        need(off, 16, field);
        byte[] be = new byte[17]; // leading zero: unsigned
        for (int i = 0; i < 16; i++) {
            be[16 - i] = data.get(ValueLayout.JAVA_BYTE, off + i);
        }
        return new BigInteger(be);
    }

    /**
     * {@code count} entries of {@code entryBytes} each from {@code first}, all checked to lie inside the
     * data before the first is read (a count that lies fails as a whole).
     *
     * @param what the entries' name in the error, e.g. {@code "descriptors"}
     */
    <T> List<T> entries(long first, long count, int entryBytes, String what, Entry<T> entry) throws IOException {
        need(first, count * entryBytes, count + " " + what);
        List<T> out = new ArrayList<>((int) count);
        for (long i = 0; i < count; i++) {
            out.add(entry.at(first + entryBytes * i));
        }
        return List.copyOf(out);
    }

    /** Reads one entry at its offset. */
    interface Entry<T> {
        T at(long offset) throws IOException;
    }
}
