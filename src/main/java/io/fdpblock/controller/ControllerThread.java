package io.fdpblock.controller;

import io.fdpblock.util.Threads;

/**
 * The lifecycle both controllers share: one background thread, started once, stopped once; after
 * stop nothing starts again.
 */
final class ControllerThread {
    private final String what;
    private final String threadName;
    private final Object lock = new Object();
    private volatile boolean running;
    private volatile boolean stopped;
    private boolean started;
    private Thread thread;

    ControllerThread(String what, String threadName) {
        this.what = what;
        this.threadName = threadName;
    }

    /** Starts {@code body} on the thread; a second start is a no-op, a start after stop fails. */
    void start(Runnable body) {
        synchronized (lock) {
            if (stopped) {
                throw new IllegalStateException(what + " was stopped");
            }
            if (started) {
                return;
            }
            started = true;
            running = true;
            thread = Thread.ofPlatform().daemon().name(threadName).start(body);
        }
    }

    /** The thread's loop condition. */
    boolean isRunning() {
        return running;
    }

    boolean isStopped() {
        return stopped;
    }

    /** Runs {@code action} unless stopped, atomically with respect to {@link #markStopped()}. */
    void unlessStopped(Runnable action) {
        synchronized (lock) {
            if (stopped) {
                throw new IllegalStateException(what + " is stopped");
            }
            action.run();
        }
    }

    /** @return false when it was stopped already (the caller then has nothing to do) */
    boolean markStopped() {
        synchronized (lock) {
            if (stopped) {
                return false;
            }
            stopped = true;
            running = false;
            return true;
        }
    }

    /**
     * Marks it stopped, runs {@code wake} (so that the thread sees it), and waits for the thread to end;
     * when it never started, runs {@code cleanupHere} on the caller's thread instead.
     *
     * @return false when it was stopped already (nothing was run)
     */
    boolean stopAndJoin(Runnable wake, Runnable cleanupHere) {
        if (!markStopped()) {
            return false;
        }
        Thread t = thread();
        wake.run();
        if (t != null) {
            Threads.joinUninterruptibly(t);
        } else {
            cleanupHere.run();
        }
        return true;
    }

    /** The started thread, or null when it never started. */
    Thread thread() {
        synchronized (lock) {
            return thread;
        }
    }
}
