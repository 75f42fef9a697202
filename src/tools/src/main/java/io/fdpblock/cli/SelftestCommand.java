package io.fdpblock.cli;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.linux.Errno;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import io.fdpblock.uring.Uring;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code fdpblock selftest}: which features this machine (and optionally an NVMe namespace) has, each
 * checked by doing it: a directory where O_DIRECT opens, a write and read-back through registered
 * buffers with the fixed-buffer path counted, and with {@code --device} an NVMe passthru read.
 */
@Command(name = "selftest", mixinStandardHelpOptions = true,
        description = "Probe the features fdpblock uses, one line each, each checked by doing it: kernel, io_uring"
                + " and its setup flags, a directory that supports O_DIRECT, a write and read-back through registered"
                + " buffers (the fixed-buffer path counted), and with --device an NVMe passthru read and FDP."
                + " Exit 0 when every check that ran passed (passthru only with --device), 1 otherwise.")
public final class SelftestCommand implements Callable<Integer> {
    @Option(names = "--device", description = "An NVMe generic device (/dev/ngXnY) to probe passthru and FDP on"
            + " (read only: LBA 0 is read, nothing is written)")
    String device;

    private int failures;

    private void line(String feature, boolean ok, String detail) {
        System.out.printf("%-22s %-4s %s%n", feature, ok ? "ok" : "NO", detail);
    }

    /** A line that counts: NO makes the exit code 1. */
    private void check(String feature, boolean ok, String detail) {
        line(feature, ok, detail);
        if (!ok) {
            failures++;
        }
    }

    @Override
    public Integer call() throws Exception {
        line("kernel", true, Files.readString(Path.of("/proc/sys/kernel/osrelease")).trim());
        boolean uring = Uring.isAvailable();
        check("io_uring", uring, uring ? "liburing.so.2 loaded, ring set up" : Uring.unavailabilityCause().getMessage());
        if (uring) {
            try (Ring r = Ring.open(RingOptions.of(8))) {
                line("setup flags", true, Ring.describeFlags(r.setupFlags()) + " (after fallbacks)");
            }
            boolean big = Uring.isBigEntriesAvailable();
            String bigDetail = big ? "NVMe passthru rings possible"
                    : String.valueOf(Uring.bigEntriesUnavailabilityCause().getMessage());
            if (device != null) {
                check("SQE128/CQE32", big, bigDetail);
            } else {
                line("SQE128/CQE32", big, bigDetail);
            }
            fileChecks();
        }
        if (device != null) {
            passthruChecks();
        } else {
            line("NVMe passthru", false, "not checked: no --device /dev/ngXnY given");
        }
        WriteStreamsReport.Line streams = WriteStreamsReport.selftest(device); // informational: few kernels have them
        line("write streams", streams.ok(), streams.detail());
        if (failures > 0) {
            System.out.println(failures + " check(s) failed");
        }
        return failures == 0 ? 0 : 1;
    }

    /** O_DIRECT in a temp dir, then a write and read-back through registered buffers on a file there. */
    private void fileChecks() throws IOException {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        String tmpProblem = directIoProblem(tmp);
        try (Scratch scratch = new Scratch("fdpblock-selftest-", System.err)) {
            Path dir;
            try {
                dir = scratch.dir();
            } catch (IOException e) {
                check("O_DIRECT", false, "no temp dir supports it (" + tmp + ": " + tmpProblem + "; /var/tmp: "
                        + Cli.describe(e) + "): file devices need a disk file system");
                return;
            }
            check("O_DIRECT", true, tmpProblem == null ? "opens in " + tmp + " (java.io.tmpdir)"
                    : "opens in " + dir.getParent() + ", where temp devices go; java.io.tmpdir " + tmp + " does not ("
                            + tmpProblem + ")");
            Path file = BlockDevices.createFile(dir.resolve("selftest.img"), 1 << 20);
            try (BlockDevice d = BlockDevices.open(file, DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 16, 2))) {
                MemorySegment out = d.buffers().acquire();
                MemorySegment in = d.buffers().acquire();
                try {
                    for (long i = 0; i < out.byteSize(); i++) {
                        out.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
                    }
                    IoBatch w = new IoBatch(1);
                    w.write(0, out);
                    d.execute(w);
                    IoBatch r = new IoBatch(1);
                    r.read(0, in);
                    d.execute(r);
                    boolean same = in.mismatch(out) < 0;
                    long fixed = d.fixedBufferOps();
                    check("fixed buffers", same && fixed >= 2, !same ? "the bytes read back differ from those written"
                            : fixed >= 2 ? "a 64 KiB write and read-back on a file in " + dir.getParent()
                                    + " took READ_FIXED/WRITE_FIXED (" + fixed + " ops)"
                            : "the write and read-back took the unregistered path (" + fixed + " fixed ops): buffer"
                                    + " registration failed (RLIMIT_MEMLOCK? see ulimit -l)");
                } finally {
                    d.buffers().release(out);
                    d.buffers().release(in);
                }
            } catch (IOException | RuntimeException e) {
                check("fixed buffers", false, Cli.describe(e));
            }
        }
    }

    /** Why O_DIRECT does not open in {@code dir}, or null when it does. */
    private static String directIoProblem(Path dir) {
        Path probe = null;
        try {
            probe = Files.createTempFile(dir, "fdpblock-selftest-", ".probe");
            NativeFile.open(probe, true, false, true).close();
            return null;
        } catch (Errno.NativeIOException e) {
            return e.errno() == Errno.EINVAL ? "EINVAL: the file system rejects O_DIRECT (tmpfs on older kernels)"
                    : e.getMessage();
        } catch (IOException e) {
            return Cli.describe(e);
        } finally {
            if (probe != null) {
                try {
                    Files.deleteIfExists(probe);
                } catch (IOException e) {
                    // a probe left behind is harmless
                }
            }
        }
    }

    /** An NVMe passthru read of LBA 0 through a registered buffer, then what the namespace says about FDP. */
    private void passthruChecks() {
        try (BlockDevice d = BlockDevices.open(Path.of(device),
                DeviceOptions.of(IoEngine.URING_CMD).withBuffers(1 << 16, 1))) {
            MemorySegment buf = d.buffers().acquire();
            try {
                int len = Math.max(d.logicalBlockSize(), 4096);
                IoBatch r = new IoBatch(1);
                r.read(0, buf.asSlice(0, len));
                d.execute(r);
                check("NVMe passthru", true, "read " + len + " bytes at LBA 0 of " + device
                        + " through IORING_OP_URING_CMD" + (d.fixedBufferOps() > 0 ? " with a registered buffer"
                                : " (buffer not registered: the unregistered path)"));
            } finally {
                d.buffers().release(buf);
            }
        } catch (IOException | RuntimeException e) {
            check("NVMe passthru", false, Cli.describe(e));
            return;
        }
        try (NvmeNamespace ns = NvmeNamespace.open(device)) {
            line("namespace", true, ns.toString());
            boolean admin = NvmeNamespace.hasAdminCapability();
            line("admin commands", admin, admin ? "CAP_SYS_ADMIN" : "not root: FDP logs and features unavailable");
            if (admin) {
                boolean supported = ns.identifyController().fdpSupported();
                boolean enabled = supported && ns.isFdpEnabled();
                line("FDP", enabled, !supported ? "not supported (CTRATT bit 19 clear)"
                        : enabled ? "enabled, placement ids " + ns.ruhStatus().placementIds() : "supported but disabled");
                line("admin transport", true, ns.adminTransport());
            }
        } catch (IOException | RuntimeException e) {
            check("namespace", false, Cli.describe(e));
        }
    }
}
