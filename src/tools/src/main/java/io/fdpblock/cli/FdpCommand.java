package io.fdpblock.cli;

import io.fdpblock.nvme.FdpRecords;
import io.fdpblock.nvme.NvmeNamespace;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;

/** {@code fdpblock fdp ...}: an operator's view of an NVMe namespace's Flexible Data Placement. */
@Command(name = "fdp", mixinStandardHelpOptions = true,
        description = "Inspect and steer NVMe Flexible Data Placement on a namespace (/dev/ngXnY). Admin log pages"
                + " need root (CAP_SYS_ADMIN).",
        subcommands = {FdpCommand.Status.class, FdpCommand.Configs.class, FdpCommand.Usage.class,
                FdpCommand.Stats.class, FdpCommand.Events.class, FdpCommand.Update.class})
public final class FdpCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** The device argument and --json, shared by every subcommand. */
    static final class Target {
        @Parameters(index = "0", paramLabel = "DEVICE", description = "NVMe generic character device, e.g. /dev/ng0n1")
        String device;

        @Option(names = "--json", description = "Print JSON instead of a table")
        boolean json;

        @Spec(Spec.Target.MIXEE)
        CommandSpec mixee;

        /** Opens DEVICE as an NVMe namespace; what plainly is not one is a bad argument (exit 2). */
        NvmeNamespace open() throws IOException {
            Path p = Path.of(device);
            if (!Files.exists(p)) {
                throw Cli.bad(mixee, "DEVICE " + device + " does not exist: name an NVMe namespace's generic device"
                        + " /dev/ngXnY (ls /dev/ng*)");
            }
            if (Files.isDirectory(p) || Files.isRegularFile(p)) {
                throw Cli.bad(mixee, "DEVICE " + device + " is a " + (Files.isDirectory(p) ? "directory"
                        : "regular file") + ": fdp commands need an NVMe namespace's generic device /dev/ngXnY"
                        + " (ls /dev/ng*)");
            }
            return NvmeNamespace.open(device);
        }
    }

    /** What a subcommand read: {@code json} for --json, else {@code table}; and the exit code. */
    record Reading(Object json, String table, int exitCode) {
        Reading(Object json, String table) {
            this(json, table, 0);
        }
    }

    /**
     * A subcommand on one namespace: DEVICE is opened for {@link #read(NvmeNamespace)}, what it read is
     * printed (as JSON with --json, else as a table) and the namespace closed.
     */
    abstract static class OnNamespace implements Callable<Integer> {
        @Mixin
        Target t;

        @Override
        public Integer call() throws Exception {
            try (NvmeNamespace ns = t.open()) {
                Reading r = read(ns);
                Json.print(t.json, r.json(), r.table());
                return r.exitCode();
            }
        }

        abstract Reading read(NvmeNamespace ns) throws IOException;
    }

    /** {@code head}, then a line for each of {@code rows}; no line separator after the last. */
    static <T> String lines(String head, List<T> rows, Function<T, String> line) {
        StringBuilder sb = new StringBuilder(head);
        for (T row : rows) {
            sb.append(System.lineSeparator()).append(line.apply(row));
        }
        return sb.toString();
    }

    @Command(name = "status", mixinStandardHelpOptions = true,
            description = "FDP support and state: controller attribute, feature, active configuration, RUH status, and the"
                    + " block device's write streams (Linux >= 6.16) mapped to placement handles.")
    static final class Status extends OnNamespace {
        @Override
        Reading read(NvmeNamespace ns) throws IOException {
            FdpRecords.ControllerInfo ctrl = ns.identifyController();
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("device", t.device);
            out.put("model", ctrl.model());
            out.put("nsid", ns.nsid());
            out.put("lba_size", ns.lbaSize());
            out.put("max_transfer_bytes", ns.maxTransferBytes());
            out.put("fdp_supported", ctrl.fdpSupported());
            StringBuilder sb = new StringBuilder();
            sb.append(String.format("%s  %s  nsid %d  LBA %d B  max transfer %d B%n", t.device, ctrl.model(),
                    ns.nsid(), ns.lbaSize(), ns.maxTransferBytes()));
            if (!ctrl.fdpSupported()) {
                out.put("fdp_enabled", false);
                sb.append("FDP: not supported by this controller (CTRATT bit 19 clear)");
                return new Reading(out, sb.toString(), 1);
            }
            int feature = ns.fdpFeature();
            boolean enabled = (feature & 1) != 0;
            out.put("fdp_enabled", enabled);
            out.put("configuration_index", (feature >>> 8) & 0xFF);
            sb.append(String.format("FDP: supported, %s, configuration %d, endurance group %d%n",
                    enabled ? "enabled" : "DISABLED", (feature >>> 8) & 0xFF, ns.enduranceGroup()));
            if (enabled) {
                FdpRecords.FdpConfiguration c = ns.activeFdpConfiguration();
                out.put("configuration", c);
                sb.append(String.format("  reclaim groups %d, handles %d, reclaim unit %d B, RGIF %d%n",
                        c.reclaimGroups(), c.reclaimUnitHandles(), c.reclaimUnitBytes(), c.rgif()));
                FdpRecords.RuhStatus rs = ns.ruhStatus();
                out.put("ruh_status", rs.entries());
                sb.append(ruhTable(rs)).append(System.lineSeparator());
                WriteStreamsReport.addTo(out, sb, ns, rs);
            }
            return new Reading(out, sb.toString().stripTrailing());
        }
    }

    /** The RUH Status table, one line per placement id. */
    static String ruhTable(FdpRecords.RuhStatus rs) {
        return lines(String.format("  %-8s %-6s %-12s %s", "PID", "RUHID", "EARUTR s", "RUAMW (LBAs)"), rs.entries(),
                e -> String.format("  0x%04x   %-6d %-12d %d", e.placementId(), e.ruhId(), e.earutrSec(),
                        e.availableMediaWritesLbas()));
    }

    @Command(name = "configs", mixinStandardHelpOptions = true, description = "The FDP configurations log (0x20).")
    static final class Configs extends OnNamespace {
        @Override
        Reading read(NvmeNamespace ns) throws IOException {
            FdpRecords.FdpConfigurations all = ns.fdpConfigurations();
            return new Reading(all, lines(String.format("%-5s %-6s %-5s %-5s %-6s %-14s %s", "index", "valid", "RGIF",
                    "NRG", "NRUH", "RU bytes", "handle types"), all.configurations(),
                    c -> String.format("%-5d %-6s %-5d %-5d %-6d %-14d %s", c.index(), c.valid(), c.rgif(),
                            c.reclaimGroups(), c.reclaimUnitHandles(), c.reclaimUnitBytes(), c.handleTypes())));
        }
    }

    @Command(name = "usage", mixinStandardHelpOptions = true,
            description = "Reclaim unit handle usage log (0x21) and RUH status.")
    static final class Usage extends OnNamespace {
        @Override
        Reading read(NvmeNamespace ns) throws IOException {
            FdpRecords.RuhUsage u = ns.ruhUsage();
            FdpRecords.RuhStatus rs = ns.ruhStatus();
            return new Reading(Map.of("ruh_attributes", u.attributes(), "ruh_status", rs.entries()),
                    "RUH attributes (0 unused, 1 host, 2 controller): " + u.attributes() + System.lineSeparator()
                            + ruhTable(rs));
        }
    }

    @Command(name = "stats", mixinStandardHelpOptions = true,
            description = "FDP statistics (0x22): host and media bytes written, media bytes erased (WAF = the change in"
                    + " media bytes written / the change in host bytes written between two readings).")
    static final class Stats extends OnNamespace {
        @Override
        Reading read(NvmeNamespace ns) throws IOException {
            FdpRecords.FdpStatistics s = ns.fdpStatistics();
            return new Reading(s, String.format("host bytes written   %s%nmedia bytes written  %s%nmedia bytes erased   %s",
                    s.hostBytesWritten(), s.mediaBytesWritten(), s.mediaBytesErased()));
        }
    }

    @Command(name = "events", mixinStandardHelpOptions = true, description = "FDP events log (0x23).")
    static final class Events extends OnNamespace {
        @Option(names = "--controller", description = "Controller events instead of host events")
        boolean controller;

        @Override
        Reading read(NvmeNamespace ns) throws IOException {
            List<FdpRecords.FdpEvent> events = ns.fdpEvents(!controller);
            return new Reading(events, lines(events.size() + " events", events,
                    e -> String.format("  %-40s pid 0x%04x nsid %d rg %d ts %d", e.typeName(), e.placementId(),
                            e.nsid(), e.reclaimGroup(), e.timestamp())));
        }
    }

    @Command(name = "update", mixinStandardHelpOptions = true,
            description = "RUH Update: move placement ids to fresh reclaim units (all reported ids when none given).")
    static final class Update extends OnNamespace {
        @Spec
        CommandSpec spec;

        @Parameters(index = "1..*", paramLabel = "PID", description = "Placement ids (decimal or 0x...) the namespace"
                + " reports (see fdp status)")
        List<String> ids = new ArrayList<>();

        /** The PIDs given, checked before DEVICE is opened. */
        private final List<Integer> pids = new ArrayList<>();

        @Override
        public Integer call() throws Exception {
            for (String s : ids) {
                int pid;
                try {
                    pid = Integer.decode(s.trim());
                } catch (NumberFormatException e) {
                    throw Cli.bad(spec, "PID '" + s + "' is not a number: give placement ids in decimal or 0x...,"
                            + " in 0..65535");
                }
                pids.add(Cli.intIn(spec, "PID", pid, 0, 0xFFFF, "a placement id"));
            }
            return super.call();
        }

        @Override
        Reading read(NvmeNamespace ns) throws IOException {
            List<Integer> known = ns.ruhStatus().placementIds();
            for (int pid : pids) {
                if (!known.contains(pid)) {
                    throw Cli.bad(spec, String.format("placement id 0x%x is not one %s reports (%s): give one of"
                            + " those (fdpblock fdp status %s lists them)", pid, t.device, known, t.device));
                }
            }
            if (pids.isEmpty()) {
                pids.addAll(known);
            }
            ns.ruhUpdate(pids.stream().mapToInt(Integer::intValue).toArray());
            FdpRecords.RuhStatus rs = ns.ruhStatus();
            return new Reading(Map.of("updated", pids, "ruh_status", rs.entries()),
                    "updated " + pids + System.lineSeparator() + ruhTable(rs));
        }
    }
}
