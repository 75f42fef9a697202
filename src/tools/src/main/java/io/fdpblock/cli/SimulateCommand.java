package io.fdpblock.cli;

import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.sim.GcPolicy;
import io.fdpblock.sim.HandleType;
import io.fdpblock.sim.ModelConfig;
import io.fdpblock.sim.Simulation;
import io.fdpblock.sim.SimulationReport;
import io.fdpblock.sim.SimulationResult;
import io.fdpblock.sim.TraceFormat;
import io.fdpblock.sim.TraceReader;

import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code fdpblock simulate --trace FILE}: the trace through the FDP SSD model; WAF, per handle, over time. */
@Command(name = "simulate", mixinStandardHelpOptions = true,
        description = {"Replay a write trace (from `fdpblock run --trace`, or TracingBlockDevice) through a model of an"
                + " FDP SSD: reclaim groups of reclaim units, one open unit per handle, garbage collection copying valid"
                + " data. Prints WAF (media / host bytes), garbage-collection copies per handle and a WAF-over-time"
                + " chart.",
                "Defaults: the traced device's size, LBA size, reclaim unit size and handle count when the trace has them,"
                        + " else the emulated device's (1 GiB, 4 KiB blocks, 1 reclaim group, 8 initially isolated"
                        + " handles, 8 MiB reclaim units); 7 %% over-provisioning; greedy GC."})
public final class SimulateCommand implements Callable<Integer> {
    @Option(names = "--trace", required = true, paramLabel = "FILE", description = "The trace to replay")
    Path trace;

    @Option(names = "--device", paramLabel = "/dev/ngXnY",
            description = "Take the geometry from this FDP namespace: size, LBA size, and its active FDP configuration"
                    + " (reclaim groups, reclaim unit size, handle types, RGIF) and RUH Status (root)")
    String device;

    @Option(names = "--op", paramLabel = "FRACTION", description = "Over-provisioning: media beyond the namespace, as a"
            + " fraction of it (default ${DEFAULT-VALUE})", defaultValue = "0.07")
    double op;

    @Option(names = "--gc", paramLabel = "POLICY", defaultValue = "greedy",
            description = "Victim selection: greedy (fewest valid), cost-benefit (LFS), fifo (default ${DEFAULT-VALUE})")
    String gc;

    @Option(names = "--handle-type", paramLabel = "TYPE",
            description = "Make every handle initially (relocated data of all such handles shares units) or persistently"
                    + " (relocated data stays per handle) isolated")
    String handleType;

    @Option(names = "--handles", paramLabel = "N", description = "Reclaim unit handles (placement ids 0..N-1 name them)")
    Integer handles;

    @Option(names = "--ru-size", paramLabel = "BYTES", converter = SizeConverter.class,
            description = "Reclaim unit size (RUNS), e.g. 8M, 1G")
    Long ruSize;

    @Option(names = "--reclaim-groups", paramLabel = "N", description = "Reclaim groups (placement ids carry the group"
            + " in their top bits)")
    Integer reclaimGroups;

    @Option(names = "--namespace-size", paramLabel = "BYTES", converter = SizeConverter.class,
            description = "Model a namespace of this size (at least the traced device's)")
    Long namespaceSize;

    @Option(names = "--map-unit", paramLabel = "BYTES", converter = SizeConverter.class,
            description = "Mapping unit of the model (default: the trace's LBA size, doubled while the maps would"
                    + " exceed 2^27 entries)")
    Long mapUnit;

    @Option(names = "--precondition", description = "Write the whole namespace once before the trace (not counted), as"
            + " a device that was full before")
    boolean precondition;

    @Option(names = "--chart", paramLabel = "FILE.png", description = "Where to draw the WAF-over-time chart (default:"
            + " the trace's path + .waf.png)")
    Path chart;

    @Option(names = "--no-chart", description = "Draw no chart")
    boolean noChart;

    @Option(names = "--json", description = "Print the result as JSON instead of the table")
    boolean json;

    @Override
    public Integer call() throws Exception {
        if (!Files.exists(trace)) {
            throw new IllegalArgumentException("--trace " + trace + " does not exist: name a trace file (fdpblock run"
                    + " --trace FILE writes one)");
        }
        String what = Cli.notFileOrDevice(trace);
        if (what != null || !Files.isRegularFile(trace)) { // a FIFO's open waits for a writer forever
            throw new IllegalArgumentException("--trace " + trace + " is " + (what != null ? what : "a device")
                    + ", not a regular file: a trace is read from its header on; name a trace file (fdpblock run"
                    + " --trace FILE writes one)");
        }
        TraceFormat.Header h = TraceReader.readHeader(trace);
        ModelConfig c = config(h);
        SimulationResult r = Simulation.run(trace, c, precondition, Simulation.DEFAULT_SAMPLES);
        Path png = null;
        if (!noChart && r.writes() > 0) {
            png = WafChart.write(r, chart != null ? chart : trace.resolveSibling(trace.getFileName() + ".waf.png"));
        }
        if (json) {
            Json.print(r);
        } else {
            SimulationReport.print(r, System.out);
            if (png != null) {
                System.out.println();
                System.out.println("chart     " + png);
            }
        }
        return 0;
    }

    private ModelConfig config(TraceFormat.Header h) throws Exception {
        ModelConfig c = ModelConfig.forTrace(h);
        if (device != null) {
            try (NvmeNamespace ns = NvmeNamespace.open(device)) {
                c = ModelConfig.fromDevice(ns);
            }
        }
        c = c.withOverProvisioning(op).withGc(GcPolicy.parse(gc));
        if (namespaceSize != null) {
            c = c.withLogicalBytes(namespaceSize);
        }
        if (ruSize != null) {
            c = c.withReclaimUnitBytes(ruSize);
        }
        if (reclaimGroups != null) {
            c = c.withReclaimGroups(reclaimGroups);
        }
        if (handles != null) {
            c = c.withHandles(handles, c.handleTypes().get(0));
        }
        if (handleType != null) {
            c = c.withHandleType(HandleType.parse(handleType));
        }
        if (mapUnit != null) {
            if (mapUnit > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("--map-unit " + mapUnit + " is larger than 1 GiB: use a smaller one");
            }
            c = c.withUnitBytes(mapUnit.intValue());
        } else {
            c = c.withUnitFittingMaps(); // a huge namespace: coarser units keep the maps in memory
        }
        return c;
    }

    /** Sizes as bytes or with a binary suffix: 4096, 8K, 8M, 1G, 2T (KiB/MiB/... also accepted). */
    static final class SizeConverter implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            String v = value.trim().toUpperCase(Locale.ROOT).replace("IB", "").replace("B", "");
            int shift = 0;
            if (!v.isEmpty() && "KMGTP".indexOf(v.charAt(v.length() - 1)) >= 0) {
                shift = 10 * ("KMGTP".indexOf(v.charAt(v.length() - 1)) + 1);
                v = v.substring(0, v.length() - 1);
            }
            try {
                long n = Long.parseLong(v.trim());
                if (n <= 0 || n > Long.MAX_VALUE >> shift) {
                    throw new NumberFormatException();
                }
                return n << shift;
            } catch (NumberFormatException e) {
                throw new CommandLine.TypeConversionException("size '" + value + "' is not a positive number of bytes,"
                        + " optionally with K, M, G, T or P (binary: 8M = 8 MiB)");
            }
        }
    }
}
