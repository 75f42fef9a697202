package io.fdpblock.device;

/**
 * What an engine's rings did so far (cumulative since open; {@link #minus} gives a window), so that a
 * throughput figure can say why: how deep the device's queue was on average and how many SQEs each
 * system call carried.
 *
 * @param rings rings counted (reactors and caller-owned rings)
 * @param enters {@code io_uring_enter} calls (submits and waits)
 * @param submits those of them that handed SQEs to the kernel
 * @param sqes SQEs the kernel took (I/O, and the wake-up reads re-armed)
 * @param completions I/O completions reaped
 * @param wakeups eventfd writes by submitters that found a reactor asleep
 * @param callerRunBatches batches run by their caller on its own ring ({@link BlockDevice#execute})
 * @param depthNanos the integral over time of the I/Os in the kernel (in-flight x nanoseconds), per ring summed
 * @param spanNanos the time those integrals cover, per ring summed
 */
public record IoStats(int rings, long enters, long submits, long sqes, long completions, long wakeups, long callerRunBatches,
        long depthNanos, long spanNanos) {
    public static final IoStats NONE = new IoStats(0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** This minus an earlier snapshot of the same device: the window between them. */
    public IoStats minus(IoStats earlier) {
        return new IoStats(rings, enters - earlier.enters, submits - earlier.submits, sqes - earlier.sqes, completions - earlier.completions,
                wakeups - earlier.wakeups, callerRunBatches - earlier.callerRunBatches, depthNanos - earlier.depthNanos,
                spanNanos - earlier.spanNanos);
    }

    IoStats plus(IoStats o) {
        return new IoStats(rings + o.rings, enters + o.enters, submits + o.submits, sqes + o.sqes, completions + o.completions,
                wakeups + o.wakeups, callerRunBatches + o.callerRunBatches, depthNanos + o.depthNanos,
                spanNanos + o.spanNanos);
    }

    /**
     * Time-averaged I/Os in the kernel over the window, summed over the rings (each ring's average over
     * its own span, added up); NaN when nothing was measured.
     */
    public double averageDepth(double windowSeconds) {
        return windowSeconds > 0 && spanNanos > 0 ? depthNanos / (windowSeconds * 1e9) : Double.NaN;
    }

    /** SQEs per {@code io_uring_enter} that submitted any; NaN without such calls. */
    public double sqesPerSubmit() {
        return submits > 0 ? (double) sqes / submits : Double.NaN;
    }

    /** System calls into io_uring per I/O completed; NaN without completions. */
    public double entersPerIo() {
        return completions > 0 ? (double) enters / completions : Double.NaN;
    }
}
