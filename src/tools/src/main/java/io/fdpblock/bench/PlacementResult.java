package io.fdpblock.bench;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Every round of one placement case ({@link BenchCase.Kind#PLACEMENT}): the same write job three ways on
 * one NVMe namespace, all ours, and what placement through the block layer costs against the other two.
 */
public final class PlacementResult extends CaseRounds<PlacementResult.Round> {
    /** The three ways of one job. */
    public enum Side {
        /** io_uring WRITE(_FIXED) on the block device, no placement id: the baseline. */
        PLAIN("plain", "io_uring on the block device, no placement"),
        /** The same with every write's placement id as a write stream (SQE byte 44). */
        STREAM("stream", "io_uring on the block device, write stream"),
        /** NVMe passthru on the generic device, the same placement id as DTYPE 2 / DSPEC. */
        PASSTHRU("passthru", "uring_cmd on the generic device, placement id as DSPEC");

        private final String key;
        private final String description;

        Side(String key, String description) {
            this.key = key;
            this.description = description;
        }

        public String key() {
            return key;
        }

        public String description() {
            return description;
        }
    }

    /** One round: each side's measurement, or why it has none. */
    public record Round(int round, Map<Side, Measurement> measured, Map<Side, String> errors) {}

    private final Map<String, Object> setup = new LinkedHashMap<>();

    public PlacementResult(BenchCase benchCase) {
        super(benchCase);
    }

    /** What the case ran on (devices, placement id, stream), for the JSON. */
    public void setup(String key, Object value) {
        setup.put(key, value);
    }

    private List<Measurement> of(Side side) {
        return rounds().stream().map(r -> r.measured().get(side)).filter(m -> m != null).toList();
    }

    /** Median IOPS (4 KiB) or MB/s (1 MiB) of a side. */
    public double throughput(Side side) {
        return Stats.median(of(side), m -> benchCase().judgedByIops() ? m.iops() : m.mbPerSec());
    }

    /** Median CPU microseconds (user + system, the whole process) per operation of a side. */
    public double cpuMicrosPerOp(Side side) {
        return Stats.median(of(side), m -> m.ops() > 0 && !Double.isNaN(m.cpuSeconds()) ? m.cpuSeconds() * 1e6 / m.ops()
                : Double.NaN);
    }

    /** Throughput of {@code side} over that of {@code reference}. */
    public double throughputRatio(Side side, Side reference) {
        return Stats.ratio(throughput(side), throughput(reference));
    }

    /** CPU per operation of {@code side} over that of {@code reference} (above 1: it costs more). */
    public double cpuRatio(Side side, Side reference) {
        return Stats.ratio(cpuMicrosPerOp(side), cpuMicrosPerOp(reference));
    }

    /** One table row: throughput per side, then stream/plain and stream/passthru. */
    public String row() {
        if (skipped() != null) {
            return String.format(Locale.ROOT, "%-28s skipped: %s", benchCase().label(), skipped());
        }
        boolean iops = benchCase().judgedByIops();
        return String.format(Locale.ROOT, "%-28s %-5s %11s %11s %11s | %6s %6s | %8s %8s %8s | %6s %6s",
                benchCase().label(), throughputUnit(), num(throughput(Side.PLAIN), iops), num(throughput(Side.STREAM), iops),
                num(throughput(Side.PASSTHRU), iops), ratio(throughputRatio(Side.STREAM, Side.PLAIN)),
                ratio(throughputRatio(Side.STREAM, Side.PASSTHRU)), us(cpuMicrosPerOp(Side.PLAIN)),
                us(cpuMicrosPerOp(Side.STREAM)), us(cpuMicrosPerOp(Side.PASSTHRU)), ratio(cpuRatio(Side.STREAM, Side.PLAIN)),
                ratio(cpuRatio(Side.STREAM, Side.PASSTHRU)));
    }

    /** The two header lines of {@link #row()}. */
    public static String header() {
        String a = String.format(Locale.ROOT, "%-28s %-5s %11s %11s %11s | %6s %6s | %8s %8s %8s | %6s %6s", "case",
                "unit", "plain", "stream", "passthru", "stream", "stream", "CPU us", "CPU us", "CPU us", "CPU", "CPU");
        String b = String.format(Locale.ROOT, "%-28s %-5s %11s %11s %11s | %6s %6s | %8s %8s %8s | %6s %6s", "", "", "",
                "", "", "/plain", "/pass", "plain", "stream", "passthru", "s/plain", "s/pass");
        return a + System.lineSeparator() + b;
    }

    private static String num(double v, boolean iops) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, iops ? "%,.0f" : "%,.1f", v);
    }

    private static String us(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.1f", v);
    }

    private static String ratio(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.2fx", v);
    }

    public Map<String, Object> toMap() {
        Map<String, Object> m = caseMap(false, "compared");
        if (skipped() != null) {
            return m;
        }
        m.putAll(setup);
        Map<String, Object> sides = new LinkedHashMap<>();
        for (Side s : Side.values()) {
            sides.put(s.key(), s.description());
        }
        m.put("sides", sides);
        List<Map<String, Object>> rs = new ArrayList<>();
        for (Round r : rounds()) {
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("round", r.round());
            for (Side s : Side.values()) {
                Measurement me = r.measured().get(s);
                x.put(s.key(), me == null ? null : me.toMap());
                if (r.errors().get(s) != null) {
                    x.put(s.key() + "_error", r.errors().get(s));
                }
            }
            rs.add(x);
        }
        m.put("rounds", rs);
        Map<String, Object> med = new LinkedHashMap<>();
        med.put("unit", throughputUnit());
        for (Side s : Side.values()) {
            med.put(s.key(), CaseResult.nullIfNaN(throughput(s), 2));
            med.put(s.key() + "_cpu_us_per_op", CaseResult.nullIfNaN(cpuMicrosPerOp(s), 3));
        }
        m.put("median", med);
        Map<String, Object> ratios = new LinkedHashMap<>();
        ratios.put("throughput_stream_over_plain", CaseResult.nullIfNaN(throughputRatio(Side.STREAM, Side.PLAIN), 4));
        ratios.put("throughput_stream_over_passthru", CaseResult.nullIfNaN(throughputRatio(Side.STREAM, Side.PASSTHRU), 4));
        ratios.put("throughput_passthru_over_plain", CaseResult.nullIfNaN(throughputRatio(Side.PASSTHRU, Side.PLAIN), 4));
        ratios.put("cpu_per_op_stream_over_plain", CaseResult.nullIfNaN(cpuRatio(Side.STREAM, Side.PLAIN), 4));
        ratios.put("cpu_per_op_stream_over_passthru", CaseResult.nullIfNaN(cpuRatio(Side.STREAM, Side.PASSTHRU), 4));
        m.put("ratios", ratios);
        return m;
    }

    /** An empty per-side map. */
    static <V> Map<Side, V> perSide() {
        return new EnumMap<>(Side.class);
    }
}
