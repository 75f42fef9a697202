package io.fdpblock.cli;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.uring.Uring;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * An engine check on a file-backed device in a temp dir: random 4 KiB and 1 MiB blocks written and
 * read back through each engine, every byte verified, IOPS and MB/s printed.
 */
@Command(name = "engines", mixinStandardHelpOptions = true,
        description = "Write and read back random 4 KiB and 1 MiB blocks on a file-backed device through each"
                + " engine, verify every byte, print IOPS and MB/s per engine.")
public final class EnginesCommand implements Callable<Integer> {
    @Option(names = "--dir", description = "Directory for the device file (default: a new temp dir, removed after;"
            + " must support O_DIRECT)")
    Path dir;

    @Option(names = "--size", defaultValue = "1073741824", description = "Device file size in bytes (default 1 GiB)")
    long size;

    @Option(names = "--small", defaultValue = "4000", description = "Random 4 KiB blocks per engine")
    int small;

    @Option(names = "--large", defaultValue = "200", description = "Random 1 MiB blocks per engine")
    int large;

    @Option(names = "--queue-depth", defaultValue = "32", description = "I/Os in flight (io_uring)")
    int queueDepth;

    @Option(names = "--engines", split = ",", defaultValue = "io_uring,posix",
            description = "Engines to run, comma-separated: io_uring, posix")
    List<String> engines;

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        if (size < (64L << 20) || size % (1 << 20) != 0) {
            throw new IllegalArgumentException("--size " + size + " must be a multiple of 1 MiB and at least 64 MiB");
        }
        long smallSlots = size / 2 / 4096;
        long largeSlots = size / 2 / (1 << 20);
        if (small < 0 || small > smallSlots || large < 0 || large > largeSlots) {
            throw new IllegalArgumentException("--small " + small + " / --large " + large + " must fit the device: at"
                    + " most " + smallSlots + " 4 KiB and " + largeSlots + " 1 MiB blocks for --size " + size);
        }
        List<IoEngine> list = new ArrayList<>();
        for (String e : engines) {
            IoEngine engine = IoEngine.parse(e.trim());
            if (engine != IoEngine.IO_URING && engine != IoEngine.POSIX) {
                throw new IllegalArgumentException("--engines: " + engine + " cannot run on a file; use io_uring, posix");
            }
            list.add(engine);
        }
        if (list.contains(IoEngine.IO_URING) && !Uring.isAvailable()) {
            out.println("io_uring is not available here, skipping it: " + Uring.unavailabilityCause().getMessage());
            list.remove(IoEngine.IO_URING);
        }
        boolean tempDir = dir == null;
        Path workDir = tempDir ? BlockDevices.directIoTempDir("fdpblock-engines-") : dir;
        Path file = BlockDevices.createFile(workDir.resolve("fdpblock-device.img"), size);
        try {
            out.printf("fdpblock engines: %s device file %s, %d x 4 KiB + %d x 1 MiB random blocks per engine,"
                    + " queue depth %d, O_DIRECT%n%n", human(size), file, small, large, queueDepth);
            out.printf("%-9s %-13s %7s %10s %8s %10s %9s  %s%n", "engine", "phase", "ops", "bytes", "seconds", "IOPS",
                    "MB/s", "verified");
            long failures = 0;
            long seed = System.nanoTime();
            for (IoEngine engine : list) {
                DeviceOptions options = DeviceOptions.of(engine).withQueueDepth(Math.max(queueDepth, 1))
                        .withBuffers(1 << 20, Math.max(queueDepth, 1));
                try (BlockDevice device = BlockDevices.open(file, options)) {
                    RandomBlockWorkload w = new RandomBlockWorkload(device, queueDepth, seed);
                    failures += report(out, engine, w.run(4096, 0, size / 2, small));
                    failures += report(out, engine, w.run(1 << 20, size / 2, size / 2, large));
                }
            }
            out.println();
            if (failures == 0) {
                out.printf("Verified: every block read back equals what was written (%d blocks per engine).%n",
                        small + large);
                return 0;
            }
            out.printf("FAILED: %d blocks read back differ from what was written.%n", failures);
            return 1;
        } finally {
            Files.deleteIfExists(file);
            if (tempDir) {
                Files.deleteIfExists(workDir);
            }
        }
    }

    private static long report(PrintStream out, IoEngine engine, RandomBlockWorkload.Result r) {
        String size = r.blockSize() >= (1 << 20) ? "1 MiB" : "4 KiB";
        print(out, engine, "write " + size, r.blocks(), r.blockSize(), r.writeNanos(), "-");
        print(out, engine, "read " + size, r.blocks(), r.blockSize(), r.readNanos(),
                (r.blocks() - r.mismatches()) + "/" + r.blocks());
        return r.mismatches();
    }

    private static void print(PrintStream out, IoEngine engine, String phase, int ops, int blockSize, long nanos,
            String verified) {
        double sec = nanos / 1e9;
        long bytes = (long) ops * blockSize;
        out.printf("%-9s %-13s %7d %10s %8.3f %10.0f %9.1f  %s%n", engine, phase, ops, human(bytes), sec,
                sec > 0 ? ops / sec : 0, sec > 0 ? bytes / sec / 1e6 : 0, verified);
    }

    static String human(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        return bytes >= 1 << 20 ? String.format("%.1f MiB", bytes / 1048576.0) : (bytes >> 10) + " KiB";
    }

}
