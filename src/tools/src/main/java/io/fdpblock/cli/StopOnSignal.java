package io.fdpblock.cli;

import java.io.PrintStream;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Turns SIGINT or SIGTERM during a job into an orderly stop: a JVM shutdown hook says so, asks the
 * job to stop ({@link #requested()}, checked between units of work), and holds the JVM until the job
 * has closed what it opened ({@link #close()}), for at most {@code grace}. A {@link Scratch} made
 * with this guard removes its temp dir only after that.
 */
final class StopOnSignal implements AutoCloseable {
    private final CountDownLatch finished = new CountDownLatch(1);
    private final Thread hook;
    private final Duration grace;
    private volatile boolean requested;

    /** @param what what the job does when told to stop, for the message */
    StopOnSignal(PrintStream err, String what, Duration grace) {
        this.grace = grace;
        this.hook = new Thread(() -> {
            requested = true;
            err.println();
            err.println("fdpblock: stopping (SIGINT or SIGTERM): " + what);
            if (!awaitFinished()) {
                err.println("fdpblock: the job did not stop within " + grace.toSeconds() + " s; exiting without it");
            }
        }, "fdpblock-stop-on-signal");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Whether a signal asked the job to stop. */
    boolean requested() {
        return requested;
    }

    /** Waits (bounded by the grace) until the job has closed up. @return false when the grace ran out */
    boolean awaitFinished() {
        try {
            return finished.await(grace.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The job has closed everything: the JVM may exit. */
    @Override
    public void close() {
        finished.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // shutting down already: the hook is running and now sees the job finished
        }
    }
}
