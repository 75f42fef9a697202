package io.fdpblock.linux;

import io.fdpblock.ffi.FdpNative;
import io.fdpblock.ffi.stat;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * A file descriptor opened with {@code open(2)}: a regular file, a block device or a character device
 * (e.g. an NVMe generic namespace {@code /dev/ngXnY}). Thread-safe: positional reads and writes may be
 * issued from many threads at once.
 */
public final class NativeFile implements AutoCloseable {
    static {
        NativeLibrary.ensureLoaded(); // fails with the reason, e.g. the --enable-native-access to add
    }

    private static final int O_RDONLY = FdpNative.O_RDONLY();
    private static final int O_RDWR = FdpNative.O_RDWR();
    private static final int O_CREAT = FdpNative.O_CREAT();
    private static final int O_DIRECT = FdpNative.O_DIRECT();
    private static final int O_CLOEXEC = FdpNative.O_CLOEXEC();
    private static final int O_EXCL = FdpNative.O_EXCL();
    private static final int S_IFMT = FdpNative.S_IFMT();

    /** What kind of file the descriptor refers to (from {@code fstat}'s {@code st_mode}). */
    public enum Kind { REGULAR, BLOCK_DEVICE, CHAR_DEVICE, OTHER }

    private final Path path;
    private final int fd;
    private final boolean direct;
    private final boolean writable;
    private final Kind kind;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean locked;
    /** How long {@link #lockExclusive()} waits for a lock still held on behalf of a process that has died. */
    private static final long DEAD_HOLDER_GRACE_NANOS = 30_000_000_000L;
    /** How long {@link #openExclusive} waits for a block device's exclusive claim that is not a lasting one. */
    private static final long TRANSIENT_CLAIM_GRACE_NANOS = 5_000_000_000L;

    private NativeFile(Path path, int fd, boolean direct, boolean writable, Kind kind) {
        this.path = path;
        this.fd = fd;
        this.direct = direct;
        this.writable = writable;
        this.kind = kind;
    }

    /**
     * @param write open read-write (else read-only)
     * @param create create a regular file when missing (mode 0644)
     * @param direct {@code O_DIRECT}: no page cache; buffers, offsets and lengths must then be aligned
     */
    public static NativeFile open(Path path, boolean write, boolean create, boolean direct) throws IOException {
        return open(path, write, create, direct, false);
    }

    /**
     * Creates a new regular file (mode 0644) and opens it read-write: {@code O_CREAT | O_EXCL}, so that a
     * caller knows the file is its own (e.g. to remove it again on a failure).
     *
     * @return null when the path exists already (nothing was created)
     */
    public static NativeFile createNew(Path path) throws IOException {
        try {
            return open(path, true, true, false, true);
        } catch (Errno.NativeIOException e) {
            if (e.errno() == 17 /* EEXIST */) {
                return null;
            }
            throw e;
        }
    }

    /**
     * Opens a device (a file, a block device, an NVMe character device) for one owner: read-write, a
     * block device with {@code O_EXCL} (the kernel refuses it while mounted or held exclusively by
     * another program), then an exclusive advisory {@code flock} on the descriptor, which another
     * opener of this method (in this process or another) cannot take while this one is open.
     *
     * @throws DeviceInUseException naming the path when another owner holds it
     */
    public static NativeFile openExclusive(Path path, boolean direct) throws IOException {
        boolean blockDevice = isBlockDevice(path);
        NativeFile f;
        long deadline = System.nanoTime() + TRANSIENT_CLAIM_GRACE_NANOS;
        while (true) {
            try {
                f = open(path, true, false, direct, blockDevice);
                break;
            } catch (Errno.NativeIOException e) {
                if (!blockDevice || e.errno() != Errno.EBUSY) {
                    throw e;
                }
                // Lasting claims fail at once, naming the claim. Anything else is taken as the kernel's brief
                // claim of udev's partition rescan, which follows every close of a disk opened for writing
                // (the reopen of a store just closed meets it): wait for it, within a bound.
                String lasting = lastingClaim(path);
                if (lasting != null || System.nanoTime() >= deadline) {
                    throw new DeviceInUseException(path, "the kernel refuses an exclusive open (O_EXCL): "
                            + (lasting != null ? lasting : "it is mounted, part of a RAID or LVM volume, or held"
                                    + " exclusively by another program (still after "
                                    + TRANSIENT_CLAIM_GRACE_NANOS / 1_000_000_000L + " s)"));
                }
                LockSupport.parkNanos(20_000_000L);
            }
        }
        try {
            f.lockExclusive();
            return f;
        } catch (IOException | RuntimeException e) {
            f.close();
            throw e;
        }
    }

    /**
     * Why a block device the kernel will not open exclusively stays claimed: another store's flock on
     * it, a mount, or a holder such as a RAID or LVM volume; null when none of these is seen.
     */
    private static String lastingClaim(Path path) {
        long rdev;
        long holder;
        try {
            rdev = ((Number) Files.getAttribute(path, "unix:rdev")).longValue();
            holder = flockHolder(((Number) Files.getAttribute(path, "unix:dev")).longValue(),
                    ((Number) Files.getAttribute(path, "unix:ino")).longValue());
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return null;
        }
        if (holder == ProcessHandle.current().pid() || isLiveOther(holder)) {
            return "another store has it open (an exclusive flock is held on it, " + describeHolder(holder) + ")";
        }
        String majMin = major(rdev) + ":" + minor(rdev);
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                // "36 35 259:1 / /mnt rw,relatime ...": the third field is the mounted device
                if (f.length > 4 && f[2].equals(majMin)) {
                    return "it is mounted at " + f[4] + "; unmount it first";
                }
            }
        } catch (IOException | RuntimeException e) {
            // no mountinfo: not known to be mounted
        }
        try (var holders = Files.list(Path.of("/sys/dev/block", majMin, "holders"))) {
            List<String> names = holders.map(p -> p.getFileName().toString()).sorted().toList();
            if (!names.isEmpty()) {
                return "it is held by " + String.join(", ", names) + " (a RAID, LVM or device-mapper volume);"
                        + " stop that volume first";
            }
        } catch (IOException | RuntimeException e) {
            // no sysfs entry: no holders known
        }
        return null;
    }

    private static long major(long dev) {
        return ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
    }

    private static long minor(long dev) {
        return (dev & 0xff) | ((dev >>> 12) & ~0xffL);
    }

    private static boolean isBlockDevice(Path path) {
        return kindOf(path) == Kind.BLOCK_DEVICE; // when it cannot be told, open() names what is wrong with the path
    }

    /**
     * What {@code path} is, from its {@code stat} (symbolic links followed), without opening it: for checks
     * made before anything is opened. Null when it does not exist or its file system cannot tell.
     */
    public static Kind kindOf(Path path) {
        try {
            return Files.getAttribute(path, "unix:mode") instanceof Integer mode ? kindOfMode(mode) : null;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return null;
        }
    }

    private static Kind kindOfMode(int mode) {
        int type = mode & S_IFMT;
        return type == FdpNative.S_IFREG() ? Kind.REGULAR
                : type == FdpNative.S_IFBLK() ? Kind.BLOCK_DEVICE
                : type == FdpNative.S_IFCHR() ? Kind.CHAR_DEVICE : Kind.OTHER;
    }

    /**
     * {@code flock(fd, LOCK_EX | LOCK_NB)}: an advisory lock held by this open file description until
     * it is closed.
     *
     * @throws DeviceInUseException when another descriptor holds it
     */
    public void lockExclusive() throws IOException {
        int r = Syscalls.flock(fd, FdpNative.LOCK_EX() | FdpNative.LOCK_NB());
        if (r == -Errno.EWOULDBLOCK) {
            // Held: by a live process (refused at once, naming it), or still by a store that died a moment
            // ago, whose io_uring the kernel tears down asynchronously: the lock goes with the ring's last
            // file reference, so wait for that.
            long holder = lockHolder();
            long deadline = System.nanoTime() + DEAD_HOLDER_GRACE_NANOS;
            while (r == -Errno.EWOULDBLOCK && !isLiveOther(holder) && holder != ProcessHandle.current().pid()
                    && System.nanoTime() < deadline) {
                // /proc/locks names the process that took the lock; a child that inherited the descriptor keeps
                // the lock after that process exits: a live process with the file open is a lasting holder
                List<Long> keepers = openersOf();
                if (!keepers.isEmpty()) {
                    throw new DeviceInUseException(path, "an exclusive flock is held on it, taken by "
                            + (holder > 0 ? "process " + holder : "a process") + ", which has exited, and kept by "
                            + describeOpeners(keepers) + ", which still " + (keepers.size() == 1 ? "has" : "have")
                            + " its descriptor open (inherited from it); stop " + (keepers.size() == 1 ? "that process"
                            : "those processes"));
                }
                LockSupport.parkNanos(20_000_000L);
                r = Syscalls.flock(fd, FdpNative.LOCK_EX() | FdpNative.LOCK_NB());
                holder = r == -Errno.EWOULDBLOCK ? lockHolder() : holder;
            }
            if (r == -Errno.EWOULDBLOCK) {
                throw new DeviceInUseException(path, isLiveOther(holder) || holder == ProcessHandle.current().pid()
                        ? "another store has it open (an exclusive flock is held on it, " + describeHolder(holder) + ")"
                        : "an exclusive flock is still held on it " + DEAD_HOLDER_GRACE_NANOS / 1_000_000_000L + " s"
                                + " after " + (holder > 0 ? "process " + holder : "the process") + " that took it"
                                + " exited, and no live process shows it open (the kernel may still be tearing down"
                                + " that store's io_uring); try again");
            }
        }
        if (r < 0) {
            throw Errno.exception("flock(" + path + ", LOCK_EX|LOCK_NB)", -r);
        }
        locked = true;
    }

    private static boolean isLiveOther(long pid) {
        return pid > 0 && pid != ProcessHandle.current().pid()
                && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    private static String describeHolder(long pid) {
        if (pid == ProcessHandle.current().pid()) {
            return "by this process";
        }
        if (pid <= 0) {
            return "by another process";
        }
        String cmd = ProcessHandle.of(pid).flatMap(h -> h.info().command()).orElse("?");
        return "by process " + pid + " (" + cmd + ")";
    }

    /**
     * The live processes other than this one with a descriptor open on this file (/proc/PID/fd; processes
     * this user may not inspect are not seen).
     */
    private List<Long> openersOf() {
        long dev;
        long ino;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = arena.allocate(stat.layout());
            if (Syscalls.fstat(fd, st) < 0) {
                return List.of();
            }
            dev = stat.st_dev(st);
            ino = stat.st_ino(st);
        }
        long self = ProcessHandle.current().pid();
        List<Long> out = new ArrayList<>();
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path proc : (Iterable<Path>) procs::iterator) {
                String name = proc.getFileName().toString();
                if (name.isEmpty() || !name.chars().allMatch(Character::isDigit) || Long.parseLong(name) == self) {
                    continue;
                }
                try (var fds = Files.list(proc.resolve("fd"))) {
                    for (Path link : (Iterable<Path>) fds::iterator) {
                        try {
                            if (((Number) Files.getAttribute(link, "unix:ino")).longValue() == ino
                                    && ((Number) Files.getAttribute(link, "unix:dev")).longValue() == dev) {
                                out.add(Long.parseLong(name));
                                break;
                            }
                        } catch (IOException | RuntimeException e) {
                            // closed meanwhile, or not a file: not this one
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // exited meanwhile, or another user's: not seen
                }
            }
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
        return out;
    }

    private static String describeOpeners(List<Long> pids) {
        List<String> each = new ArrayList<>();
        for (long pid : pids.subList(0, Math.min(3, pids.size()))) {
            each.add(describeHolder(pid).substring("by ".length()));
        }
        return String.join(", ", each) + (pids.size() > 3 ? " and " + (pids.size() - 3) + " more" : "");
    }

    /** The pid /proc/locks names for the flock on this file, or -1 when it cannot tell. */
    private long lockHolder() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = arena.allocate(stat.layout());
            if (Syscalls.fstat(fd, st) < 0) {
                return -1;
            }
            return flockHolder(stat.st_dev(st), stat.st_ino(st));
        }
    }

    /** The pid /proc/locks names for a flock on the file of this device and inode, or -1. */
    private static long flockHolder(long dev, long ino) {
        String id = String.format("%02x:%02x:%d", major(dev), minor(dev), ino);
        try {
            for (String line : Files.readAllLines(Path.of("/proc/locks"))) {
                String[] f = line.trim().split("\\s+");
                // "1: FLOCK ADVISORY WRITE <pid> <maj:min:inode> <start> <end>"
                if (f.length >= 6 && f[1].equals("FLOCK") && f[5].equals(id)) {
                    return Long.parseLong(f[4]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc/locks: treat the holder as unknown
        }
        return -1;
    }

    /**
     * {@code fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length)}: frees the blocks of
     * a regular file in that range (it then reads as zeros), its size unchanged.
     */
    public void punchHole(long offset, long length) throws IOException {
        int mode = 0x02 | 0x01; // linux/falloc.h: FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE (uapi, fixed)
        int r = Syscalls.fallocate(fd, mode, offset, length);
        if (r < 0) {
            throw Errno.exception("fallocate(" + path + ", PUNCH_HOLE|KEEP_SIZE, " + offset + ", " + length + ")", -r,
                    -r == Errno.EOPNOTSUPP ? "this file system cannot punch holes" : null);
        }
    }

    /**
     * {@code fallocate(fd, 0, 0, length)}: reserves the blocks of a regular file up to {@code length}
     * (extending it), so that later writes cannot fail for lack of space.
     */
    public void allocate(long length) throws IOException {
        int r = Syscalls.fallocate(fd, 0, 0, length);
        if (r < 0) {
            String hint = -r == Errno.ENOSPC ? "the file system has less than " + length + " bytes free: free space,"
                    + " or use a smaller capacity_bytes"
                    : -r == Errno.EOPNOTSUPP ? "this file system cannot reserve space (fallocate)" : null;
            throw Errno.exception("fallocate(" + path + ", 0, 0, " + length + ")", -r, hint);
        }
    }

    /** Package-private for the device tests, which make an exclusive claim the way udev's rescan does. */
    static NativeFile open(Path path, boolean write, boolean create, boolean direct, boolean exclusive)
            throws IOException {
        int flags = (write ? O_RDWR : O_RDONLY) | O_CLOEXEC | (create ? O_CREAT : 0) | (direct ? O_DIRECT : 0)
                | (exclusive ? O_EXCL : 0);
        String call = "open(" + path + ", " + (write ? "O_RDWR" : "O_RDONLY") + (create ? "|O_CREAT" : "")
                + (direct ? "|O_DIRECT" : "") + (exclusive ? "|O_EXCL" : "") + ")";
        int fd;
        try (Arena arena = Arena.ofConfined()) {
            fd = Syscalls.open(arena.allocateFrom(path.toString()), flags, 0644);
        }
        if (fd < 0) {
            String hint = switch (-fd) {
                case 13 /* EACCES */ -> "check the file's permissions, or run as a user that may open it";
                case 2 /* ENOENT */ -> "the path does not exist";
                case 22 /* EINVAL */ -> direct ? "this file system may not support O_DIRECT (tmpfs does not)" : null;
                default -> null;
            };
            throw Errno.exception(call, -fd, hint);
        }
        Kind kind;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = arena.allocate(stat.layout());
            int r = Syscalls.fstat(fd, st);
            if (r < 0) {
                Syscalls.close(fd);
                throw Errno.exception("fstat(" + path + ")", -r);
            }
            kind = kindOfMode(stat.st_mode(st));
        }
        return new NativeFile(path, fd, direct, write, kind);
    }

    public Path path() {
        return path;
    }

    public int fd() {
        return fd;
    }

    public boolean isDirect() {
        return direct;
    }

    public boolean isWritable() {
        return writable;
    }

    public Kind kind() {
        return kind;
    }

    /** Size in bytes: {@code st_size} for a regular file, {@code BLKGETSIZE64} for a block device. */
    public long size() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            if (kind == Kind.BLOCK_DEVICE) {
                return blockDeviceIoctl(arena, ValueLayout.JAVA_LONG, FdpNative.BLKGETSIZE64(), "BLKGETSIZE64")
                        .get(ValueLayout.JAVA_LONG, 0);
            }
            return stat.st_size(fstat(arena));
        }
    }

    /**
     * The logical block size: {@code BLKSSZGET} for a block device; for a regular file the file
     * system's preferred I/O size ({@code st_blksize}), a safe alignment for O_DIRECT on it.
     */
    public int logicalBlockSize() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            if (kind == Kind.BLOCK_DEVICE) {
                return blockDeviceIoctl(arena, ValueLayout.JAVA_INT, FdpNative.BLKSSZGET(), "BLKSSZGET")
                        .get(ValueLayout.JAVA_INT, 0);
            }
            long blksize = stat.st_blksize(fstat(arena));
            return blksize > 0 && Long.bitCount(blksize) == 1 ? (int) blksize : 4096;
        }
    }

    /** A block device ioctl that writes one {@code out} value: the memory it wrote, in {@code arena}. */
    private MemorySegment blockDeviceIoctl(Arena arena, ValueLayout out, long request, String name)
            throws Errno.NativeIOException {
        MemorySegment value = arena.allocate(out);
        int r = Syscalls.ioctl(fd, request, value);
        if (r < 0) {
            throw Errno.exception("ioctl(" + path + ", " + name + ")", -r);
        }
        return value;
    }

    /** {@code struct stat} of this file, in {@code arena}. */
    private MemorySegment fstat(Arena arena) throws Errno.NativeIOException {
        MemorySegment st = arena.allocate(stat.layout());
        int r = Syscalls.fstat(fd, st);
        if (r < 0) {
            throw Errno.exception("fstat(" + path + ")", -r);
        }
        return st;
    }

    /** @return bytes read (fewer than asked only at end of file) */
    public long pread(MemorySegment buffer, long offset) throws Errno.NativeIOException {
        long r = Syscalls.pread(fd, buffer, buffer.byteSize(), offset);
        if (r < 0) {
            throw Errno.exception(describe("pread", buffer, offset), (int) -r, alignmentHint((int) -r));
        }
        return r;
    }

    /** @return bytes written */
    public long pwrite(MemorySegment buffer, long offset) throws Errno.NativeIOException {
        long r = Syscalls.pwrite(fd, buffer, buffer.byteSize(), offset);
        if (r < 0) {
            throw Errno.exception(describe("pwrite", buffer, offset), (int) -r, alignmentHint((int) -r));
        }
        return r;
    }

    /**
     * {@code ioctl(fd, request, arg)}.
     *
     * @param what the request's name, for the message
     * @return the ioctl's non-negative result (for NVMe passthru: 0, or an NVMe status)
     * @throws Errno.NativeIOException naming the request and the errno when it fails
     */
    public int ioctl(long request, String what, MemorySegment arg) throws Errno.NativeIOException {
        int r = Syscalls.ioctl(fd, request, arg);
        if (r < 0) {
            String hint = -r == 13 || -r == 1 ? "NVMe admin commands need CAP_SYS_ADMIN (run as root)" : null;
            throw Errno.exception("ioctl(" + path + ", " + what + ")", -r, hint);
        }
        return r;
    }

    /** {@code fdatasync(2)}: data and the metadata needed to read it are durable. */
    public void fdatasync() throws Errno.NativeIOException {
        int r = Syscalls.fdatasync(fd);
        if (r < 0) {
            throw Errno.exception("fdatasync(" + path + ")", -r);
        }
    }

    private String describe(String call, MemorySegment buffer, long offset) {
        return call + "(" + path + ", buf=0x" + Long.toHexString(buffer.address()) + ", len=" + buffer.byteSize()
                + ", offset=" + offset + ")";
    }

    private String alignmentHint(int errno) {
        return errno == Errno.EINVAL && direct
                ? "O_DIRECT needs the buffer address, length and offset aligned to the logical block size"
                : null;
    }

    /**
     * Closes the descriptor. An exclusive lock is released first, explicitly: the kernel keeps a lock
     * while anything still references the open file (an io_uring's registered files, released
     * asynchronously after the ring is gone), and the next owner must not find it held.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            if (locked) {
                Syscalls.flock(fd, FdpNative.LOCK_UN());
            }
            Syscalls.close(fd);
        }
    }

    @Override
    public String toString() {
        return "NativeFile[" + path + ", fd=" + fd + ", " + kind + (direct ? ", O_DIRECT" : "") + "]";
    }
}
