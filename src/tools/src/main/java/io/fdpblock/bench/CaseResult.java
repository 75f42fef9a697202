package io.fdpblock.bench;

import io.fdpblock.device.IoEngine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Every round of one case, the medians, the ratios and the targets it was judged by. */
public final class CaseResult extends CaseRounds<CaseResult.Round> {
    /** One round: ours, then the reference (either may be missing, with the reason). */
    public record Round(int round, Measurement ours, String oursError, Measurement fio, String fioError) {}

    /** A target: {@code actual op required}, e.g. ratio >= 1.0 or median < 200 us. */
    public record Target(String name, String op, double required, double actual) {
        public Boolean met() {
            if (Double.isNaN(actual)) {
                return null;
            }
            return switch (op) {
                case ">=" -> actual >= required;
                case "<" -> actual < required;
                default -> throw new IllegalStateException(op);
            };
        }

        public String describe() {
            return op + (required == Math.rint(required) && required >= 10 ? String.format("%.0f", required)
                    : String.format("%.2f", required));
        }
    }

    private String note;
    private AdapterWorkload.LookupResult lookup;
    private final List<AdapterWorkload.LookupResult> lookupRounds = new ArrayList<>();

    public CaseResult(BenchCase benchCase) {
        super(benchCase);
    }

    public String note() {
        return note;
    }

    public void note(String n) {
        note = note == null ? n : note + "; " + n;
    }

    public AdapterWorkload.LookupResult lookup() {
        return lookup;
    }

    /** The rounds of the lookup case: the case's figures are of every round's samples together. */
    public void lookup(List<AdapterWorkload.LookupResult> rounds) {
        lookupRounds.clear();
        lookupRounds.addAll(rounds);
        AdapterWorkload.LookupResult last = rounds.getLast();
        long[] merged = rounds.stream().flatMapToLong(x -> Arrays.stream(x.sortedNanos())).sorted().toArray();
        long misses = rounds.stream().mapToLong(AdapterWorkload.LookupResult::misses).sum();
        double faults = rounds.stream().mapToDouble(AdapterWorkload.LookupResult::minorFaultsPerLookup).average()
                .orElse(Double.NaN);
        lookup = new AdapterWorkload.LookupResult(merged, last.keys(), misses, last.adapterStatus(), last.where(),
                Stats.median(rounds, AdapterWorkload.LookupResult::cpuMedianMicros), faults,
                Stats.median(rounds, AdapterWorkload.LookupResult::processCpuCores));
    }

    private List<Measurement> ours() {
        return rounds().stream().map(Round::ours).filter(m -> m != null).toList();
    }

    private List<Measurement> fio() {
        return rounds().stream().map(Round::fio).filter(m -> m != null).toList();
    }

    public boolean hasOurs() {
        return !ours().isEmpty();
    }

    public boolean hasFio() {
        return !fio().isEmpty();
    }

    /** Median of the case's primary figure: IOPS for 4 KiB, MB/s for 1 MiB. */
    public double oursThroughput() {
        return Stats.median(ours(), this::throughput);
    }

    public double fioThroughput() {
        return Stats.median(fio(), this::throughput);
    }

    private double throughput(Measurement m) {
        return benchCase().judgedByIops() ? m.iops() : m.mbPerSec();
    }

    /**
     * Work per CPU-second, in the case's unit: operations for 4 KiB cases, megabytes for 1 MiB ones (fio's
     * passthru job may run two 512 KiB commands where ours runs one 1 MiB I/O: bytes compare, operations not).
     */
    public double oursIopsPerCpuSec() {
        return Stats.median(ours(), this::perCpuSec);
    }

    private double perCpuSec(Measurement m) {
        return benchCase().judgedByIops() ? m.iopsPerCpuSec() : m.cpuSeconds() > 0 ? m.bytes() / 1e6 / m.cpuSeconds()
                : Double.NaN;
    }

    /** "IOPS" or "MB" per CPU-second. */
    public String perCpuUnit() {
        return benchCase().judgedByIops() ? "IOPS" : "MB";
    }

    public double fioIopsPerCpuSec() {
        return Stats.median(fio(), this::perCpuSec);
    }

    public double oursCpuCores() {
        return Stats.median(ours(), Measurement::cpuCores);
    }

    public double fioCpuCores() {
        return Stats.median(fio(), Measurement::cpuCores);
    }

    public double throughputRatio() {
        return Stats.ratio(oursThroughput(), fioThroughput());
    }

    public double cpuEfficiencyRatio() {
        return Stats.ratio(oursIopsPerCpuSec(), fioIopsPerCpuSec());
    }

    /** The bench's targets that apply to this case (ratios ours/fio of medians). */
    public List<Target> targets() {
        List<Target> t = new ArrayList<>();
        BenchCase c = benchCase();
        switch (c.kind()) {
            case RAW -> {
                if (c.engine() == IoEngine.URING_CMD) { // passthru, in the emulated guest
                    t.add(new Target((c.judgedByIops() ? "IOPS" : "bandwidth") + " ours/fio", ">=", 0.9,
                            throughputRatio()));
                } else if (c.judgedByIops()) {
                    t.add(new Target("IOPS ours/fio", ">=", 1.0, throughputRatio()));
                    if (c.rings() == 1) {
                        t.add(new Target("IOPS per CPU-second ours/fio", ">=", c.queueDepth() == 1 ? 0.8 : 1.0,
                                cpuEfficiencyRatio()));
                    }
                } else {
                    t.add(new Target("bandwidth ours/fio", ">=", 1.0, throughputRatio()));
                }
            }
            case ADAPTER_STORE, ADAPTER_STORE_HEADROOM, ADAPTER_STORE_EVICT_ROUNDS, ADAPTER_LOAD, ADAPTER_LOAD_VERIFY_RECOVERY -> {
                t.add(new Target("bandwidth ours/fio", ">=", 0.95, throughputRatio()));
                // CPU per byte <= 2x fio's (judged with verify_payload "recovery"). Not for a load under
                // "always": it computes the CRC32C of every payload, the cost "recovery" is there to trade away
                // (the bench measures the checksum alone beside it); a store computes it under either setting.
                if (c.kind() != BenchCase.Kind.ADAPTER_LOAD) {
                    t.add(new Target("MB per CPU-second ours/fio", ">=", 0.5, cpuEfficiencyRatio()));
                }
            }
            case ADAPTER_LOOKUP -> t.add(new Target("submit to eventfd signal, median us", "<", 100,
                    lookup == null ? Double.NaN : lookup.medianMicros()));
        }
        return t;
    }

    /** Median over the rounds of a number our side (or fio's) recorded under {@code key}; NaN when none did. */
    public double medianExtra(boolean ours, String key) {
        return Stats.median(ours ? ours() : fio(), m -> m.extra().get(key) instanceof Number n ? n.doubleValue()
                : Double.NaN);
    }

    /** fio's most frequent I/Os per submit call over the rounds' {@code iodepth_submit}, e.g. "1-4 (100%)". */
    public String fioSubmitBatch() {
        Measurement last = fio().isEmpty() ? null : fio().get(fio().size() - 1);
        if (last == null || !(last.extra().get("iodepth_submit") instanceof Map<?, ?> dist)) {
            return "-";
        }
        String best = null;
        double bestPct = -1;
        String prev = "0";
        String bestFrom = null;
        for (Map.Entry<?, ?> e : dist.entrySet()) {
            double pct = e.getValue() instanceof Number n ? n.doubleValue() : 0;
            String bucket = String.valueOf(e.getKey());
            if (pct > bestPct) {
                bestPct = pct;
                best = bucket;
                bestFrom = prev;
            }
            prev = bucket;
        }
        if (best == null) {
            return "-";
        }
        String range = best.startsWith(">=") ? best : (bestFrom.equals("0") ? "1" : String.valueOf(
                Integer.parseInt(bestFrom) + 1)) + "-" + best;
        return String.format(Locale.ROOT, "%s (%.0f%%)", range, bestPct);
    }

    public Map<String, Object> toMap() {
        Map<String, Object> m = caseMap(true, "reference");
        if (note != null) {
            m.put("note", note);
        }
        if (benchCase().kind() == BenchCase.Kind.ADAPTER_LOOKUP) {
            if (lookup != null) {
                Map<String, Object> l = new LinkedHashMap<>();
                l.put("keys", lookup.keys());
                l.put("iterations", lookup.sortedNanos().length);
                l.put("on", lookup.where());
                l.put("median_us", Measurement.round(lookup.medianMicros(), 2));
                l.put("p90_us", Measurement.round(lookup.percentileMicros(90), 2));
                l.put("thread_cpu_median_of_rounds_us", Measurement.round(lookup.cpuMedianMicros(), 2));
                l.put("minor_faults_per_lookup", Measurement.round(lookup.minorFaultsPerLookup(), 2));
                l.put("p99_us", Measurement.round(lookup.percentileMicros(99), 2));
                l.put("max_us", Measurement.round(lookup.percentileMicros(100), 2));
                l.put("round_medians_us", lookupRounds.stream().map(x -> Measurement.round(x.medianMicros(), 2)).toList());
                l.put("round_thread_cpu_medians_us", lookupRounds.stream()
                        .map(x -> Measurement.round(x.cpuMedianMicros(), 2)).toList());
                l.put("round_minor_faults_per_lookup", lookupRounds.stream()
                        .map(x -> Measurement.round(x.minorFaultsPerLookup(), 2)).toList());
                l.put("round_process_cpu_cores", lookupRounds.stream()
                        .map(x -> Measurement.round(x.processCpuCores(), 3)).toList());
                l.put("misses", lookup.misses());
                l.put("adapter_histogram_submit_to_signal", lookup.adapterStatus());
                m.put("lookup", l);
            }
        } else {
            List<Map<String, Object>> rs = new ArrayList<>();
            for (Round r : rounds()) {
                Map<String, Object> x = new LinkedHashMap<>();
                x.put("round", r.round());
                x.put("ours", r.ours() == null ? null : r.ours().toMap());
                if (r.oursError() != null) {
                    x.put("ours_error", r.oursError());
                }
                x.put("fio", r.fio() == null ? null : r.fio().toMap());
                if (r.fioError() != null) {
                    x.put("fio_error", r.fioError());
                }
                rs.add(x);
            }
            m.put("rounds", rs);
            Map<String, Object> med = new LinkedHashMap<>();
            med.put("unit", throughputUnit());
            med.put("ours", nullIfNaN(oursThroughput(), 2));
            med.put("fio", nullIfNaN(fioThroughput(), 2));
            med.put("per_cpu_sec_unit", perCpuUnit()); // IOPS for 4 KiB cases, MB for 1 MiB ones
            med.put("ours_per_cpu_sec", nullIfNaN(oursIopsPerCpuSec(), 1));
            med.put("fio_per_cpu_sec", nullIfNaN(fioIopsPerCpuSec(), 1));
            med.put("ours_cpu_cores", nullIfNaN(oursCpuCores(), 3));
            med.put("fio_cpu_cores", nullIfNaN(fioCpuCores(), 3));
            for (String k : new String[] {"depth_littles_law", "lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p999_us"}) {
                med.put("ours_" + k, nullIfNaN(medianExtra(true, k), 2));
                med.put("fio_" + k, nullIfNaN(medianExtra(false, k), 2));
            }
            for (String k : new String[] {"ring_depth_avg", "io_uring_enters_per_io", "sqes_per_submit", "wakeups_per_io"}) {
                med.put("ours_" + k, nullIfNaN(medianExtra(true, k), 3));
            }
            m.put("median", med);
            Map<String, Object> ratio = new LinkedHashMap<>();
            ratio.put("throughput", nullIfNaN(throughputRatio(), 4));
            ratio.put("per_cpu_sec", nullIfNaN(cpuEfficiencyRatio(), 4));
            m.put("ours_over_fio", ratio);
        }
        List<Map<String, Object>> ts = new ArrayList<>();
        for (Target t : targets()) {
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("name", t.name());
            x.put("required", t.op() + " " + t.required());
            x.put("actual", nullIfNaN(t.actual(), 4));
            x.put("met", t.met());
            ts.add(x);
        }
        m.put("targets", ts);
        return m;
    }

    static Double nullIfNaN(double v, int digits) {
        return Double.isNaN(v) ? null : Measurement.round(v, digits);
    }
}
