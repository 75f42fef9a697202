package io.fdpblock.util;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/** Thread helpers shared by the layers that own threads. */
public final class Threads {
    private Threads() {}

    /** Joins {@code t}, waiting through interrupts (a close must not leave its thread behind), then restores the interrupt flag. */
    public static void joinUninterruptibly(Thread t) {
        joinUninterruptibly(t, Long.MAX_VALUE);
    }

    /**
     * Shuts {@code executor} down (running tasks finish, none is interrupted) and waits at most
     * {@code timeoutNanos} for it, through interrupts, then restores the interrupt flag.
     *
     * @return true when it has terminated
     */
    public static boolean shutdownAndAwait(ExecutorService executor, long timeoutNanos) {
        executor.shutdown();
        boolean done = false;
        boolean interrupted = false;
        long deadline = System.nanoTime() + timeoutNanos;
        while (!done && System.nanoTime() < deadline) {
            try {
                done = executor.awaitTermination(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return done || executor.isTerminated();
    }

    /**
     * Joins {@code t} for at most {@code timeoutNanos}, waiting through interrupts, then restores the
     * interrupt flag.
     *
     * @return true when {@code t} has ended
     */
    public static boolean joinUninterruptibly(Thread t, long timeoutNanos) {
        boolean interrupted = false;
        long deadline = timeoutNanos == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + timeoutNanos;
        while (t.isAlive()) {
            long left = deadline == Long.MAX_VALUE ? 0 : deadline - System.nanoTime();
            if (deadline != Long.MAX_VALUE && left <= 0) {
                break;
            }
            try {
                if (deadline == Long.MAX_VALUE) {
                    t.join();
                } else {
                    t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                }
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return !t.isAlive();
    }
}
