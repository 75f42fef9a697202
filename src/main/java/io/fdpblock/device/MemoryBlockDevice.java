package io.fdpblock.device;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A device in memory, for the tests of the layers above: same rules (block alignment, end of device,
 * batches, callbacks) as the real engines, completed on the submitting thread. Contents are lost at close.
 */
final class MemoryBlockDevice extends AbstractBlockDevice {
    private final Arena arena = Arena.ofShared();
    private final MemorySegment data;

    MemoryBlockDevice(String name, long sizeBytes, int logicalBlockSize, DeviceOptions options) {
        super(name, sizeBytes, logicalBlockSize, 1 << 30, 1, options);
        if (sizeBytes <= 0 || sizeBytes % logicalBlockSize != 0) {
            throw new IllegalArgumentException("memory device size " + sizeBytes
                    + " must be a positive multiple of the block size " + logicalBlockSize);
        }
        this.data = arena.allocate(sizeBytes, 4096);
    }

    @Override
    public IoEngine engine() {
        return IoEngine.MEMORY;
    }

    @Override
    boolean isDirectIo() {
        return false;
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        enter("submit");
        try {
            validate(batch);
            for (int i = 0; i < batch.size(); i++) {
                byte kind = batch.kind(i);
                if (kind == IoBatch.FLUSH || kind == IoBatch.DEALLOCATE) {
                    batch.complete(i, 0);
                    continue;
                }
                MemorySegment buf = batch.buffer(i);
                long offset = batch.offset(i);
                long n = Math.min(buf.byteSize(), sizeBytes() - offset);
                if (kind == IoBatch.READ) {
                    MemorySegment.copy(data, offset, buf, 0, n);
                } else {
                    MemorySegment.copy(buf, 0, data, offset, n);
                }
                batch.complete(i, n);
            }
        } finally {
            leave();
        }
        complete(batch, callback);
    }

    @Override
    public void flush() throws IOException {
        enter("flush");
        leave();
    }

    @Override
    public void close() {
        if (markClosedAndDrain()) {
            arena.close();
            buffers().close();
        }
    }
}
