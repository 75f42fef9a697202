package io.fdpblock.devicetier;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.NvmeCommand;
import io.fdpblock.nvme.NvmeNamespace;
import org.junit.jupiter.api.Assumptions;
import org.opentest4j.AssertionFailedError;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What a {@code device} test may ask about where it runs: the NVMe namespace under test, which guest of
 * the emulated tier it is in ({@code FDPBLOCK_GUEST}, set by the guest's init; unset on the hardware
 * tier), and whether the kernel has block-layer write streams.
 *
 * <p>A test that needs write streams carries {@code @Tag("device") @Tag(DeviceGuest.WRITE_STREAMS_TAG)}
 * and calls {@link #requireWriteStreams()} first: it skips where the kernel has none (the 6.12 guest, an
 * older host) and fails in the {@code streams} guest, whose whole point is to run it.
 *
 * <p>The namespace's layout among the device tests: a store ({@link #storeConfig}) on the first
 * {@link #STORE_BYTES}, raw command tests from {@link #RAW_BASE} on.
 */
public final class DeviceGuest {
    /** The JUnit tag of device tests that need write streams: the streams guest runs exactly these. */
    public static final String WRITE_STREAMS_TAG = "write-streams";
    /** The guest with a kernel >= 6.16. */
    public static final String STREAMS_GUEST = "streams";

    /** The device tests' store: the first 256 MiB of the namespace, one layout for every test class. */
    public static final long STORE_BYTES = 256L << 20;
    /** Raw command tests write at and above this offset (outside every store). */
    public static final long RAW_BASE = 320L << 20;

    private DeviceGuest() {}

    /**
     * The store every device test opens on the namespace: 1 MiB slots, an 8 MiB meta area (a reclaim unit
     * of the emulated device, so slot groups start on reclaim-unit boundaries), uring_cmd, FDP with
     * cache-salt placement, checkpoints on placement id 1, slot affinity, no periodic checkpoints.
     */
    public static RawBlockCoreConfig.Builder storeConfig(String device) {
        return RawBlockCoreConfig.builder(device, 1 << 20).capacityBytes(STORE_BYTES).metaTotalBytes(8 << 20)
                .ioEngine(IoEngine.URING_CMD).iouringQueueDepth(32).metaEnablePeriodic(false).fdpEnabled(true)
                .fdpDataPlacementPolicy(RawBlockCoreConfig.PlacementPolicy.CACHE_SALT_PREFIX)
                .metaCheckpointPlacementId(1).fdpSlotAffinityEnabled(true);
    }

    /**
     * Zeroes the store's meta area (raw writes without a placement directive) and deallocates its data
     * area (the emulated namespace then reads zeros there), so that the next open starts an empty store
     * whatever earlier tests left there: a store refuses to start empty over chunks it finds in its slots.
     */
    public static void wipeStore(RawBlockCoreConfig config) throws IOException {
        try (NvmeNamespace ns = NvmeNamespace.open(config.devicePath()); Arena arena = Arena.ofConfined()) {
            int chunk = ns.maxTransferBytes();
            MemorySegment zeros = arena.allocate(chunk, 4096);
            for (long off = 0; off < config.metaTotalBytes(); off += chunk) {
                int n = (int) Math.min(chunk, config.metaTotalBytes() - off);
                ns.write(off / ns.lbaSize(), zeros.asSlice(0, n), 0);
            }
            MemorySegment range = arena.allocate(NvmeCommand.DSM_RANGE_BYTES, 4096);
            long capacity = Math.min(config.capacityBytes(), ns.sizeBytes());
            NvmeCommand.putDsmRange(range, 0, config.metaTotalBytes() / ns.lbaSize(),
                    (int) ((capacity - config.metaTotalBytes()) / ns.lbaSize()));
            ns.io(NvmeCommand.deallocate(ns.nsid(), range, 1));
        }
    }

    /** The emulated tier's guest this runs in ({@code base}, {@code streams}), or null outside it. */
    public static String name() {
        String g = System.getenv("FDPBLOCK_GUEST");
        return g == null || g.isBlank() ? null : g.strip();
    }

    /** The running kernel's release, e.g. {@code 7.3.4+deb13-amd64}. */
    public static String kernel() {
        return System.getProperty("os.version");
    }

    /** The NVMe generic character device under test ({@code /dev/ngXnY}), or the test is skipped. */
    public static Path device() {
        String d = System.getenv("FDPBLOCK_NVME_DEVICE");
        assumeTrue(d != null && !d.isBlank(),
                "FDPBLOCK_NVME_DEVICE is not set: no NVMe device to test (the emulated FDP guest of the device"
                        + " tier sets it; for a real FDP SSD set it to its /dev/ngXnY)");
        return Path.of(d);
    }

    /** The namespace's block device name ({@code nvmeXnY}): FDPBLOCK_NVME_BLOCK, else derived from ngXnY. */
    public static String blockName(Path device) {
        String b = System.getenv("FDPBLOCK_NVME_BLOCK");
        if (b != null && !b.isBlank()) {
            return Path.of(b).getFileName().toString();
        }
        String name = device.getFileName().toString();
        return name.startsWith("ng") ? "nvme" + name.substring(2) : name;
    }

    /** The kernel's write-stream limits of a block device (sysfs {@code queue/}). */
    public record WriteStreams(String blockName, int maxStreams, long granularityBytes) {}

    /**
     * The write streams of the namespace under test, read from sysfs (never inferred from a write that
     * succeeded: a 6.12 kernel accepts the SQE byte and ignores it). Skips where there are none, except
     * in the streams guest, where that fails.
     */
    public static WriteStreams requireWriteStreams() throws IOException {
        String block = blockName(device());
        Path queue = Path.of("/sys/block", block, "queue");
        Path max = queue.resolve("max_write_streams");
        String missing = null;
        if (!Files.exists(max)) {
            missing = "kernel " + kernel() + " has no block-layer write streams (" + max + " is missing; they"
                    + " need Linux >= 6.16)";
        } else if (Integer.parseInt(Files.readString(max).strip()) == 0) {
            missing = max + " is 0 on kernel " + kernel() + ": the namespace offers no write streams (FDP off,"
                    + " or no placement handles)";
        }
        if (missing != null) {
            if (STREAMS_GUEST.equals(name())) {
                throw new AssertionFailedError("the streams guest exists to run write-stream tests, but " + missing);
            }
            Assumptions.abort("needs write streams: " + missing);
        }
        return new WriteStreams(block, Integer.parseInt(Files.readString(max).strip()),
                Long.parseLong(Files.readString(queue.resolve("write_stream_granularity")).strip()));
    }
}
