package io.fdpblock.cli;

import io.fdpblock.device.BlockDevices;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A command's temp dir on a file system with O_DIRECT, made when first asked for and removed with
 * everything in it on {@link #close()} or, if the JVM is stopped first (SIGINT, SIGTERM), by a
 * shutdown hook: an interrupted command leaves no temp device behind.
 */
final class Scratch implements AutoCloseable {
    private final String prefix;
    private final PrintStream err;
    /** When set, a signal's cleanup waits for the job to close up first (its store may be checkpointing). */
    private final StopOnSignal job;
    /** Where the temp dir is made; null = a temp dir with O_DIRECT ({@link BlockDevices#directIoTempDir}). */
    private final Path parent;
    private Path dir;
    private Thread hook;
    private boolean closed;

    Scratch(String prefix, PrintStream err) {
        this(prefix, err, null);
    }

    Scratch(String prefix, PrintStream err, StopOnSignal job) {
        this(prefix, err, job, null);
    }

    /** @param parent the directory to make the temp dir in (null: one with O_DIRECT, see {@link #dir()}) */
    Scratch(String prefix, PrintStream err, StopOnSignal job, Path parent) {
        this.prefix = prefix;
        this.err = err;
        this.job = job;
        this.parent = parent;
    }

    /** The temp dir, made on the first call. */
    synchronized Path dir() throws IOException {
        if (closed) {
            throw new IllegalStateException("temp dir already removed");
        }
        if (dir == null) {
            dir = parent != null ? Files.createTempDirectory(parent, prefix) : BlockDevices.directIoTempDir(prefix);
            Path made = dir;
            hook = new Thread(() -> {
                if (job != null) {
                    job.awaitFinished();
                }
                if (removeAtExit()) {
                    err.println("fdpblock: stopped; removed the temp dir " + made);
                }
            }, "fdpblock-scratch-cleanup");
            try {
                Runtime.getRuntime().addShutdownHook(hook);
            } catch (IllegalStateException e) { // a signal came first: nothing may start now
                closed = true;
                delete(dir);
                throw new IllegalStateException("stopped by a signal before the temp dir was in use; it is removed");
            }
        }
        return dir;
    }

    /** Whether {@link #dir()} was made (and not yet removed). */
    synchronized boolean made() {
        return dir != null && !closed;
    }

    private synchronized boolean removeAtExit() {
        if (closed || dir == null) {
            return false;
        }
        closed = true;
        delete(dir);
        return true;
    }

    /** Removes the temp dir and everything in it; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (dir == null) {
            return;
        }
        delete(dir);
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook finds it closed
        }
    }

    private static void delete(Path dir) {
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (NoSuchFileException e) {
            // already gone
        } catch (IOException | UncheckedIOException e) {
            System.err.println("fdpblock: could not remove the temp dir " + dir + ": " + e.getMessage()
                    + "; remove it by hand");
        }
    }
}
