package io.fdpblock.cli;

import io.fdpblock.device.BlockDevices;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A command's temp dir on a file system with O_DIRECT, made when first asked for and removed with
 * everything in it on {@link #close()} or, if the JVM is stopped first (SIGINT, SIGTERM), by a
 * shutdown hook: an interrupted command leaves no temp device behind.
 */
final class Scratch implements AutoCloseable {
    private final PrintStream err;
    /** When set, a signal's cleanup waits for the job to close up first (its store may be checkpointing). */
    private final StopOnSignal job;
    private final Maker maker;
    private Path dir;
    private final List<Path> files = new ArrayList<>();
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
        this(err, job, () -> parent != null ? Files.createTempDirectory(parent, prefix)
                : BlockDevices.directIoTempDir(prefix));
    }

    /** How the temp dir is made (the tests slow it down to send a signal meanwhile). */
    interface Maker {
        Path make() throws IOException;
    }

    Scratch(PrintStream err, StopOnSignal job, Maker maker) {
        this.err = err;
        this.job = job;
        this.maker = maker;
    }

    /** The temp dir, made on the first call. */
    synchronized Path dir() throws IOException {
        if (closed) {
            throw new IllegalStateException("temp dir already removed");
        }
        if (dir == null) {
            // The hook first, the dir second: a signal between the two would otherwise leave the dir behind.
            // The hook takes this lock, so it removes a dir being made only once it exists.
            registerHook();
            dir = maker.make();
        }
        return dir;
    }

    /**
     * A file of the command's own outside the temp dir (e.g. in a directory the user named), removed with
     * the temp dir, by {@link #close()} or at a signal. Call it before the file is created.
     */
    synchronized Path track(Path file) {
        if (closed) {
            throw new IllegalStateException("temp files already removed");
        }
        registerHook();
        files.add(file);
        return file;
    }

    private void registerHook() {
        if (hook != null) {
            return;
        }
        Thread h = new Thread(() -> {
            if (job != null) {
                job.awaitFinished();
            }
            String removed = removeAtExit();
            if (removed != null) {
                err.println("fdpblock: stopped; removed " + removed);
            }
        }, "fdpblock-scratch-cleanup");
        try {
            Runtime.getRuntime().addShutdownHook(h);
        } catch (IllegalStateException e) { // a signal came first: nothing may start now
            closed = true;
            throw new IllegalStateException("stopped by a signal before the command made its temp files; nothing was"
                    + " made");
        }
        hook = h;
    }

    /** Whether {@link #dir()} was made (and not yet removed). */
    synchronized boolean made() {
        return dir != null && !closed;
    }

    /** @return what was removed, for the message; null when nothing was left */
    private synchronized String removeAtExit() {
        if (closed) {
            return null;
        }
        closed = true;
        List<String> removed = new ArrayList<>();
        for (Path f : files) {
            if (deleteFile(f)) {
                removed.add("the temp file " + f);
            }
        }
        if (dir != null) {
            delete(dir);
            removed.add("the temp dir " + dir);
        }
        return removed.isEmpty() ? null : String.join(" and ", removed);
    }

    /** Removes the temp dir, everything in it and the tracked files; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Path f : files) {
            deleteFile(f);
        }
        if (dir != null) {
            delete(dir);
        }
        if (hook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is shutting down: the hook finds it closed
            }
        }
    }

    private static boolean deleteFile(Path f) {
        try {
            return Files.deleteIfExists(f);
        } catch (IOException e) {
            System.err.println("fdpblock: could not remove the temp file " + f + ": " + e.getMessage()
                    + "; remove it by hand");
            return false;
        }
    }

    private static void delete(Path dir) {
        // A file the command creates while this walks makes the last rmdir fail: walk again (the command's
        // later creates there fail once the dir is gone).
        for (int attempt = 1; ; attempt++) {
            try (Stream<Path> all = Files.walk(dir)) {
                all.sorted(Comparator.reverseOrder()).forEach(p -> {
                    try {
                        Files.deleteIfExists(p);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
                return;
            } catch (NoSuchFileException e) {
                return; // already gone
            } catch (UncheckedIOException e) {
                if (!(e.getCause() instanceof DirectoryNotEmptyException) || attempt == 10) {
                    cannotRemove(dir, e.getCause());
                    return;
                }
            } catch (IOException e) {
                cannotRemove(dir, e);
                return;
            }
        }
    }

    private static void cannotRemove(Path dir, IOException e) {
        System.err.println("fdpblock: could not remove the temp dir " + dir + ": " + e.getMessage()
                + "; remove it by hand");
    }
}
