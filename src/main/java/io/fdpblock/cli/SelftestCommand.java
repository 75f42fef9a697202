package io.fdpblock.cli;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import io.fdpblock.uring.Uring;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code fdpblock selftest}: which features this machine (and optionally an NVMe namespace) has. */
@Command(name = "selftest", mixinStandardHelpOptions = true,
        description = "Probe the features fdpblock uses, one line each: kernel, io_uring and its setup flags,"
                + " O_DIRECT with fixed buffers, and with --device NVMe passthru and FDP. Exit 0 when io_uring works.")
public final class SelftestCommand implements Callable<Integer> {
    @Option(names = "--device", description = "An NVMe generic device (/dev/ngXnY) to probe passthru and FDP on")
    String device;

    private static void line(String feature, boolean ok, String detail) {
        System.out.printf("%-22s %-4s %s%n", feature, ok ? "ok" : "NO", detail);
    }

    @Override
    public Integer call() throws Exception {
        line("kernel", true, Files.readString(Path.of("/proc/sys/kernel/osrelease")).trim());
        boolean uring = Uring.isAvailable();
        line("io_uring", uring, uring ? "liburing.so.2 loaded, ring set up" : Uring.unavailabilityCause().getMessage());
        if (uring) {
            try (Ring r = Ring.open(RingOptions.of(8))) {
                line("setup flags", true, Ring.describeFlags(r.setupFlags()) + " (after fallbacks)");
            }
            line("SQE128/CQE32", Uring.isBigEntriesAvailable(), Uring.isBigEntriesAvailable()
                    ? "NVMe passthru rings possible" : String.valueOf(Uring.bigEntriesUnavailabilityCause().getMessage()));
            Path tmp = Files.createTempFile("fdpblock-selftest", ".img");
            try (BlockDevice d = BlockDevices.open(BlockDevices.createFile(tmp, 1 << 20),
                    DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 16, 2))) {
                var buf = d.buffers().acquire();
                IoBatch b = new IoBatch();
                b.write(0, buf);
                d.execute(b);
                line("O_DIRECT + fixed", true, "write through a registered buffer in " + tmp.getParent());
            } catch (Exception e) {
                line("O_DIRECT + fixed", false, e.getMessage());
            } finally {
                Files.deleteIfExists(tmp);
            }
        }
        if (device != null) {
            try (NvmeNamespace ns = NvmeNamespace.open(device)) {
                line("NVMe passthru", true, ns.toString());
                boolean admin = NvmeNamespace.hasAdminCapability();
                line("admin commands", admin, admin ? "CAP_SYS_ADMIN" : "not root: FDP logs and features unavailable");
                if (admin) {
                    boolean supported = ns.identifyController().fdpSupported();
                    boolean enabled = supported && ns.isFdpEnabled();
                    line("FDP", enabled, !supported ? "not supported (CTRATT bit 19 clear)"
                            : enabled ? "enabled, placement ids " + ns.ruhStatus().placementIds() : "supported but disabled");
                    line("admin transport", true, ns.adminTransport());
                }
            } catch (Exception e) {
                line("NVMe passthru", false, e.getMessage());
            }
        } else {
            line("NVMe passthru", false, "no --device /dev/ngXnY given");
        }
        WriteStreamsReport.Line streams = WriteStreamsReport.selftest(device);
        line("write streams", streams.ok(), streams.detail());
        return uring ? 0 : 1;
    }
}
