package io.fdpblock.nvme;

import io.fdpblock.ffi.FdpNative;
import io.fdpblock.ffi.nvme_passthru_cmd64;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.linux.NativeLibrary;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import io.fdpblock.uring.Uring;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An NVMe namespace opened through its generic character device {@code /dev/ngXnY} (any command set,
 * passthru only). Admin and management commands go through the passthru ioctl
 * ({@code NVME_IOCTL_ADMIN64_CMD}/{@code IO64_CMD}); bulk I/O belongs to the {@code uring_cmd} engine.
 *
 * <pre>
 * try (NvmeNamespace ns = NvmeNamespace.open("/dev/ng0n1")) {
 *     System.out.println(ns.fdpConfigurations());
 *     System.out.println(ns.ruhStatus());
 * }
 * </pre>
 */
public final class NvmeNamespace implements AutoCloseable {
    static {
        NativeLibrary.ensureLoaded(); // fails with the reason, e.g. the --enable-native-access to add
    }

    /**
     * The {@code cmd_op} of an I/O command through io_uring ({@code NVME_URING_CMD_IO}): what an
     * {@code IORING_OP_URING_CMD} SQE carries for a read, write, flush or DSM on {@code /dev/ngXnY}.
     */
    public static final int URING_CMD_IO = (int) FdpNative.NVME_URING_CMD_IO();
    /** The {@code cmd_op} of an admin command through io_uring on {@code /dev/nvmeX}. */
    private static final int URING_CMD_ADMIN = (int) FdpNative.NVME_URING_CMD_ADMIN();
    private static final Pattern GENERIC = Pattern.compile("ng(\\d+)n(\\d+)");
    private static final int FEATURE_FDP = 0x1D;
    private static final System.Logger LOG = System.getLogger("io.fdpblock.nvme");
    private static final int LOG_FDP_CONFIGS = 0x20;
    private static final int LOG_RUH_USAGE = 0x21;
    private static final int LOG_FDP_STATS = 0x22;
    private static final int LOG_FDP_EVENTS = 0x23;

    private final Path path;
    private final NativeFile file;
    private final int nsid;
    private final String blockName;
    private final String controllerName;
    /** From Identify Namespace (the LBA format in use) where it can be read, else sysfs. */
    private int lbaSize;
    private final int maxTransferBytes;
    private volatile FdpRecords.NamespaceInfo namespaceInfo;

    private NvmeNamespace(Path path, NativeFile file, int nsid, String blockName, String controllerName, int lbaSize,
            int maxTransferBytes) {
        this.path = path;
        this.file = file;
        this.nsid = nsid;
        this.blockName = blockName;
        this.controllerName = controllerName;
        this.lbaSize = lbaSize;
        this.maxTransferBytes = maxTransferBytes;
    }

    /**
     * Opens {@code /dev/ngXnY} read-write.
     *
     * @throws IOException for a block device, a partition or a regular file (naming the generic device
     *         to use instead), a missing device, or missing permissions
     */
    public static NvmeNamespace open(String device) throws IOException {
        return open(device, false);
    }

    /**
     * Opens {@code /dev/ngXnY} read-write; with {@code exclusive}, as the device's one owner (an
     * exclusive flock: a second exclusive opener fails at once saying the device is in use).
     */
    public static NvmeNamespace open(String device, boolean exclusive) throws IOException {
        Path path = Path.of(device);
        NativeFile file = exclusive ? NativeFile.openExclusive(path, false) : NativeFile.open(path, true, false, false);
        try {
            String notGeneric = notAGenericDevice(path, file.kind());
            Matcher m = GENERIC.matcher(fileName(path));
            if (notGeneric != null || !m.matches()) { // null: a character device named ngXnY, so it matches
                throw new IOException(notGeneric);
            }
            int nsid = file.ioctl(FdpNative.NVME_IOCTL_ID(), "NVME_IOCTL_ID", MemorySegment.NULL);
            String block = "nvme" + m.group(1) + "n" + m.group(2);
            String ctrl = "nvme" + m.group(1);
            int lba = (int) sysfsLong(block, "queue/logical_block_size", 512);
            long hwKb = sysfsLong(block, "queue/max_hw_sectors_kb", 128);
            long segments = sysfsLong(block, "queue/max_segments", 33);
            long page = 4096;
            long max = Math.min(hwKb * 1024, segments * page);
            max = Math.max(lba, max / lba * lba);
            NvmeNamespace ns = new NvmeNamespace(path, file, nsid, block, ctrl, lba, (int) Math.min(max, Integer.MAX_VALUE));
            ns.lbaSize = ns.lbaSizeFromIdentify(lba);
            return ns;
        } catch (IOException | RuntimeException e) {
            file.close();
            throw e;
        }
    }

    /**
     * Why {@code path}, a file of {@code kind} ({@link NativeFile#kindOf}), is no NVMe generic device, with
     * what to use instead; null for a character device named {@code ngXnY}. What only an open tells (the
     * namespace answering, permissions) is left to {@link #open}.
     */
    public static String notAGenericDevice(Path path, NativeFile.Kind kind) {
        return switch (kind) {
            case CHAR_DEVICE -> GENERIC.matcher(fileName(path)).matches() ? null : path + " is a character device but"
                    + " not named ngXnY: open the namespace's generic device (/dev/ngXnY)";
            case BLOCK_DEVICE -> path + " is a block device" + (path.toString().matches(".*p\\d+$") ? " partition" : "")
                    + ": NVMe passthru needs the NVMe namespace character device " + suggestGeneric(path)
                    + " (partitions have none)";
            case REGULAR -> path + " is a regular file: NVMe passthru needs an NVMe namespace character device"
                    + " (/dev/ngXnY); use the io_uring or posix engine for files";
            case OTHER -> path + " is not an NVMe namespace character device (/dev/ngXnY)";
        };
    }

    private static String fileName(Path path) {
        return path.getFileName() == null ? "" : path.getFileName().toString();
    }

    private static String suggestGeneric(Path path) {
        Matcher b = Pattern.compile("nvme(\\d+)n(\\d+)(p\\d+)?").matcher(fileName(path));
        return b.matches() ? "/dev/ng" + b.group(1) + "n" + b.group(2) : "/dev/ngXnY";
    }

    private static long sysfsLong(String block, String attr, long fallback) {
        Path p = Path.of("/sys/block", block, attr);
        try {
            return Long.parseLong(Files.readString(p).trim());
        } catch (IOException | NumberFormatException e) {
            return fallback;
        }
    }

    /** Whether this process may send admin commands (CAP_SYS_ADMIN in its effective set). */
    public static boolean hasAdminCapability() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("CapEff:")) {
                    long caps = Long.parseUnsignedLong(line.substring(7).trim(), 16);
                    return (caps & (1L << 21)) != 0;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // unknown: let the device answer
        }
        return true;
    }

    public Path path() {
        return path;
    }

    public int fd() {
        return file.fd();
    }

    public int nsid() {
        return nsid;
    }

    /** The block device of the same namespace, e.g. {@code nvme0n1} (for sysfs). */
    public String blockName() {
        return blockName;
    }

    public String controllerName() {
        return controllerName;
    }

    public int lbaSize() {
        return lbaSize;
    }

    /** {@code min(max_hw_sectors_kb * 1024, max_segments * page)}: larger transfers must be split. */
    public int maxTransferBytes() {
        return maxTransferBytes;
    }

    /**
     * The LBA size of the format in use (Identify Namespace); {@code fallback} (sysfs) when identify
     * cannot be sent (no CAP_SYS_ADMIN), said once in the log.
     */
    private int lbaSizeFromIdentify(int fallback) {
        try {
            int lba = identifyNamespace().lbaSize();
            if (lba != fallback) {
                LOG.log(System.Logger.Level.WARNING, path + ": Identify Namespace says LBAs of " + lba + " bytes, sysfs "
                        + fallback + "; using " + lba);
            }
            return lba;
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.INFO, path + ": LBA size from sysfs (" + fallback + " bytes): Identify"
                    + " Namespace unavailable (" + e.getMessage() + ")");
            return fallback;
        }
    }

    /** Capacity in bytes: sysfs (no privilege needed), else identify namespace NSZE x LBA size. */
    public long sizeBytes() throws IOException {
        long sectors = sysfsLong(blockName, "size", -1);
        return sectors > 0 ? sectors * 512 : identifyNamespace().sizeBlocks() * lbaSize;
    }

    // ---- passthru ----

    /**
     * Runs an admin command through the passthru ioctl.
     *
     * @return the completion's DW0
     * @throws NvmeStatusException when the device answers with an error status
     */
    public long admin(NvmeCommand cmd) throws IOException {
        if (!hasAdminCapability()) {
            throw new IOException(cmd + " on " + path + " needs CAP_SYS_ADMIN: run as root (FDP statistics and"
                    + " configuration logs are admin commands)");
        }
        if (ringAdmin) {
            try {
                return adminOnRing(cmd);
            } catch (NvmeStatusException e) {
                throw e; // the device answered
            } catch (IOException | RuntimeException e) {
                ringAdmin = false; // no controller device, or no uring_cmd for admin here: use the ioctl from now on
                adminFallbackCause = e.getMessage();
            }
        }
        return passthru(cmd, FdpNative.NVME_IOCTL_ADMIN64_CMD(), "NVME_IOCTL_ADMIN64_CMD");
    }

    private volatile boolean ringAdmin = Uring.isBigEntriesAvailable();
    private volatile String adminFallbackCause;

    /** How admin commands travel: {@code "uring_cmd"} (NVME_URING_CMD_ADMIN on /dev/nvmeX) or the ioctl, and why. */
    public String adminTransport() {
        return ringAdmin ? "uring_cmd on /dev/" + controllerName
                : "ioctl" + (adminFallbackCause == null ? "" : " (" + adminFallbackCause + ")");
    }

    /**
     * NVME_URING_CMD_ADMIN on the controller's character device, through a small ring of its own:
     * admin commands are rare, so the ring lives for one command, on the calling thread.
     */
    private long adminOnRing(NvmeCommand cmd) throws IOException {
        Path ctrl = Path.of("/dev", controllerName);
        try (NativeFile dev = NativeFile.open(ctrl, true, false, false);
             Ring ring = Ring.open(RingOptions.of(2).withBigEntries(true))) {
            long sqe = ring.prepUringCmd(dev.fd(), URING_CMD_ADMIN, 1);
            cmd.encodeUring(ring.sqeArea(), sqe + Ring.SQE_CMD_OFFSET);
            long[] out = new long[2];
            int reaped = 0;
            while (reaped == 0) {
                ring.submitAndWait(1);
                reaped = ring.reap((userData, res, flags, extra) -> {
                    out[0] = res;
                    out[1] = extra;
                });
            }
            NvmeCompletion.check("uring_cmd NVME_URING_CMD_ADMIN " + cmd + " on " + ctrl, (int) out[0]);
            return out[1];
        }
    }

    /** Runs an I/O command (on this namespace) through the passthru ioctl. @return DW0 */
    public long io(NvmeCommand cmd) throws IOException {
        return passthru(cmd, FdpNative.NVME_IOCTL_IO64_CMD(), "NVME_IOCTL_IO64_CMD");
    }

    private long passthru(NvmeCommand cmd, long request, String requestName) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = arena.allocate(nvme_passthru_cmd64.layout());
            cmd.encodeIoctl(c);
            NvmeCompletion.check(cmd + " on " + path, file.ioctl(request, requestName + " " + cmd, c));
            return NvmeCommand.ioctlResult(c);
        }
    }

    // ---- identify, features, logs ----

    public FdpRecords.ControllerInfo identifyController() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(4096, 4096);
            admin(NvmeCommand.identify(1, 0, d));
            return FdpRecords.ControllerInfo.parse(d);
        }
    }

    /** Identify Namespace as first read (its NUSE is that moment's: {@link #identifyNamespaceNow()} for a fresh one). */
    public FdpRecords.NamespaceInfo identifyNamespace() throws IOException {
        FdpRecords.NamespaceInfo cached = namespaceInfo;
        return cached != null ? cached : identifyNamespaceNow();
    }

    /** Identify Namespace read now, e.g. for the utilization (NUSE) after a deallocate. */
    public FdpRecords.NamespaceInfo identifyNamespaceNow() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(4096, 4096);
            admin(NvmeCommand.identify(0, nsid, d));
            FdpRecords.NamespaceInfo info = FdpRecords.NamespaceInfo.parse(d);
            namespaceInfo = info;
            return info;
        }
    }

    /** The endurance group FDP logs and features are scoped to (1 when the namespace reports 0). */
    public int enduranceGroup() throws IOException {
        int g = identifyNamespace().enduranceGroup();
        return g == 0 ? 1 : g;
    }

    /** Get Features 0x1D (FDP) DW0: bit 0 enabled, bits 15:8 the configuration index. */
    public int fdpFeature() throws IOException {
        return (int) admin(NvmeCommand.getFeatures(FEATURE_FDP, 0, enduranceGroup(), null));
    }

    public boolean isFdpEnabled() throws IOException {
        return (fdpFeature() & 1) != 0;
    }

    private MemorySegment log(Arena arena, int lid, int lsp, long bytes) throws IOException {
        MemorySegment d = arena.allocate((bytes + 3) / 4 * 4, 4096);
        admin(NvmeCommand.getLogPage(lid, lsp, enduranceGroup(), 0, 0, d));
        return d;
    }

    public FdpRecords.FdpConfigurations fdpConfigurations() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment head = log(arena, LOG_FDP_CONFIGS, 0, 16);
            long size = Integer.toUnsignedLong(head.get(NvmeLayouts.U32, 4));
            if (size < 16 || size > (1 << 20)) {
                throw new IOException("FDP configurations log of " + path + ": SIZE " + size + " is not plausible");
            }
            return FdpRecords.FdpConfigurations.parse(log(arena, LOG_FDP_CONFIGS, 0, size));
        }
    }

    /** The configuration in force (from the FDP feature's index). */
    public FdpRecords.FdpConfiguration activeFdpConfiguration() throws IOException {
        int index = (fdpFeature() >>> 8) & 0xFF;
        List<FdpRecords.FdpConfiguration> all = fdpConfigurations().configurations();
        if (index >= all.size()) {
            throw new IOException("FDP feature names configuration " + index + " but the log has " + all.size());
        }
        return all.get(index);
    }

    public FdpRecords.RuhStatus ruhStatus() throws IOException {
        // Ask for what 63 descriptors need first, then exactly what NRUHSD says: some controllers (QEMU 10)
        // refuse a transfer much larger than the data they return.
        int first = 16 + 32 * 63;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(first, 4096);
            io(NvmeCommand.ruhStatus(nsid, d));
            int n = Short.toUnsignedInt(d.get(NvmeLayouts.U16, 14));
            if (n > 63) {
                d = arena.allocate(16 + 32L * n, 4096);
                io(NvmeCommand.ruhStatus(nsid, d));
            }
            return FdpRecords.RuhStatus.parse(d);
        }
    }

    public FdpRecords.RuhUsage ruhUsage() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment head = log(arena, LOG_RUH_USAGE, 0, 8);
            int n = Short.toUnsignedInt(head.get(NvmeLayouts.U16, 0));
            return FdpRecords.RuhUsage.parse(log(arena, LOG_RUH_USAGE, 0, 8 + 8L * n));
        }
    }

    public FdpRecords.FdpStatistics fdpStatistics() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            return FdpRecords.FdpStatistics.parse(log(arena, LOG_FDP_STATS, 0, 64));
        }
    }

    /** @param host host events (true) or controller events */
    public List<FdpRecords.FdpEvent> fdpEvents(boolean host) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment head = log(arena, LOG_FDP_EVENTS, host ? 1 : 0, 64);
            long n = Integer.toUnsignedLong(head.get(NvmeLayouts.U32, 0));
            if (n > 4096) {
                throw new IOException("FDP events log of " + path + ": NEVENTS " + n + " is not plausible");
            }
            return FdpRecords.FdpEvent.parseAll(log(arena, LOG_FDP_EVENTS, host ? 1 : 0, 64 + 64 * n));
        }
    }

    /**
     * Moves each handle to a fresh reclaim unit (I/O Management Send, RUH Update), one command per id:
     * every controller takes one id at a time, while the most a command may name differs (QEMU 10 refuses
     * a list of all its handles).
     */
    public void ruhUpdate(int... placementIds) throws IOException {
        if (placementIds.length == 0) {
            throw new IllegalArgumentException("RUH update needs at least one placement id");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(4, 4096);
            for (int id : placementIds) {
                d.set(NvmeLayouts.U16, 0, (short) id);
                io(NvmeCommand.ruhUpdate(nsid, d, 1));
            }
        }
    }

    /** Enables FDP events of {@code eventTypes} for placement handle {@code handle} (Set Features 0x1E). */
    public void enableFdpEvents(int handle, int... eventTypes) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(Math.max(4, eventTypes.length), 4096);
            for (int i = 0; i < eventTypes.length; i++) {
                d.set(ValueLayout.JAVA_BYTE, i, (byte) eventTypes[i]);
            }
            admin(NvmeCommand.setFeatures(0x1E, nsid, (handle & 0xFFFF) | (eventTypes.length << 16), 1, d));
        }
    }

    // ---- simple synchronous I/O (experiments, jshell) ----

    /** Writes {@code data} (a multiple of the LBA size, at most the max transfer) at {@code slba}. */
    public void write(long slba, MemorySegment data, PlacementId placement) throws IOException {
        io(NvmeCommand.write(nsid, slba, blocks(data), data, placement, false));
    }

    /** {@link #write(long, MemorySegment, PlacementId)} with placement id {@code placementId} (0..65535). */
    public void write(long slba, MemorySegment data, int placementId) throws IOException {
        write(slba, data, PlacementId.of(placementId));
    }

    /** Writes with no placement directive. */
    public void write(long slba, MemorySegment data) throws IOException {
        write(slba, data, PlacementId.NONE);
    }

    public void read(long slba, MemorySegment data) throws IOException {
        io(NvmeCommand.read(nsid, slba, blocks(data), data));
    }

    private int blocks(MemorySegment data) {
        if (data.byteSize() == 0 || data.byteSize() % lbaSize != 0 || data.byteSize() > maxTransferBytes) {
            throw new IllegalArgumentException("buffer of " + data.byteSize() + " bytes must be a positive multiple of"
                    + " the LBA size " + lbaSize + " and at most the max transfer " + maxTransferBytes);
        }
        return (int) (data.byteSize() / lbaSize);
    }

    @Override
    public void close() {
        file.close();
    }

    @Override
    public String toString() {
        return "NvmeNamespace[" + path + ", nsid " + nsid + ", LBA " + lbaSize + " B, max transfer " + maxTransferBytes
                + " B]";
    }
}
