package io.fdpblock.sim;

import io.fdpblock.tools.util.Sizes;

import java.io.PrintStream;
import java.util.Locale;
import java.util.stream.Collectors;

/** The text report of a simulation: what was replayed, the model, WAF, and a table per handle. */
public final class SimulationReport {
    private SimulationReport() {}

    public static void print(SimulationResult r, PrintStream out) {
        TraceFormat.Header h = r.traceHeader();
        ModelConfig c = r.config();
        out.printf(Locale.ROOT, "trace     %s: %,d records (%,d writes of %s, %,d deallocations of %s, %,d flushes),"
                        + " recorded on a %s device of %d-byte blocks%n", r.trace(), r.records(), r.writes(),
                Sizes.human(r.traceWriteBytes()), r.deallocations(), Sizes.human(r.traceDeallocateBytes()), r.flushes(),
                Sizes.human(h.deviceBytes()), h.lbaBytes());
        if (r.trailingBytes() > 0) {
            out.printf(Locale.ROOT, "          warning: %d bytes after the last whole record were ignored (the trace was"
                    + " cut short, e.g. by a crash)%n", r.trailingBytes());
        }
        out.printf(Locale.ROOT, "model     %s namespace, %s of media: %s; mapping unit %s%s%n", Sizes.human(c.logicalBytes()),
                Sizes.human(c.physicalBytes()), describe(c), Sizes.human(c.unitBytes()),
                r.precondition() ? "; written full before the trace" : "");
        out.printf(Locale.ROOT, "result    WAF %.3f (media %s / host %s), garbage collection copied %s, %,d reclaim units"
                        + " erased%n", r.waf(), Sizes.human(r.mediaBytes()), Sizes.human(r.hostBytes()), Sizes.human(r.gcCopiedBytes()),
                r.erases());
        if (r.hostBytes() != r.traceWriteBytes()) {
            out.printf(Locale.ROOT, "          host bytes are the trace's %s rounded out to whole %s mapping units%n",
                    Sizes.human(r.traceWriteBytes()), Sizes.human(c.unitBytes()));
        }
        if (r.invalidPlacementWrites() > 0) {
            out.printf(Locale.ROOT, "          %,d writes named a placement id with no handle: written as id 0, as the"
                    + " emulated device does%n", r.invalidPlacementWrites());
        }
        double sec = r.simulationNanos() / 1e9;
        out.printf(Locale.ROOT, "          replayed in %.2f s (%s of host writes per second)%n", sec,
                Sizes.human((long) (r.hostBytes() / Math.max(sec, 1e-9))));
        out.println();
        out.printf(Locale.ROOT, "%-6s %-22s %-14s %12s %12s %12s%n", "handle", "type", "placement ids", "host written",
                "GC copied", "copied/host");
        for (SimulationResult.HandleStats s : r.handles()) {
            if (s.hostBytes() == 0 && s.gcCopiedBytes() == 0) {
                continue;
            }
            out.printf(Locale.ROOT, "%-6d %-22s %-14s %12s %12s %12s%n", s.handle(), s.type().label(), ids(s),
                    Sizes.human(s.hostBytes()), Sizes.human(s.gcCopiedBytes()), s.hostBytes() == 0 ? "-"
                            : String.format(Locale.ROOT, "%.3f", (double) s.gcCopiedBytes() / s.hostBytes()));
        }
        long idle = r.handles().stream().filter(s -> s.hostBytes() == 0 && s.gcCopiedBytes() == 0).count();
        if (idle > 0) {
            out.printf(Locale.ROOT, "(%d handle(s) unused)%n", idle);
        }
    }

    private static String ids(SimulationResult.HandleStats s) {
        String all = s.placementIds().stream().map(Object::toString).collect(Collectors.joining(","));
        return all.length() <= 14 ? all : all.substring(0, 11) + "...";
    }

    /** One line describing the model's parameters. */
    public static String describe(ModelConfig c) {
        long types = c.handleTypes().stream().distinct().count();
        String kind = types == 1 ? c.handleTypes().get(0).label() : "of mixed types";
        return String.format(Locale.ROOT, "%d reclaim group(s) x %d reclaim units of %s, %d handles %s, OP %.1f %%, GC %s",
                c.reclaimGroups(), c.reclaimUnitsPerGroup(), Sizes.human(c.reclaimUnitBytes()), c.handles(), kind,
                100 * c.overProvisioning(), c.gc().label());
    }
}
