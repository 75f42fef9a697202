package io.fdpblock.controller;

import io.fdpblock.linux.EventFd;

import java.io.UncheckedIOException;

/** Eventfd helpers for descriptors the controllers do not own (the adapters'). */
final class Fds {
    private Fds() {}

    /** Clears the counter of an adapter's eventfd that poll(2) reported readable (never blocks, allocates nothing). */
    static void drain(int fd) {
        try {
            EventFd.drainFd(fd);
        } catch (UncheckedIOException e) {
            System.getLogger("io.fdpblock.controller").log(System.Logger.Level.DEBUG,
                    "eventfd " + fd + " not drained: " + e.getMessage());
        }
    }
}
