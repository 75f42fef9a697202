package io.fdpblock.sim;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.ForwardingBlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * A {@link BlockDevice} that records every write, flush and deallocation that reaches the device it
 * wraps into a trace file (docs/trace-format.md), for {@code fdpblock simulate}.
 *
 * <p>Writes are recorded when they complete, and only when they succeeded: a write that failed (or was
 * cancelled at close) never reached the media, and completion order is the order the device
 * acknowledged, the closest a host can see to the order data landed. A record's time is when it was
 * appended (its batch's completion). Flushes and deallocations are recorded when the wrapped device returns from them
 * (a deallocation only when it reports having told the device something). Reads are not recorded.
 *
 * <p>Thread-safe like any device: completions on the device's I/O thread, flushes and deallocations
 * from any thread append to one {@link TraceWriter}.
 */
public final class TracingBlockDevice extends ForwardingBlockDevice {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.sim");
    private final TraceWriter trace;
    private final int lbaBytes;

    private TracingBlockDevice(BlockDevice inner, TraceWriter trace) {
        super(inner);
        this.trace = trace;
        this.lbaBytes = inner.logicalBlockSize();
    }

    /**
     * Wraps {@code inner} (which the returned device then owns: closing it closes {@code inner} and then
     * the trace) and starts the trace {@code traceFile} (created or truncated).
     */
    public static TracingBlockDevice wrap(BlockDevice inner, Path traceFile) throws IOException {
        long ruBytes = 0;
        int ids = 0;
        if (inner.supportsPlacement()) {
            // the header lets `simulate` default to the traced device's geometry; without it (the FDP
            // configuration log needs CAP_SYS_ADMIN) the trace is still whole, only those defaults are lost
            try {
                ids = inner.placementIds().size();
                ruBytes = inner.reclaimUnitBytes();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "trace " + traceFile + ": the FDP geometry of " + inner.path()
                        + " is not readable (" + e.getMessage() + "); the trace header leaves it unknown");
            }
        }
        TraceWriter w = TraceWriter.create(traceFile, inner.sizeBytes(), inner.logicalBlockSize(), ruBytes, ids);
        return new TracingBlockDevice(inner, w);
    }

    /** The trace being written. */
    public TraceWriter trace() {
        return trace;
    }

    /** The device underneath. */
    public BlockDevice inner() {
        return inner;
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        // One small object per batch (the wrapping callback), none per operation.
        inner.submit(batch, b -> {
            try {
                record(b);
            } finally {
                callback.onComplete(b);
            }
        });
    }

    private void record(IoBatch b) {
        for (int i = 0; i < b.size(); i++) {
            if (b.failed(i)) {
                continue;
            }
            if (b.isWrite(i)) {
                long done = b.result(i) / lbaBytes * lbaBytes; // a short write (files only) counts what landed
                if (done > 0) {
                    // no directive and id 0 land on the same handle (the namespace's default): both trace as 0
                    PlacementId p = b.placementId(i);
                    trace.write(b.offset(i), done, p.isNone() ? 0 : p.value());
                }
            } else if (b.isDeallocate(i)) {
                if (inner.supportsDeallocate()) { // where it is a no-op the data stays: nothing to record
                    trace.deallocate(b.offset(i), b.length(i));
                }
            } else if (b.isFlush(i)) {
                trace.flush(); // a flush inside a batch
            }
        }
    }

    @Override
    public void flush() throws IOException {
        inner.flush();
        trace.flush();
    }


    /**
     * Closes the device (its in-flight writes complete and are recorded), then the trace.
     *
     * @throws UncheckedIOException when the trace could not be written completely
     */
    @Override
    public void close() {
        try {
            inner.close();
        } finally {
            try {
                trace.close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }


    @Override
    public String toString() {
        return "traced(" + inner + " -> " + trace.path() + ")";
    }
}
