package io.fdpblock.tools.util;

import java.time.Duration;

/** Thread helpers of the tools (the library's own are internal to it). */
public final class Threads {
    private Threads() {}

    /** Joins {@code t}, waiting through interrupts (a close must not leave its thread behind), then restores the interrupt flag. */
    public static void joinUninterruptibly(Thread t) {
        joinUninterruptibly(t, Duration.ofSeconds(Long.MAX_VALUE));
    }

    /**
     * Joins {@code t} for at most {@code timeout}, waiting through interrupts, then restores the interrupt flag.
     *
     * @return true when {@code t} has ended
     */
    public static boolean joinUninterruptibly(Thread t, Duration timeout) {
        boolean interrupted = false;
        long start = System.nanoTime();
        Duration left = timeout;
        while (t.isAlive() && left.isPositive()) {
            try {
                t.join(left);
            } catch (InterruptedException e) {
                interrupted = true;
            }
            left = timeout.minusNanos(System.nanoTime() - start);
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return !t.isAlive();
    }
}
