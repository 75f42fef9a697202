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
    /**
     * One round: ours, then the reference (either may be missing, with the reason).
     *
     * @param fioHugePages fio's job again with its buffers on huge pages, as ours are ({@code --mem=shmhuge}:
     *        1 MiB cases, when the hugetlb pages were there), or null
     * @param crc32cAlone the CRC32C alone measured beside the round ({@link Crc32cAlone}: the adapter's
     *        store and load cases), or null
     * @param fioSameWork fio's job on huge pages doing the work ours does beyond moving the bytes
     *        ({@link SameWork}): beside a second job flushing as often as ours' log commits (the adapter's
     *        stores), or checking the CRC32C of every block it reads (loads under {@code verify_payload}
     *        "always"), or null
     */
    public record Round(int round, Measurement ours, String oursError, Measurement fio, String fioError,
            Measurement fioHugePages, Measurement crc32cAlone, Measurement fioSameWork) {
        /** A round without fio on huge pages, without the CRC32C beside it and without fio doing ours' work. */
        public Round(int round, Measurement ours, String oursError, Measurement fio, String fioError) {
            this(round, ours, oursError, fio, fioError, null, null, null);
        }

        /** The fio the round's CPU per chunk is set against: on huge pages when it ran, else plain. */
        public Measurement fioLikeForLike() {
            return fioHugePages != null ? fioHugePages : fio;
        }
    }

    /** A target: {@code actual op required}, e.g. ratio >= 1.0 or median < 200 us. */
    public record Target(String name, String op, double required, double actual) {
        public Boolean met() {
            if (Double.isNaN(actual)) {
                return null;
            }
            return switch (op) {
                case ">=" -> actual >= required;
                case "<=" -> actual <= required;
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
                Stats.median(rounds, AdapterWorkload.LookupResult::processCpuCores),
                Stats.median(rounds, AdapterWorkload.LookupResult::hashOnceCpuMedianMicros));
    }

    private List<Measurement> ours() {
        return rounds().stream().map(Round::ours).filter(m -> m != null).toList();
    }

    private List<Measurement> fio() {
        return rounds().stream().map(Round::fio).filter(m -> m != null).toList();
    }

    private List<Measurement> fioHugePages() {
        return rounds().stream().map(Round::fioHugePages).filter(m -> m != null).toList();
    }

    private List<Measurement> fioSameWork() {
        return rounds().stream().map(Round::fioSameWork).filter(m -> m != null).toList();
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
        return benchCase().judgedByIops() ? m.iopsPerCpuSec() : m.mbPerCpuSec();
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

    /** ours/plain fio (its own malloc'd buffers), of the medians. */
    public double throughputRatio() {
        return Stats.ratio(oursThroughput(), fioThroughput());
    }

    /**
     * Whether the case's headline is like for like: a 1 MiB case (where fio's buffers on 4 KiB pages
     * handicap it: a request takes a DMA segment per page) with fio on huge pages in at least one round.
     */
    public boolean likeForLike() {
        return !benchCase().judgedByIops() && !fioHugePages().isEmpty();
    }

    /** Median of fio on huge pages, in the case's unit; NaN when it never ran. */
    public double fioHugePagesThroughput() {
        return Stats.median(fioHugePages(), this::throughput);
    }

    public double fioHugePagesPerCpuSec() {
        return Stats.median(fioHugePages(), this::perCpuSec);
    }

    /** ours/fio on huge pages, of the medians (ours of every round); NaN when fio on huge pages never ran. */
    public double hugePagesThroughputRatio() {
        return Stats.ratio(oursThroughput(), fioHugePagesThroughput());
    }

    /**
     * The work ours does beyond moving the bytes, and the fio that does it too: the reference a case so
     * marked is judged against, where fio's job alone pays for none of it.
     */
    public enum SameWork {
        /**
         * A store's durability costs a flush per log commit: fio's job beside a second job flushing as often
         * (on a virtual disk whose flush writes back the host's cache, each one stops the writes for as long
         * as it takes).
         */
        FLUSHES("fio_concurrent_flushes", "beside the same flushes", "F"),
        /**
         * A load under {@code verify_payload} "always" computes the CRC32C of every payload it reads: fio's job
         * with {@code --verify=crc32c}, reading a file it wrote with that check, checks every block it reads.
         */
        CRC32C_CHECK("fio_crc32c_verify", "checking the same CRC32C", "C");

        private final String key;
        private final String words;
        private final String mark;

        SameWork(String key, String words, String mark) {
            this.key = key;
            this.words = words;
            this.mark = mark;
        }

        /** The JSON key of that fio's figures, in each round and in the medians. */
        public String key() {
            return key;
        }

        /** What that fio does, after "fio on huge pages". */
        public String words() {
            return words;
        }

        /** The table's mark beside that fio's figure. */
        public String mark() {
            return mark;
        }
    }

    /** The work of {@link SameWork} ours does in this case, or null: none fio's job lacks. */
    public SameWork sameWork() {
        return switch (benchCase().kind()) {
            case ADAPTER_STORE, ADAPTER_STORE_HEADROOM, ADAPTER_STORE_EVICT_ROUNDS -> SameWork.FLUSHES;
            case ADAPTER_LOAD -> SameWork.CRC32C_CHECK;
            default -> null;
        };
    }

    /**
     * Whether the case is judged against fio on huge pages doing the same work as ours ({@link #sameWork}),
     * with that fio run in at least one round.
     */
    public boolean judgedOnSameWork() {
        return sameWork() != null && !benchCase().judgedByIops() && !fioSameWork().isEmpty();
    }

    /** Median of fio on huge pages doing the same work as ours, in the case's unit; NaN when it never ran. */
    public double fioSameWorkThroughput() {
        return Stats.median(fioSameWork(), this::throughput);
    }

    /** ours/fio on huge pages doing the same work, of the medians; NaN when that fio never ran. */
    public double sameWorkThroughputRatio() {
        return Stats.ratio(oursThroughput(), fioSameWorkThroughput());
    }

    /**
     * The ratio judged and printed first: ours/fio on huge pages doing the same work when
     * {@link #judgedOnSameWork}, else ours/fio on huge pages when {@link #likeForLike}, else ours/plain fio
     * (4 KiB cases, or fio on huge pages not run: the note says why).
     */
    public double headlineThroughputRatio() {
        return Stats.ratio(oursThroughput(), headlineFioThroughput());
    }

    /** Median of the reference the headline is against ({@link #judgedFio}), in the case's unit. */
    public double headlineFioThroughput() {
        return Stats.median(judgedFio(), this::throughput);
    }

    /**
     * The second reference, printed beside the headline: fio on huge pages alone (without the flushes or the
     * check) for a case {@link #judgedOnSameWork}, else plain fio for a {@link #likeForLike} one; NaN for none.
     */
    public double secondFioThroughput() {
        return judgedOnSameWork() ? fioHugePagesThroughput() : likeForLike() ? fioThroughput() : Double.NaN;
    }

    /** ours over {@link #secondFioThroughput}. */
    public double secondThroughputRatio() {
        return Stats.ratio(oursThroughput(), secondFioThroughput());
    }

    /** The 1 MiB case whose fio on huge pages did not run: its headline is against plain fio. */
    public boolean headlineFallsBackToPlainFio() {
        return !benchCase().judgedByIops() && benchCase().hasReference() && !likeForLike();
    }

    /** Whether the case is the adapter's storing or loading chunks (CPU per chunk is reported). */
    public boolean movesChunks() {
        return switch (benchCase().kind()) {
            case ADAPTER_STORE, ADAPTER_STORE_HEADROOM, ADAPTER_STORE_EVICT_ROUNDS, ADAPTER_LOAD,
                    ADAPTER_LOAD_VERIFY_RECOVERY -> true;
            default -> false;
        };
    }

    /**
     * Bytes of a chunk of {@code c} that the store computes a CRC32C of: every payload it stores, and every
     * one it loads under {@code verify_payload} "always"; under "recovery" only a slot whose bytes predate
     * the store's open, and every slot the bench loads was stored by that open ({@code populate}): none.
     * The 4 KiB slot header's own checks are not counted.
     */
    static long crc32cBytesPerChunk(BenchCase c) {
        return switch (c.kind()) {
            case ADAPTER_STORE, ADAPTER_STORE_HEADROOM, ADAPTER_STORE_EVICT_ROUNDS, ADAPTER_LOAD -> c.blockSize();
            default -> 0;
        };
    }

    /**
     * CPU of a chunk beyond what fio spends per I/O and beyond the CRC32C of its bytes, in microseconds: our
     * process CPU per chunk, less fio's CPU per I/O (its CPU-seconds, {@code usr_cpu + sys_cpu} over its job
     * runtime, over its I/Os: one I/O per chunk's bytes), less {@code crcBytesPerChunk} at the rate of the
     * CRC32C alone ({@code crc}: its CPU per byte). NaN when a figure is missing; {@code crc} may be null
     * when {@code crcBytesPerChunk} is 0.
     */
    static double cpuMicrosPerChunkBeyondFioAndCrc(Measurement ours, Measurement fio, Measurement crc,
            long crcBytesPerChunk) {
        if (ours == null || fio == null) {
            return Double.NaN;
        }
        return ours.cpuMicrosPerOp() - fio.cpuMicrosPerOp() - crc32cMicrosPerChunk(crc, crcBytesPerChunk);
    }

    /** The CPU of the CRC32C of {@code bytes} at {@code crc}'s rate, in microseconds (0 for no bytes). */
    static double crc32cMicrosPerChunk(Measurement crc, long bytes) {
        if (bytes == 0) {
            return 0;
        }
        return crc == null || crc.bytes() <= 0 || Double.isNaN(crc.cpuSeconds()) ? Double.NaN
                : bytes * crc.cpuSeconds() / crc.bytes() * 1e6;
    }

    /** {@link #cpuMicrosPerChunkBeyondFioAndCrc} of one round of this case. */
    public double cpuMicrosPerChunkBeyondFioAndCrc(Round r) {
        return cpuMicrosPerChunkBeyondFioAndCrc(r.ours(), r.fioLikeForLike(), r.crc32cAlone(),
                crc32cBytesPerChunk(benchCase()));
    }

    /** Median over the rounds of {@link #cpuMicrosPerChunkBeyondFioAndCrc(Round)}; NaN when no round has it. */
    public double cpuMicrosPerChunkBeyondFioAndCrc() {
        return Stats.median(rounds(), this::cpuMicrosPerChunkBeyondFioAndCrc);
    }

    /** Median over the rounds of our process CPU per chunk, in microseconds. */
    public double oursCpuMicrosPerChunk() {
        return Stats.median(ours(), Measurement::cpuMicrosPerOp);
    }

    /** Median over the rounds of fio's CPU per I/O ({@link Round#fioLikeForLike}), in microseconds. */
    public double fioCpuMicrosPerIo() {
        return Stats.median(rounds(), r -> r.fioLikeForLike() == null ? Double.NaN
                : r.fioLikeForLike().cpuMicrosPerOp());
    }

    /** Whether some round's CPU per chunk is set against plain fio (fio on huge pages did not run in it). */
    public boolean cpuPerChunkAgainstPlainFio() {
        return rounds().stream().anyMatch(r -> r.fioHugePages() == null && r.fio() != null);
    }

    /** Median over the rounds of the CRC32C alone measured beside them, in MB per CPU-second. */
    public double crc32cAloneMbPerCpuSec() {
        return Stats.median(rounds(), r -> r.crc32cAlone() == null ? Double.NaN : r.crc32cAlone().mbPerCpuSec());
    }

    /** Median over the rounds of the CPU of a chunk's CRC32C at the round's rate, in microseconds. */
    public double crc32cMicrosPerChunk() {
        long bytes = crc32cBytesPerChunk(benchCase());
        return Stats.median(rounds(), r -> r.ours() == null ? Double.NaN : crc32cMicrosPerChunk(r.crc32cAlone(), bytes));
    }

    /** The CPU of hashing the lookup's keys once, median of the rounds' medians, in microseconds. */
    public double hashOnceCpuMicros() {
        return lookup == null ? Double.NaN : lookup.hashOnceCpuMedianMicros();
    }

    /** The lookup's CPU over that of hashing its keys once (medians of the rounds). */
    public double lookupCpuOverHashOnce() {
        return lookup == null ? Double.NaN : lookup.cpuOverHashOnce();
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
                    t.add(c.judgedByIops() ? new Target("IOPS ours/fio", ">=", 0.9, throughputRatio())
                            : bandwidthTarget(0.9));
                } else if (c.judgedByIops()) {
                    t.add(new Target("IOPS ours/fio", ">=", 1.0, throughputRatio()));
                    if (c.rings() == 1) {
                        t.add(new Target("IOPS per CPU-second ours/fio", ">=", c.queueDepth() == 1 ? 0.8 : 1.0,
                                cpuEfficiencyRatio()));
                    }
                } else {
                    t.add(bandwidthTarget(1.0));
                }
            }
            case ADAPTER_STORE, ADAPTER_STORE_HEADROOM, ADAPTER_STORE_EVICT_ROUNDS, ADAPTER_LOAD, ADAPTER_LOAD_VERIFY_RECOVERY -> {
                t.add(bandwidthTarget(0.95));
                // CPU per byte <= 2x fio's (judged with verify_payload "recovery"). Not for a load under
                // "always": it computes the CRC32C of every payload, the cost "recovery" is there to trade away
                // (the bench measures the checksum alone beside it); a store computes it under either setting.
                if (c.kind() != BenchCase.Kind.ADAPTER_LOAD) {
                    t.add(new Target("MB per CPU-second ours/fio", ">=", 0.5, cpuEfficiencyRatio()));
                }
                t.add(new Target(CPU_BEYOND_TARGET, "<=", 5.0, cpuMicrosPerChunkBeyondFioAndCrc()));
            }
            case ADAPTER_LOOKUP -> {
                t.add(new Target(LOOKUP_LATENCY_TARGET, "<", 100, lookup == null ? Double.NaN : lookup.medianMicros()));
                t.add(new Target(LOOKUP_CPU_TARGET, "<=", 1.5, lookupCpuOverHashOnce()));
            }
        }
        return t;
    }

    static final String CPU_BEYOND_TARGET = "CPU us per chunk beyond fio's per I/O and the CRC32C";
    static final String LOOKUP_LATENCY_TARGET = "submit to eventfd signal, median us";
    static final String LOOKUP_CPU_TARGET = "lookup-and-lock CPU / hashing the keys once";

    /**
     * The bandwidth target of a 1 MiB case: against fio on huge pages (like for like), or, when that never
     * ran, against plain fio, named so.
     */
    private Target bandwidthTarget(double required) {
        if (judgedOnSameWork()) {
            return new Target("bandwidth ours/fio on huge pages " + sameWork().words(), ">=", required,
                    sameWorkThroughputRatio());
        }
        return likeForLike() ? new Target("bandwidth ours/fio on huge pages", ">=", required, hugePagesThroughputRatio())
                : new Target("bandwidth ours/plain fio (fio on huge pages not run)", ">=", required, throughputRatio());
    }

    /** Median over the rounds of a number our side (or plain fio) recorded under {@code key}; NaN when none did. */
    public double medianExtra(boolean ours, String key) {
        return medianExtra(ours ? ours() : fio(), key);
    }

    /**
     * {@link #medianExtra} of the fio the headline is judged against ({@link #headlineFioThroughput}): its
     * depth and latency are what ours' are set beside, e.g. fio's writes held by the same flushes.
     */
    public double judgedFioMedianExtra(String key) {
        return medianExtra(judgedFio(), key);
    }

    private static double medianExtra(List<Measurement> runs, String key) {
        return Stats.median(runs, m -> m.extra().get(key) instanceof Number n ? n.doubleValue() : Double.NaN);
    }

    /**
     * The runs of the fio the headline is judged against: doing ours' work too when {@link #judgedOnSameWork},
     * else on huge pages when {@link #likeForLike}, else plain.
     */
    private List<Measurement> judgedFio() {
        return judgedOnSameWork() ? fioSameWork() : likeForLike() ? fioHugePages() : fio();
    }

    /**
     * The judged fio's most frequent I/Os per submit call over the rounds' {@code iodepth_submit}, e.g.
     * "1-4 (100%)".
     */
    public String fioSubmitBatch() {
        List<Measurement> judged = judgedFio();
        Measurement last = judged.isEmpty() ? null : judged.get(judged.size() - 1);
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
                l.put("hash_once_cpu_median_of_rounds_us", nullIfNaN(lookup.hashOnceCpuMedianMicros(), 2));
                l.put("round_hash_once_cpu_medians_us", lookupRounds.stream()
                        .map(x -> nullIfNaN(x.hashOnceCpuMedianMicros(), 2)).toList());
                l.put("thread_cpu_over_hash_once", nullIfNaN(lookup.cpuOverHashOnce(), 3));
                l.put("round_thread_cpu_over_hash_once", lookupRounds.stream()
                        .map(x -> nullIfNaN(x.cpuOverHashOnce(), 3)).toList());
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
                if (r.fioHugePages() != null) {
                    x.put("fio_hugepages", r.fioHugePages().toMap());
                }
                if (r.fioSameWork() != null && sameWork() != null) {
                    x.put(sameWork().key(), r.fioSameWork().toMap());
                }
                if (r.crc32cAlone() != null) {
                    x.put("crc32c_alone", r.crc32cAlone().toMap());
                }
                if (movesChunks()) {
                    x.putAll(cpuPerChunk(r));
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
                med.put("judged_fio_" + k, nullIfNaN(judgedFioMedianExtra(k), 2));
            }
            for (String k : new String[] {"ring_depth_avg", "io_uring_enters_per_io", "sqes_per_submit", "wakeups_per_io"}) {
                med.put("ours_" + k, nullIfNaN(medianExtra(true, k), 3));
            }
            if (!fioHugePages().isEmpty()) {
                med.put("fio_hugepages", nullIfNaN(fioHugePagesThroughput(), 2));
                med.put("fio_hugepages_per_cpu_sec", nullIfNaN(fioHugePagesPerCpuSec(), 1));
            }
            if (judgedOnSameWork()) {
                med.put(sameWork().key(), nullIfNaN(fioSameWorkThroughput(), 2));
            }
            if (movesChunks()) {
                med.put("ours_cpu_us_per_chunk", nullIfNaN(oursCpuMicrosPerChunk(), 2));
                med.put("fio_cpu_us_per_io", nullIfNaN(fioCpuMicrosPerIo(), 2));
                med.put("crc32c_alone_mb_per_cpu_sec", nullIfNaN(crc32cAloneMbPerCpuSec(), 0));
                med.put("crc32c_us_per_chunk", nullIfNaN(crc32cMicrosPerChunk(), 2));
                med.put("cpu_us_per_chunk_beyond_fio_and_crc", nullIfNaN(cpuMicrosPerChunkBeyondFioAndCrc(), 2));
            }
            m.put("median", med);
            Map<String, Object> ratio = new LinkedHashMap<>();
            ratio.put("throughput", nullIfNaN(throughputRatio(), 4));
            ratio.put("per_cpu_sec", nullIfNaN(cpuEfficiencyRatio(), 4));
            if (!fioHugePages().isEmpty()) {
                ratio.put("throughput_fio_hugepages", nullIfNaN(hugePagesThroughputRatio(), 4));
                ratio.put("per_cpu_sec_fio_hugepages", nullIfNaN(Stats.ratio(oursIopsPerCpuSec(),
                        fioHugePagesPerCpuSec()), 4));
            }
            if (judgedOnSameWork()) {
                ratio.put("throughput_" + sameWork().key(), nullIfNaN(sameWorkThroughputRatio(), 4));
            }
            m.put("ours_over_fio", ratio);
            Map<String, Object> headline = new LinkedHashMap<>();
            headline.put("reference", judgedOnSameWork() ? sameWork().key()
                    : likeForLike() ? "fio_hugepages" : "fio");
            headline.put("throughput_ratio", nullIfNaN(headlineThroughputRatio(), 4));
            if (headlineFallsBackToPlainFio()) {
                headline.put("why_not_like_for_like", note != null && note.contains(HUGE_PAGES_NOT_RUN)
                        ? note.substring(note.indexOf(HUGE_PAGES_NOT_RUN)) // the last note: added during the rounds
                        : "fio with its buffers on huge pages did not run");
            }
            m.put("headline", headline);
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

    /** The words a case's note starts its reason with when fio on huge pages could not run. */
    static final String HUGE_PAGES_NOT_RUN = "fio with huge-page buffers (--mem=shmhuge) not run";

    /**
     * One round's CPU per chunk, the figures {@link #cpuMicrosPerChunkBeyondFioAndCrc(Round)} is made of:
     * ours per chunk, fio's per I/O (and which fio), the CRC32C's bytes and CPU per chunk, and what is left.
     */
    Map<String, Object> cpuPerChunk(Round r) {
        long crcBytes = crc32cBytesPerChunk(benchCase());
        Map<String, Object> x = new LinkedHashMap<>();
        x.put("ours_cpu_us_per_chunk", r.ours() == null ? null : nullIfNaN(r.ours().cpuMicrosPerOp(), 3));
        Measurement f = r.fioLikeForLike();
        x.put("fio_cpu_us_per_io", f == null ? null : nullIfNaN(f.cpuMicrosPerOp(), 3));
        x.put("fio_cpu_of", f == null ? null : r.fioHugePages() != null ? "fio_hugepages" : "fio");
        x.put("crc32c_bytes_per_chunk", crcBytes);
        x.put("crc32c_us_per_chunk", nullIfNaN(crc32cMicrosPerChunk(r.crc32cAlone(), crcBytes), 3));
        x.put("cpu_us_per_chunk_beyond_fio_and_crc", nullIfNaN(cpuMicrosPerChunkBeyondFioAndCrc(r), 3));
        return x;
    }

    static Double nullIfNaN(double v, int digits) {
        return Double.isNaN(v) ? null : Measurement.round(v, digits);
    }
}
