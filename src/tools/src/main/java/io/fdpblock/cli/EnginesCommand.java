package io.fdpblock.cli;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.linux.IoMemory;
import io.fdpblock.tools.util.Sizes;
import io.fdpblock.uring.Uring;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
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
    @Spec
    CommandSpec spec;

    @Option(names = "--dir", description = "Directory for the device file (default: a new temp dir, removed after;"
            + " must support O_DIRECT); the file gets a new name there and is removed after")
    Path dir;

    @Option(names = "--size", defaultValue = "1073741824", description = "Device file size in bytes, a multiple of"
            + " 1 MiB, at least 64 MiB (default 1 GiB)")
    long size;

    @Option(names = "--small", defaultValue = "4000", description = "Random 4 KiB blocks per engine")
    int small;

    @Option(names = "--large", defaultValue = "200", description = "Random 1 MiB blocks per engine")
    int large;

    @Option(names = "--queue-depth", defaultValue = "32", description = "I/Os in flight, 1..4096")
    int queueDepth;

    @Option(names = "--engines", split = ",", defaultValue = "io_uring,posix",
            description = "Engines to run, comma-separated: io_uring, posix")
    List<String> engines;

    /** The largest queue depth an engine takes (IoUringBlockDevice's ring limit). */
    static final int MAX_QUEUE_DEPTH = 4096;

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        Cli.size(spec, "--size", size, 64L << 20, 1L << 50, 1 << 20);
        long smallSlots = Math.min(size / 2 / 4096, RandomBlockWorkload.MAX_BLOCKS);
        long largeSlots = Math.min(size / 2 / (1 << 20), RandomBlockWorkload.MAX_BLOCKS);
        Cli.longIn(spec, "--small", small, 0, smallSlots, "4 KiB blocks (half of --size " + size + ", at most "
                + RandomBlockWorkload.MAX_BLOCKS + ")");
        Cli.longIn(spec, "--large", large, 0, largeSlots, "1 MiB blocks (half of --size " + size + ")");
        if (small + large == 0) {
            throw Cli.bad(spec, "--small 0 and --large 0: a check of no blocks checks nothing; give at least one");
        }
        Cli.intIn(spec, "--queue-depth", queueDepth, 1, MAX_QUEUE_DEPTH, "I/Os in flight");
        Cli.fitsMemory(spec, "--queue-depth " + queueDepth + " buffers of 1 MiB", (long) queueDepth << 20,
                "--queue-depth");
        List<IoEngine> list = new ArrayList<>();
        for (String e : engines) {
            IoEngine engine;
            try {
                engine = IoEngine.parse(e.trim());
            } catch (IllegalArgumentException ex) {
                throw Cli.bad(spec, "--engines: '" + e + "' is not an engine: use io_uring, posix (comma-separated)");
            }
            if (engine != IoEngine.IO_URING && engine != IoEngine.POSIX) {
                throw Cli.bad(spec, "--engines: " + engine + " cannot run on a file; use io_uring, posix");
            }
            if (!list.contains(engine)) {
                list.add(engine);
            }
        }
        if (dir != null) {
            Cli.writableDirectory(spec, "--dir", dir);
        }
        if (list.contains(IoEngine.IO_URING) && !Uring.isAvailable()) {
            out.println("io_uring is not available here, skipping it: " + Uring.unavailabilityCause().getMessage());
            list.remove(IoEngine.IO_URING);
        }
        try (Scratch scratch = new Scratch("fdpblock-engines-", System.err)) {
            Path workDir = dir == null ? scratch.dir() : dir;
            // a name of our own: a user's file in --dir is never overwritten or removed
            Path file;
            try {
                if (dir == null) {
                    file = workDir.resolve("fdpblock-device.img");
                } else { // named here and tracked before it exists: a signal at any point leaves nothing
                    file = scratch.track(workDir.resolve("fdpblock-engines-"
                            + Long.toUnsignedString(new SecureRandom().nextLong()) + ".img"));
                    Files.createFile(file); // whether a file may be made there at all; made again at --size below
                    Files.delete(file);
                }
            } catch (IOException e) {
                throw Cli.bad(spec, "--dir " + dir + ": cannot create a file there (" + Cli.describe(e) + "); name a"
                        + " directory on a disk file system that you may write");
            }
            try {
                Cli.createDeviceFile(spec, "--size", file, size);
                return check(out, list, file);
            } finally {
                Files.deleteIfExists(file);
            }
        }
    }

    private int check(PrintStream out, List<IoEngine> list, Path file) throws IOException {
        out.printf("fdpblock engines: %s device file %s, %d x 4 KiB + %d x 1 MiB random blocks per engine,"
                + " queue depth %d, O_DIRECT; I/O buffers on %s%n%n", Sizes.human(size), file, small, large, queueDepth,
                IoMemory.hugePages());
        out.printf("%-9s %-13s %7s %10s %8s %10s %9s  %s%n", "engine", "phase", "ops", "bytes", "seconds", "IOPS",
                "MB/s", "verified");
        long failures = 0;
        long seed = System.nanoTime();
        for (IoEngine engine : list) {
            DeviceOptions options = DeviceOptions.of(engine).withQueueDepth(queueDepth).withBuffers(1 << 20, queueDepth);
            try (BlockDevice device = BlockDevices.open(file, options)) {
                RandomBlockWorkload w = new RandomBlockWorkload(device, queueDepth, seed);
                if (small > 0) {
                    failures += report(out, engine, w.run(4096, 0, size / 2, small));
                }
                if (large > 0) {
                    failures += report(out, engine, w.run(1 << 20, size / 2, size / 2, large));
                }
            }
        }
        out.println();
        if (list.isEmpty()) {
            out.println("FAILED: no engine could run here, nothing was checked.");
            return 1;
        }
        if (failures == 0) {
            out.printf("Verified: every block read back equals what was written (%d blocks per engine).%n",
                    small + large);
            return 0;
        }
        out.printf("FAILED: %d blocks read back differ from what was written.%n", failures);
        return 1;
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
        out.printf("%-9s %-13s %7d %10s %8.3f %10.0f %9.1f  %s%n", engine, phase, ops, Sizes.human(bytes), sec,
                sec > 0 ? ops / sec : 0, sec > 0 ? bytes / sec / 1e6 : 0, verified);
    }

}
