package io.fdpblock.bench;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.ForwardingBlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.util.concurrent.atomic.LongAdder;

/**
 * A {@link BlockDevice} that passes everything to another one and counts the bytes written below and
 * above a boundary (the metadata area and the data area of a store), as submitted: what the scale
 * benchmark reports as metadata bytes written, measured at the device rather than taken from the
 * store's own counters.
 */
final class MetaWriteCounter extends ForwardingBlockDevice {
    private final long metaEnd;
    private final LongAdder metaBytes = new LongAdder();
    private final LongAdder metaWrites = new LongAdder();
    private final LongAdder dataBytes = new LongAdder();
    private final LongAdder flushes = new LongAdder();

    /** @param metaEnd the first byte after the metadata area (the store's data base) */
    MetaWriteCounter(BlockDevice device, long metaEnd) {
        super(device);
        this.metaEnd = metaEnd;
    }

    long metaBytes() {
        return metaBytes.sum();
    }

    long metaWrites() {
        return metaWrites.sum();
    }

    long dataBytes() {
        return dataBytes.sum();
    }

    long flushes() {
        return flushes.sum();
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        long meta = 0;
        long writes = 0;
        long data = 0;
        long syncs = 0;
        for (int i = 0; i < batch.size(); i++) {
            if (batch.isWrite(i)) {
                if (batch.offset(i) < metaEnd) {
                    meta += batch.length(i);
                    writes++;
                } else {
                    data += batch.length(i);
                }
            } else if (batch.isFlush(i)) {
                syncs++;
            }
        }
        inner.submit(batch, callback); // counted only once accepted: a refused batch wrote nothing
        metaBytes.add(meta);
        metaWrites.add(writes);
        dataBytes.add(data);
        flushes.add(syncs);
    }













    @Override
    public long fixedBufferOps() {
        return inner.fixedBufferOps();
    }


    @Override
    public void flush() throws IOException {
        inner.flush();
        flushes.increment();
    }

    @Override
    public void close() {
        inner.close();
    }
}
