package io.fdpblock.controller;

import io.fdpblock.linux.EventFd;
import io.fdpblock.linux.Poller;

import java.io.UncheckedIOException;
import java.util.function.IntFunction;

/** Eventfd helpers for descriptors the controllers do not own (the adapters'). */
final class Fds {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.controller");

    private Fds() {}

    /** Clears the counter of an adapter's eventfd that poll(2) reported readable (never blocks, allocates nothing). */
    static void drain(int fd) {
        try {
            EventFd.drainFd(fd);
        } catch (UncheckedIOException e) {
            LOG.log(System.Logger.Level.DEBUG, "eventfd " + fd + " not drained: " + e.getMessage());
        }
    }

    /**
     * After a poll(2): drains each adapter eventfd at poller indices {@code from..size-1} that is
     * readable (drain first, then pop results: a result recorded later signals again), and stops
     * polling each one that reports an error (closed under the controller), saying whose it was.
     *
     * @param whose names the adapter and fd kind of a poller index, for the log
     * @return true when any of them was readable or failed: results may be waiting
     */
    static boolean drainOrDisable(Poller poller, int from, IntFunction<String> whose) {
        boolean signalled = false;
        for (int i = from; i < poller.size(); i++) {
            int fd = poller.fd(i);
            if (fd < 0) {
                continue;
            }
            if (poller.isReadable(i)) {
                drain(fd);
                signalled = true;
            } else if (poller.hasError(i)) {
                LOG.log(System.Logger.Level.WARNING, "eventfd " + fd + " (" + whose.apply(i)
                        + ") failed (closed?); no longer polled");
                poller.set(i, -1);
                signalled = true;
            }
        }
        return signalled;
    }
}
