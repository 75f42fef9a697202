package io.fdpblock.device;

import io.fdpblock.linux.Errno;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.uring.Uring;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Opens {@link BlockDevice}s. */
public final class BlockDevices {
    private BlockDevices() {}

    /**
     * Opens an existing file or block device read-write with the given engine.
     *
     * @throws IOException naming the path and the cause (missing, permissions, no O_DIRECT on this
     *         file system, io_uring unavailable, ...)
     */
    public static BlockDevice open(Path path, DeviceOptions options) throws IOException {
        return switch (options.engine()) {
            case MEMORY -> throw new IllegalArgumentException("the memory engine has no path: use BlockDevices.memory");
            case URING_CMD -> UringCmdBlockDevice.open(path.toString(), options);
            case POSIX -> {
                NativeFile f = openFile(path, options, options.direct());
                try {
                    yield PosixBlockDevice.open(f, options);
                } catch (IOException | RuntimeException e) {
                    f.close();
                    throw e;
                }
            }
            case IO_URING -> {
                Uring.ensureAvailable();
                // Always O_DIRECT: no page cache between the ring and the device, and on a block device
                // with write streams a buffered write would lose its stream (placement) silently.
                NativeFile f = openFile(path, options, true);
                try {
                    yield f.kind() == NativeFile.Kind.BLOCK_DEVICE ? WriteStreamBlockDevice.open(f, options)
                            : IoUringBlockDevice.open(f, options);
                } catch (IOException | RuntimeException e) {
                    f.close();
                    throw e;
                }
            }
        };
    }

    private static NativeFile openFile(Path path, DeviceOptions options, boolean direct) throws IOException {
        return options.exclusive() ? NativeFile.openExclusive(path, direct) : NativeFile.open(path, true, false, direct);
    }

    /** Opens a file or device read-only through pread (for inspection: nothing can be written). */
    public static BlockDevice openReadOnly(Path path) throws IOException {
        NativeFile f = NativeFile.open(path, false, false, false);
        try {
            return PosixBlockDevice.open(f, DeviceOptions.of(IoEngine.POSIX).withBuffers(1 << 20, 0));
        } catch (IOException | RuntimeException e) {
            f.close();
            throw e;
        }
    }

    /**
     * Creates a regular file of {@code sizeBytes} to serve as a device, its blocks reserved at once
     * ({@code fallocate}): a device that reports space it does not have would fail writes later, after
     * they were accepted. An existing file is left as it is.
     *
     * @return the path
     * @throws IOException naming the path, the size and what to do when the file system lacks the space
     *         (the partly created file is removed)
     */
    public static Path createFile(Path path, long sizeBytes) throws IOException {
        checkDeviceFileSize(sizeBytes);
        if (Files.isDirectory(path)) {
            throw new IOException(path + " is a directory; name a file to create");
        }
        if (Files.exists(path)) {
            return path;
        }
        reserveOrRemove(path, sizeBytes, () -> NativeFile.open(path, true, true, false));
        return path;
    }

    /**
     * Like {@link #createFile}, but says whether this call made the file: one that exists already, or
     * that another process creates at the same moment, is left as it is.
     *
     * @return true when this call created the file (and reserved its blocks)
     */
    public static boolean createFileIfMissing(Path path, long sizeBytes) throws IOException {
        checkDeviceFileSize(sizeBytes);
        NativeFile f = NativeFile.createNew(path);
        if (f == null) {
            return false;
        }
        reserveOrRemove(path, sizeBytes, () -> f);
        return true;
    }

    private static void checkDeviceFileSize(long sizeBytes) {
        if (sizeBytes <= 0 || sizeBytes % 4096 != 0) {
            throw new IllegalArgumentException("device file size " + sizeBytes + " must be a positive multiple of 4096");
        }
    }

    /** Opens the new file, reserves its blocks and closes it; should any of that fail, the file is removed. */
    private static void reserveOrRemove(Path path, long sizeBytes, FileOpener opener) throws IOException {
        boolean done = false;
        try (NativeFile f = opener.open()) {
            f.allocate(sizeBytes);
            done = true;
        } finally {
            if (!done) {
                Files.deleteIfExists(path);
            }
        }
    }

    private interface FileOpener {
        NativeFile open() throws IOException;
    }

    /**
     * A new temp dir whose file system supports O_DIRECT: under java.io.tmpdir, unless that is tmpfs
     * (open with O_DIRECT fails with EINVAL there), then under /var/tmp.
     */
    public static Path directIoTempDir(String prefix) throws IOException {
        Path dir = Files.createTempDirectory(prefix);
        Path probe = dir.resolve("probe");
        try {
            Files.createFile(probe);
            NativeFile.open(probe, true, false, true).close();
            return dir;
        } catch (Errno.NativeIOException e) {
            if (e.errno() != Errno.EINVAL) {
                throw e;
            }
            Files.deleteIfExists(probe);
            Files.deleteIfExists(dir);
            return Files.createTempDirectory(Path.of("/var/tmp"), prefix);
        } finally {
            Files.deleteIfExists(probe);
        }
    }

    /** A device in memory (for tests of the layers above), with O_DIRECT-like alignment rules. */
    public static BlockDevice memory(long sizeBytes, int logicalBlockSize) {
        return memory(sizeBytes, logicalBlockSize, DeviceOptions.of(IoEngine.MEMORY));
    }

    public static BlockDevice memory(long sizeBytes, int logicalBlockSize, DeviceOptions options) {
        if (logicalBlockSize < 512 || Integer.bitCount(logicalBlockSize) != 1) {
            throw new IllegalArgumentException("logical block size " + logicalBlockSize
                    + " must be a power of two >= 512");
        }
        return new MemoryBlockDevice("memory:" + sizeBytes, sizeBytes, logicalBlockSize, options);
    }
}
