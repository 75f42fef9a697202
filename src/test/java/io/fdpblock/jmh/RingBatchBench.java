package io.fdpblock.jmh;

import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import io.fdpblock.uring.Uring;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/**
 * The ring's hot path without a device: fill a batch of NOP SQEs, one {@code io_uring_enter} that
 * submits them and waits for all, reap every CQE. Time per batch; the score divided by the batch size
 * is the per-operation cost of our SQE prep and CQE reap plus the kernel's NOP round trip.
 *
 * <p>Thread-scoped state: JMH sets it up on the benchmark thread, which then owns the ring (its memory
 * is in a confined arena and, with SINGLE_ISSUER, the kernel insists on one submitter too).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class RingBatchBench {
    @Param({"32"})
    int batch;

    private Ring ring;
    private long sum;
    private Ring.CompletionHandler handler;

    @Setup(Level.Trial)
    public void open() throws IOException {
        Uring.ensureAvailable();
        ring = Ring.open(RingOptions.of(64));
        handler = (userData, res, flags, extra) -> {
            if (res < 0) {
                throw new IllegalStateException("NOP failed: " + res);
            }
            sum += userData;
        };
    }

    @TearDown(Level.Trial)
    public void close() {
        ring.close();
    }

    @Benchmark
    public long fillSubmitReap() throws IOException {
        for (int i = 0; i < batch; i++) {
            if (ring.prepNop(i) < 0) {
                throw new IllegalStateException("SQ full: the ring has " + ring.sqEntries() + " entries");
            }
        }
        ring.submitAndWait(batch);
        int reaped = ring.reap(handler);
        while (reaped < batch) { // NOPs complete inline; this loop is only a safety net
            ring.submitAndWait(batch - reaped);
            reaped += ring.reap(handler);
        }
        return sum;
    }
}
