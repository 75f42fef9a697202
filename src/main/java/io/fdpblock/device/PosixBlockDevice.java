package io.fdpblock.device;

import io.fdpblock.linux.Errno;
import io.fdpblock.linux.NativeFile;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/**
 * pread/pwrite on the submitting thread: no I/O thread, no queue. Many threads may submit at once.
 * The reference engine the others are checked against, and the fallback where io_uring is unavailable.
 */
final class PosixBlockDevice extends AbstractBlockDevice {
    private final NativeFile file;

    private PosixBlockDevice(NativeFile file, long size, int blockSize, DeviceOptions options) {
        super(file.path().toString(), size, blockSize, 1 << 30, file.isDirect() ? blockSize : 1, options);
        this.file = file;
    }

    static PosixBlockDevice open(NativeFile file, DeviceOptions options) throws IOException {
        return new PosixBlockDevice(file, file.size(), file.logicalBlockSize(), options);
    }

    @Override
    public IoEngine engine() {
        return IoEngine.POSIX;
    }

    @Override
    boolean isDirectIo() {
        return file.isDirect();
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        enter("submit");
        try {
            validate(batch);
            for (int i = 0; i < batch.size(); i++) {
                batch.complete(i, run(batch, i));
            }
        } finally {
            leave();
        }
        complete(batch, callback);
    }

    /** @return bytes transferred, or -errno */
    private long run(IoBatch batch, int i) {
        byte kind = batch.kind(i);
        if (kind == IoBatch.FLUSH) {
            try {
                file.fdatasync();
                return 0;
            } catch (Errno.NativeIOException e) {
                return -e.errno();
            }
        }
        MemorySegment buf = batch.buffer(i);
        long offset = batch.offset(i);
        long done = 0;
        long len = buf.byteSize();
        try {
            while (done < len) { // pread/pwrite may transfer less than asked; only EOF ends a read early
                MemorySegment rest = done == 0 ? buf : buf.asSlice(done);
                long n = kind == IoBatch.READ ? file.pread(rest, offset + done) : file.pwrite(rest, offset + done);
                if (n == 0) {
                    break;
                }
                done += n;
            }
            return done;
        } catch (Errno.NativeIOException e) {
            return done > 0 ? done : -e.errno();
        }
    }

    @Override
    public void flush() throws IOException {
        enter("flush");
        try {
            file.fdatasync();
        } finally {
            leave();
        }
    }

    @Override
    public void close() {
        if (markClosedAndDrain()) {
            file.close();
            buffers().close();
        }
    }
}
