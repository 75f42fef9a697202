package io.fdpblock.sim;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads a trace (docs/trace-format.md) record by record, as a cursor: {@link #next()} then the
 * accessors; nothing is allocated per record. Every record is checked against the header (a known
 * kind, block-aligned and inside the device) before it is shown.
 */
public final class TraceReader implements AutoCloseable {
    private final Path path;
    private final FileChannel channel;
    private final TraceFormat.Header header;
    /** Read but not yet consumed bytes between position and limit (empty at first). */
    private final ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20).order(ByteOrder.LITTLE_ENDIAN).limit(0);
    private long index = -1;
    private long trailingBytes;
    private boolean eof;
    private long time;
    private long offset;
    private long length;
    private int op;
    private int placementId;

    private TraceReader(Path path, FileChannel channel) throws IOException {
        this.path = path;
        this.channel = channel;
        fill();
        this.header = TraceFormat.readHeader(buf, path.toString());
    }

    public static TraceReader open(Path path) throws IOException {
        FileChannel ch;
        try {
            ch = FileChannel.open(path, StandardOpenOption.READ);
        } catch (IOException e) {
            throw new IOException("cannot open trace file " + path + ": " + e, e);
        }
        try {
            return new TraceReader(path, ch);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** Reads just the header of {@code path}. */
    public static TraceFormat.Header readHeader(Path path) throws IOException {
        try (TraceReader r = open(path)) {
            return r.header();
        }
    }

    private void fill() throws IOException {
        buf.compact();
        while (buf.hasRemaining()) {
            int n = channel.read(buf);
            if (n < 0) {
                eof = true;
                break;
            }
            if (n == 0) {
                break;
            }
        }
        buf.flip();
    }

    public TraceFormat.Header header() {
        return header;
    }

    /**
     * Moves to the next record.
     *
     * @return false at the end of the trace (a partial record at the very end, as a crash mid-write
     *         leaves, ends it too: see {@link #trailingBytes()})
     * @throws IOException for a record that is not valid, naming its index and fields
     */
    public boolean next() throws IOException {
        if (buf.remaining() < TraceFormat.RECORD_BYTES && !eof) {
            fill();
        }
        if (buf.remaining() < TraceFormat.RECORD_BYTES) {
            trailingBytes = buf.remaining();
            buf.position(buf.limit());
            return false;
        }
        int at = buf.position();
        index++;
        time = buf.getLong(at + TraceFormat.R_TIME);
        offset = buf.getLong(at + TraceFormat.R_OFFSET);
        length = buf.getLong(at + TraceFormat.R_LENGTH);
        op = Byte.toUnsignedInt(buf.get(at + TraceFormat.R_OP));
        placementId = Short.toUnsignedInt(buf.getShort(at + TraceFormat.R_PLACEMENT));
        buf.position(at + TraceFormat.RECORD_BYTES);
        check();
        return true;
    }

    private void check() throws IOException {
        switch (op) {
            case TraceFormat.OP_FLUSH -> { }
            case TraceFormat.OP_WRITE, TraceFormat.OP_DEALLOCATE -> {
                int lba = header.lbaBytes();
                if (offset < 0 || length <= 0 || offset % lba != 0 || length % lba != 0
                        || length > header.deviceBytes() - offset) {
                    throw new IOException(path + ": record " + index + " (" + TraceFormat.opName(op) + " at offset "
                            + offset + ", length " + length + ") is not a whole number of " + lba
                            + "-byte blocks inside the " + header.deviceBytes() + "-byte device of the header");
                }
            }
            default -> throw new IOException(path + ": record " + index + " has kind " + op + "; known kinds are "
                    + TraceFormat.OP_WRITE + " write, " + TraceFormat.OP_FLUSH + " flush, " + TraceFormat.OP_DEALLOCATE
                    + " deallocate (a newer trace version, or not a trace?)");
        }
    }

    /** Index of the current record, from 0. */
    public long index() {
        return index;
    }

    /** Nanoseconds since the trace began. */
    public long timeNanos() {
        return time;
    }

    /** One of {@link TraceFormat#OP_WRITE}, {@link TraceFormat#OP_FLUSH}, {@link TraceFormat#OP_DEALLOCATE}. */
    public int op() {
        return op;
    }

    public long offset() {
        return offset;
    }

    public long length() {
        return length;
    }

    /** The write's placement id, 0 = no directive. */
    public int placementId() {
        return placementId;
    }

    /** Bytes after the last whole record (0 for a trace that was closed properly). */
    public long trailingBytes() {
        return trailingBytes;
    }

    public Path path() {
        return path;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
