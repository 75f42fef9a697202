package io.fdpblock.nvme;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Block-layer write streams (Linux >= 6.16): the kernel offers an FDP namespace's placement handles to
 * O_DIRECT writes on its block device {@code /dev/nvmeXnY}, and an io_uring write names one with the
 * SQE's {@code write_stream} byte. Stream {@code N} (1..{@code queue/max_write_streams}) is the
 * {@code N}-th entry of the namespace's RUH Status, which the kernel read when it probed the namespace;
 * stream 0 is none (the device's default handle).
 *
 * <p>Whether a device has them is read from sysfs only ({@link #probe}), never inferred from a write that
 * succeeded: a 6.12 kernel accepts the SQE byte and ignores it. The placement ids behind the stream
 * numbers come from RUH Status, which only the namespace's generic device {@code /dev/ngXnY} answers
 * ({@link #open}): that needs read-write access to it (root, or a udev rule), the writes themselves only
 * the block device. A buffered write drops its stream silently, so only O_DIRECT writes are placed.
 */
public final class WriteStreams {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.nvme");
    private static final Pattern BLOCK = Pattern.compile("nvme(\\d+)n(\\d+)");
    private static final Pattern GENERIC = Pattern.compile("ng(\\d+)n(\\d+)");
    /** The SQE field is one byte. */
    public static final int MAX_STREAM = 255;
    private static final int S_IFMT = 0170000;
    private static final int S_IFBLK = 0060000;
    private static final int S_IFCHR = 0020000;
    private static final int S_IFREG = 0100000;

    /**
     * What sysfs says about one device's write streams.
     *
     * @param device the path probed
     * @param kernel the running kernel's release
     * @param blockName the block device's sysfs name ({@code nvme0n1}), or null when it has none
     * @param maxStreams {@code queue/max_write_streams} (0 when unavailable)
     * @param granularityBytes {@code queue/write_stream_granularity}: the reclaim unit size (0 when unavailable)
     * @param unavailable why the device has no usable write streams (what to change), or null when it has
     */
    public record Probe(Path device, String kernel, String blockName, int maxStreams, long granularityBytes,
            String unavailable) {
        public boolean available() {
            return unavailable == null;
        }

        /** One line: {@code nvme0n1: 8 write streams, granularity 8388608 bytes (kernel 7.3.4)} or the reason. */
        public String describe() {
            return available() ? blockName + ": " + maxStreams + " write streams, granularity " + granularityBytes
                    + " bytes (kernel " + kernel + ")" : unavailable;
        }
    }

    /** Why a namespace whose block device shows 0 write streams has none (the device is asked; tests fake it). */
    @FunctionalInterface
    public interface FdpDiagnosis {
        /** @return a phrase such as "FDP is off on its endurance group 1" */
        String whyNoStreams(Path genericDevice);
    }

    private final Probe probe;
    private final Path genericDevice;
    /** Stream {@code i + 1} places with {@code ids[i]}. */
    private final int[] ids;
    /** By placement id: its stream, 0 for an id no stream reaches. */
    private final byte[] streamOf;

    private WriteStreams(Probe probe, Path genericDevice, int[] ids) {
        this.probe = probe;
        this.genericDevice = genericDevice;
        this.ids = ids;
        int max = Arrays.stream(ids).max().orElse(-1);
        this.streamOf = new byte[max + 1];
        for (int i = 0; i < ids.length; i++) {
            streamOf[ids[i]] = (byte) (i + 1);
        }
    }

    // ---- discovery ----

    /** Probes {@code device} against this machine's sysfs and kernel; asks the namespace why when it has 0 streams. */
    public static Probe probe(Path device) {
        return probe(device, Path.of("/sys"), kernelRelease(), WriteStreams::diagnose);
    }

    /**
     * Probes {@code device}: its kind and device number (stat), then under {@code sysfs}
     * ({@code dev/block/MAJ:MIN}, {@code queue/max_write_streams}, {@code queue/write_stream_granularity}).
     * Never throws: an unusable device gives a {@link Probe} whose {@code unavailable} says why.
     */
    public static Probe probe(Path device, Path sysfs, String kernel, FdpDiagnosis diagnosis) {
        int mode;
        long rdev;
        try {
            Map<String, Object> st = Files.readAttributes(device, "unix:mode,rdev");
            mode = (Integer) st.get("mode");
            rdev = (Long) st.get("rdev");
        } catch (NoSuchFileException e) {
            return none(device, kernel, null, device + " does not exist");
        } catch (IOException | UnsupportedOperationException e) {
            return none(device, kernel, null, "cannot stat " + device + ": " + e.getMessage());
        }
        switch (mode & S_IFMT) {
            case S_IFBLK -> { }
            case S_IFREG -> {
                return none(device, kernel, null, device + " is a regular file: write streams belong to the block"
                        + " device of an NVMe namespace with FDP (/dev/nvmeXnY)");
            }
            case S_IFCHR -> {
                return none(device, kernel, null, device + " is a character device: write streams belong to the block"
                        + " device /dev/nvmeXnY (on a generic device /dev/ngXnY, io_engine uring_cmd places writes"
                        + " through NVMe passthru)");
            }
            default -> {
                return none(device, kernel, null, device + " is not a block device");
            }
        }
        return probeBlock(device, sysfs, kernel, major(rdev) + ":" + minor(rdev), diagnosis);
    }

    /** The sysfs part of {@link #probe} for a block device whose device number is {@code devNumber} ("259:1"). */
    static Probe probeBlock(Path device, Path sysfs, String kernel, String devNumber, FdpDiagnosis diagnosis) {
        Path node;
        try {
            node = sysfs.resolve("dev/block").resolve(devNumber).toRealPath();
        } catch (IOException e) {
            return none(device, kernel, null, device + " (block device " + devNumber + ") has no entry "
                    + sysfs.resolve("dev/block").resolve(devNumber) + " in sysfs");
        }
        String name = node.getFileName().toString();
        if (Files.exists(node.resolve("partition"))) {
            String whole = node.getParent().getFileName().toString();
            return none(device, kernel, name, device + " is a partition (" + name + ") of " + whole + ": write streams"
                    + " and their placement ids belong to the whole namespace; use /dev/" + whole);
        }
        Path queue = node.resolve("queue");
        Path maxFile = queue.resolve("max_write_streams");
        if (!Files.exists(maxFile)) {
            return none(device, kernel, name, atLeast(kernel, 6, 16)
                    ? "kernel " + kernel + " shows no queue/max_write_streams for " + name + " (" + maxFile + ")"
                    : "kernel " + kernel + " has no block-layer write streams: they need Linux >= 6.16 (there is no "
                            + "queue/max_write_streams for " + name + "); on this kernel FDP placement needs io_engine"
                            + " uring_cmd on /dev/ngXnY");
        }
        long max;
        long granularity;
        try {
            max = readLong(maxFile);
            Path g = queue.resolve("write_stream_granularity");
            granularity = Files.exists(g) ? readLong(g) : 0;
        } catch (IOException | NumberFormatException e) {
            return none(device, kernel, name, "cannot read the write-stream limits of " + name + ": " + e.getMessage());
        }
        Matcher m = BLOCK.matcher(name);
        if (max == 0) {
            String why = m.matches() ? diagnosis.whyNoStreams(genericDevice(name))
                    : name + " is not an NVMe namespace with FDP";
            return none(device, kernel, name, "queue/max_write_streams of " + name + " is 0 (kernel " + kernel
                    + "): " + why);
        }
        if (!m.matches()) {
            return none(device, kernel, name, name + " has " + max + " write streams but is not an NVMe namespace"
                    + " (nvmeXnY): the placement ids behind them cannot be read");
        }
        return new Probe(device, kernel, name, (int) Math.min(max, Integer.MAX_VALUE), granularity, null);
    }

    private static Probe none(Path device, String kernel, String blockName, String why) {
        return new Probe(device, kernel, blockName, 0, 0, why);
    }

    private static long readLong(Path p) throws IOException {
        return Long.parseLong(Files.readString(p).strip());
    }

    /** glibc's {@code major()}/{@code minor()} of a {@code dev_t}. */
    static long major(long dev) {
        return ((dev & 0x0000_0000_000f_ff00L) >>> 8) | ((dev & 0xffff_f000_0000_0000L) >>> 32);
    }

    static long minor(long dev) {
        return (dev & 0xffL) | ((dev & 0x0000_0fff_fff0_0000L) >>> 12);
    }

    /** The running kernel's release, e.g. {@code 7.3.4+deb13-amd64}. */
    public static String kernelRelease() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/osrelease")).strip();
        } catch (IOException e) {
            return System.getProperty("os.version");
        }
    }

    /** Whether the running kernel is at least {@code major.minor} (write streams: 6.16). */
    public static boolean kernelAtLeast(int major, int minor) {
        return atLeast(kernelRelease(), major, minor);
    }

    /** Whether a kernel release such as {@code 6.12.48+deb12-amd64} is at least {@code major.minor}. */
    static boolean atLeast(String release, int major, int minor) {
        Matcher m = Pattern.compile("^(\\d+)\\.(\\d+)").matcher(release == null ? "" : release);
        if (!m.find()) {
            return false;
        }
        int a = Integer.parseInt(m.group(1));
        int b = Integer.parseInt(m.group(2));
        return a > major || (a == major && b >= minor);
    }

    /** The generic device of a block device's namespace: {@code nvme0n1} -> {@code /dev/ng0n1}. */
    public static Path genericDevice(String blockName) {
        Matcher m = BLOCK.matcher(blockName);
        if (!m.matches()) {
            throw new IllegalArgumentException(blockName + " is not an NVMe namespace's block device name (nvmeXnY)");
        }
        return Path.of("/dev", "ng" + m.group(1) + "n" + m.group(2));
    }

    /**
     * The namespace's two device nodes from either: {@code /dev/ng0n1} gives {@code /dev/nvme0n1} and
     * the other way round; anything else gives null.
     */
    public static Path counterpart(Path device) {
        String n = device.getFileName().toString();
        Matcher g = GENERIC.matcher(n);
        if (g.matches()) {
            return device.resolveSibling("nvme" + g.group(1) + "n" + g.group(2));
        }
        Matcher b = BLOCK.matcher(n);
        return b.matches() ? device.resolveSibling("ng" + b.group(1) + "n" + b.group(2)) : null;
    }

    /** Asks the namespace (admin commands: root) why its block device shows no write streams. */
    private static String diagnose(Path generic) {
        if (!Files.exists(generic)) {
            return "FDP is off or the device has no placement handles (" + generic + " is missing, so it cannot be asked)";
        }
        try (NvmeNamespace ns = NvmeNamespace.open(generic.toString())) {
            if (!ns.identifyController().fdpSupported()) {
                return "the controller does not support FDP (Identify Controller CTRATT bit 19 clear)";
            }
            if (!ns.isFdpEnabled()) {
                return "FDP is off on the namespace's endurance group " + ns.enduranceGroup() + " (Get Features 0x1D);"
                        + " enable it on the endurance group (it takes a namespace-free group), or use no placement";
            }
            FdpRecords.FdpConfiguration c = ns.activeFdpConfiguration();
            if (c.reclaimGroups() > 1) {
                return "FDP is on with " + c.reclaimGroups() + " reclaim groups, and the kernel offers write streams"
                        + " for one reclaim group only; use io_engine uring_cmd on " + generic;
            }
            return "FDP is on (" + c.reclaimUnitHandles() + " handles), yet the kernel offers no write streams; use"
                    + " io_engine uring_cmd on " + generic;
        } catch (IOException | RuntimeException e) {
            return "FDP is off or the device has no placement handles (" + generic + " could not be asked: "
                    + e.getMessage() + ")";
        }
    }

    // ---- the map ----

    /**
     * Probes {@code blockDevice} and reads the placement ids behind its streams from RUH Status of the
     * namespace's generic device.
     *
     * @throws IOException saying why the device has no usable write streams, or why RUH Status could not be read
     */
    public static WriteStreams open(Path blockDevice) throws IOException {
        Probe p = probe(blockDevice);
        if (!p.available()) {
            throw new IOException(p.unavailable());
        }
        return open(p);
    }

    /** Reads RUH Status for an available {@code probe}. */
    public static WriteStreams open(Probe probe) throws IOException {
        if (!probe.available()) {
            throw new IOException(probe.unavailable());
        }
        Path generic = genericDevice(probe.blockName());
        List<Integer> ruh;
        try (NvmeNamespace ns = NvmeNamespace.open(generic.toString())) {
            ruh = ns.ruhStatus().placementIds();
        } catch (IOException | RuntimeException e) {
            throw new IOException(probe.blockName() + " has " + probe.maxStreams() + " write streams, but the placement"
                    + " ids behind them come from RUH Status of " + generic + ", which could not be read (" + e.getMessage()
                    + "): give this user read-write access to " + generic + " (root, or a udev rule)", e);
        }
        return of(probe, generic, ruh);
    }

    /**
     * The map for an available {@code probe} from the namespace's RUH Status order: stream {@code i + 1}
     * is {@code ruhStatusIds.get(i)}, for the first {@code min(ids, max_write_streams, 255)} entries.
     *
     * @throws IOException when RUH Status lists no id (FDP off) or an id twice
     */
    public static WriteStreams of(Probe probe, Path genericDevice, List<Integer> ruhStatusIds) throws IOException {
        if (!probe.available()) {
            throw new IOException(probe.unavailable());
        }
        if (ruhStatusIds.isEmpty()) {
            throw new IOException(probe.blockName() + " shows " + probe.maxStreams() + " write streams but RUH Status of "
                    + genericDevice + " lists no placement id: FDP is off on the namespace's endurance group");
        }
        Set<Integer> seen = new LinkedHashSet<>();
        for (int id : ruhStatusIds) {
            PlacementId.check("RUH Status placement id", id);
            if (!seen.add(id)) {
                throw new IOException("RUH Status of " + genericDevice + " lists placement id " + id + " twice ("
                        + ruhStatusIds + "): its streams cannot be mapped");
            }
        }
        int n = Math.min(Math.min(ruhStatusIds.size(), probe.maxStreams()), MAX_STREAM);
        if (n < ruhStatusIds.size()) {
            LOG.log(System.Logger.Level.WARNING, probe.blockName() + ": RUH Status lists " + ruhStatusIds.size()
                    + " placement ids, but only " + n + " write streams reach them: ids " + ruhStatusIds.subList(n,
                    ruhStatusIds.size()) + " cannot be placed through the block device");
        } else if (probe.maxStreams() > n) {
            LOG.log(System.Logger.Level.WARNING, probe.blockName() + " shows " + probe.maxStreams() + " write streams"
                    + " but RUH Status lists " + ruhStatusIds.size() + " placement ids: streams above " + n + " are not used");
        }
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = ruhStatusIds.get(i);
        }
        return new WriteStreams(probe, genericDevice, ids);
    }

    public Probe probe() {
        return probe;
    }

    public String blockName() {
        return probe.blockName();
    }

    /** The namespace's generic device RUH Status was read from. */
    public Path genericDevice() {
        return genericDevice;
    }

    public int maxStreams() {
        return probe.maxStreams();
    }

    /** The reclaim unit size the kernel reports ({@code queue/write_stream_granularity}). */
    public long granularityBytes() {
        return probe.granularityBytes();
    }

    /** The placement ids a write stream reaches, in stream order (stream 1 first). */
    public List<Integer> placementIds() {
        List<Integer> l = new ArrayList<>(ids.length);
        for (int id : ids) {
            l.add(id);
        }
        return List.copyOf(l);
    }

    /**
     * The stream that places with {@code placementId}: 1..n; 0 for {@link PlacementId#NONE_VALUE} (no
     * stream: the default handle); -1 for an id no stream reaches.
     */
    public int streamOf(int placementId) {
        if (placementId == PlacementId.NONE_VALUE) {
            return 0;
        }
        if (placementId < 0 || placementId >= streamOf.length || streamOf[placementId] == 0) {
            return -1;
        }
        return Byte.toUnsignedInt(streamOf[placementId]);
    }

    /** The placement id of stream {@code stream} (1..n). */
    public int placementIdOf(int stream) {
        if (stream < 1 || stream > ids.length) {
            throw new IllegalArgumentException("stream " + stream + " is outside 1.." + ids.length + " of " + blockName());
        }
        return ids[stream - 1];
    }

    /** {@code stream 1 -> placement id 0, stream 2 -> placement id 1, ...}. */
    public String describeMap() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < ids.length; i++) {
            sb.append(i == 0 ? "" : ", ").append("stream ").append(i + 1).append(" -> placement id ").append(ids[i]);
        }
        return sb.toString();
    }

    @Override
    public String toString() {
        return "WriteStreams[" + probe.describe() + "; RUH Status of " + genericDevice + ": " + describeMap() + "]";
    }
}
