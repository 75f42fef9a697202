package io.fdpblock.cli;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.tools.util.Meminfo;
import io.fdpblock.tools.util.Sizes;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;

/**
 * The rules every command applies to what a user types: an option out of range is refused before
 * anything is created (exit 2), naming the option, the value, the range and what to do; a path is
 * checked for what the command will do with it; an exception becomes one line that says what failed.
 */
final class Cli {
    private Cli() {}

    /** A bad argument: picocli prints the message and the usage, and exits with 2. */
    static ParameterException bad(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    static int intIn(CommandSpec spec, String option, int value, int min, int max, String what) {
        if (value < min || value > max) {
            throw bad(spec, option + " " + value + " is out of range: " + what + " must be " + range(min, max));
        }
        return value;
    }

    static long longIn(CommandSpec spec, String option, long value, long min, long max, String what) {
        if (value < min || value > max) {
            throw bad(spec, option + " " + value + " is out of range: " + what + " must be " + range(min, max));
        }
        return value;
    }

    private static String range(long min, long max) {
        if (max == Integer.MAX_VALUE || max == Long.MAX_VALUE) {
            return "at least " + min;
        }
        return "in " + min + ".." + max;
    }

    /** A store's block_align ({@code --block-align}): a power of two in 512..1048576. */
    static int blockAlign(CommandSpec spec, int value) {
        if (value < 512 || value > (1 << 20) || Integer.bitCount(value) != 1) {
            throw bad(spec, "--block-align " + value + " is out of range: it must be a power of two in 512..1048576"
                    + " (the store's block_align, usually 4096)");
        }
        return value;
    }

    /** A reclaim unit size in bytes: a positive multiple of 4096. */
    static long reclaimUnitSize(CommandSpec spec, String option, long value) {
        if (value <= 0 || value % 4096 != 0) {
            throw bad(spec, option + " " + value + " is not a reclaim unit size: give a positive multiple of 4096"
                    + " bytes, e.g. 8M");
        }
        return value;
    }

    /** The metadata format {@code --meta-format} names. */
    static RawBlockCoreConfig.MetaFormat metaFormat(CommandSpec spec, String name) {
        try {
            return RawBlockCoreConfig.MetaFormat.parse(name);
        } catch (IllegalArgumentException e) {
            throw bad(spec, "--meta-format " + name + " is not a format: use fdpblock_v2 or lmcache_v1");
        }
    }

    /** The engine {@code --engine} names; whether the command can use it is the command's to check. */
    static IoEngine engine(CommandSpec spec, String name) {
        try {
            return IoEngine.parse(name);
        } catch (IllegalArgumentException e) {
            throw bad(spec, "--engine " + name + " is not an engine: use io_uring, posix or uring_cmd");
        }
    }

    /** A share: a finite number in 0..1 (NaN and infinities are refused). */
    static double fraction(CommandSpec spec, String option, double value, String what) {
        if (!(value >= 0 && value <= 1)) {
            throw bad(spec, option + " " + value + " is out of range: " + what + " must be a number in 0..1");
        }
        return value;
    }

    /** A size in bytes that is a multiple of {@code multiple} and in {@code min..max}. */
    static long size(CommandSpec spec, String option, long value, long min, long max, long multiple) {
        if (value < min || value > max || value % multiple != 0) {
            throw bad(spec, option + " " + value + " is not a usable size: it must be a multiple of "
                    + Sizes.human(multiple) + " in " + Sizes.human(min) + ".." + Sizes.human(max) + " (bytes, e.g. "
                    + Math.max(min, 1L << 30) / multiple * multiple + ")");
        }
        return value;
    }

    /**
     * Refuses {@code bytes} of data in {@code dir} when its file system has less free space: a sparse
     * device file larger than the free space fills the file system part way through, and the store's
     * checkpoints then fail.
     */
    static void fitsFreeSpace(CommandSpec spec, String option, long bytes, Path dir) throws IOException {
        long free = Files.getFileStore(dir).getUsableSpace();
        if (bytes > free) {
            throw bad(spec, option + " " + bytes + " (" + Sizes.human(bytes) + ") is more than the " + Sizes.human(free)
                    + " free on the file system of " + dir + ": give a smaller " + option + " or free space there");
        }
    }

    /** Refuses an allocation of {@code bytes} of memory that this machine does not have available. */
    static void fitsMemory(CommandSpec spec, String what, long bytes, String options) {
        long available = Meminfo.bytes("MemAvailable"); // -1, unknown: not checked
        if (available > 0 && bytes > available) {
            throw bad(spec, what + " needs " + Sizes.human(bytes) + " of memory; this machine has " + Sizes.human(available)
                    + " available (MemAvailable): make " + options + " smaller");
        }
    }

    /**
     * Checks that {@code file} can be used or created as a device file: not a directory, its directory
     * exists, and (when the file is new) may be written.
     */
    static void creatable(CommandSpec spec, String option, Path file) {
        if (Files.isDirectory(file)) {
            throw bad(spec, option + " " + file + " is a directory: name a file (created when missing) or a device");
        }
        Path parent = file.toAbsolutePath().getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            throw bad(spec, option + " " + file + ": its directory " + parent + " does not exist; create it first or"
                    + " name a file in an existing directory");
        }
        if (!Files.exists(file) && !Files.isWritable(parent)) {
            throw bad(spec, option + " " + file + " cannot be created: its directory " + parent + " is not writable by"
                    + " this user; name a file in a directory you may write");
        }
    }

    /**
     * What {@code path} is when it is neither a regular file nor a block or character device (a FIFO, a
     * socket): a store or trace is read at offsets, and opening or reading a FIFO waits for a writer
     * forever. Null for a file or device, and for a path that does not exist (checked elsewhere).
     */
    static String notFileOrDevice(Path path) {
        int mode;
        try {
            mode = (Integer) Files.getAttribute(path, "unix:mode");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return null;
        }
        return switch (mode & 0170000) {
            case 0010000 -> "a FIFO (named pipe)";
            case 0140000 -> "a socket";
            case 0040000 -> "a directory";
            default -> null;
        };
    }

    /** Checks that {@code dir} is an existing, writable directory. */
    static void writableDirectory(CommandSpec spec, String option, Path dir) {
        if (!Files.exists(dir)) {
            throw bad(spec, option + " " + dir + " does not exist; create it first or name an existing directory");
        }
        if (!Files.isDirectory(dir)) {
            throw bad(spec, option + " " + dir + " is not a directory; name a directory");
        }
        if (!Files.isWritable(dir)) {
            throw bad(spec, option + " " + dir + " is not writable by this user; name a directory you may write");
        }
    }

    /**
     * Creates a sparse device file of {@code size} bytes; a file system that cannot hold one file that
     * large (EFBIG) is an error naming the option.
     */
    static Path createDeviceFile(CommandSpec spec, String option, Path file, long size) throws IOException {
        try {
            return BlockDevices.createFile(file, size);
        } catch (IOException e) {
            if ("File too large".equals(e.getMessage())) {
                throw bad(spec, option + " " + size + " (" + Sizes.human(size) + ") is larger than one file may be on the"
                        + " file system of " + file.toAbsolutePath().getParent() + " (EFBIG): give a smaller " + option);
            }
            throw e;
        }
    }

    /** One line for an exception a command let through: what failed, on which path, and why. */
    static String describe(Throwable e) {
        if (e instanceof NoSuchFileException f) {
            return path(f) + ": no such file or directory" + other(f);
        }
        if (e instanceof AccessDeniedException f) {
            return path(f) + ": permission denied" + other(f) + "; check its permissions or run as a user that may"
                    + " use it";
        }
        if (e instanceof NotDirectoryException f) {
            return path(f) + ": not a directory";
        }
        if (e instanceof FileAlreadyExistsException f) {
            return path(f) + ": already exists";
        }
        if (e instanceof FileSystemException f) {
            return path(f) + ": " + (f.getReason() == null ? e.getClass().getSimpleName() : f.getReason()) + other(f);
        }
        if (e instanceof FileNotFoundException) {
            return e.getMessage(); // RandomAccessFile: "path (reason)"
        }
        if (e instanceof OutOfMemoryError) {
            return "out of memory: " + e.getMessage() + "; give the command smaller sizes (or the JVM more memory"
                    + " with FDPBLOCK_JAVA_OPTS=-Xmx...)";
        }
        String m = e.getMessage();
        if (m == null || m.isBlank()) {
            return e.getClass().getSimpleName();
        }
        return m;
    }

    private static String path(FileSystemException f) {
        return f.getFile() == null ? "(no path)" : f.getFile();
    }

    private static String other(FileSystemException f) {
        return f.getOtherFile() == null ? "" : " (and " + f.getOtherFile() + ")";
    }
}
