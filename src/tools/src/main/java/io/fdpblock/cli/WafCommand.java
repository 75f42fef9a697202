package io.fdpblock.cli;

import io.fdpblock.controller.EvictionController;
import io.fdpblock.controller.StorageManager;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.sim.GcPolicy;
import io.fdpblock.sim.ModelConfig;
import io.fdpblock.sim.Simulation;
import io.fdpblock.sim.SimulationResult;
import io.fdpblock.sim.TraceReader;
import io.fdpblock.tools.util.Sizes;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.BooleanSupplier;

/**
 * {@code fdpblock waf}: placement and eviction policies compared on the KV-cache job. Each case runs the
 * job over a file that acts as an FDP namespace (8 placement ids, reclaim units of {@code --ru-size}),
 * traced; the trace then goes through the FDP SSD model. Prints WAF and the L2 hit ratio per case, writes
 * a chart and the figures as JSON.
 */
@Command(name = "waf", mixinStandardHelpOptions = true,
        description = {"Placement and eviction policies compared on the KV-cache job (`run`'s, a multi-tenant one, and"
                + " multi-turn sessions over shared documents):"
                + " each case runs the job over a temp file that acts as an FDP namespace (8 placement ids, reclaim"
                + " units of --ru-size), traces it, and replays the trace through the FDP SSD model (initially"
                + " isolated handles, --op over-provisioning, greedy GC). Prints WAF and the L2 hit ratio per case,"
                + " and writes a chart (PNG) and the figures (JSON) to --out.",
                "Every request waits for its stores (run --settle): every computed chunk reaches L2 and a case does"
                        + " not depend on thread timing."})
public final class WafCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    /** One policy combination. */
    record Case(String name, String label, boolean fdp, String placement, String eviction, String order) {}

    /** One workload ({@code sessions} non-null: multi-turn sessions, {@link SessionWorkload}). */
    record Workload(String name, String label, List<KvCacheJob.Tenant> tenants, int requests,
            SessionWorkload.Params sessions) {
        Workload(String name, String label, List<KvCacheJob.Tenant> tenants, int requests) {
            this(name, label, tenants, requests, null);
        }
    }

    static final List<Case> CASES = List.of(
            new Case("reference", "no placement + per-key LRU (reference)", false, "none", "lru", null),
            new Case("salt_prefix_lru", "salt-prefix placement + per-key LRU (LMCache's FDP policy)", true,
                    "cache_salt_prefix", "lru", null),
            new Case("groups", "salt-prefix placement + reclaim-unit groups, second chance", true, "cache_salt_prefix",
                    "reclaim_unit", "second_chance"),
            new Case("groups_oldest", "salt-prefix placement + reclaim-unit groups, oldest first", true,
                    "cache_salt_prefix", "reclaim_unit", "oldest"),
            new Case("groups_least_hit", "salt-prefix placement + reclaim-unit groups, least hit first", true,
                    "cache_salt_prefix", "reclaim_unit", "least_hit"),
            new Case("groups_one_stream", "no placement id (one stream) + reclaim-unit groups, second chance", true,
                    "none", "reclaim_unit", "second_chance"));

    /** The multi-tenant workload: tenants whose data stays useful for different times. */
    static final String DEFAULT_TENANTS = "chat:sessions=0.5/0.8/5000,rag:docs=0.3/0.8/500,batch:jobs=0.2/0.3/0";

    @Option(names = "--size", defaultValue = "1073741824", converter = SimulateCommand.SizeConverter.class,
            description = "Device (namespace) size (default 1 GiB)")
    long size;

    @Option(names = "--ru-size", defaultValue = "8M", converter = SimulateCommand.SizeConverter.class,
            description = "Reclaim unit size the device reports (default 8 MiB, the emulated device's)")
    long ruSize;

    @Option(names = "--requests", defaultValue = "20000", description = "Requests per case of the run workload (default"
            + " ${DEFAULT-VALUE})")
    int requests;

    @Option(names = "--tenant-requests", defaultValue = "30000", description = "Requests per case of the tenants workload"
            + " (default ${DEFAULT-VALUE}; it reuses more, so it writes less per request)")
    int tenantRequests;

    @Option(names = "--session-requests", defaultValue = "40000", description = "Requests (turns) per case of the"
            + " sessions workload (default ${DEFAULT-VALUE})")
    int sessionRequests;

    @Option(names = "--sessions", defaultValue = SessionWorkload.Params.DEFAULT, description = "The sessions workload:"
            + " docs (shared prefixes: system prompts, documents), zipf (their popularity's exponent), doc-chunks (a"
            + " document's chunks, 1..n), active (sessions open at once), turns (mean turns of a session, geometric),"
            + " new (chunks a turn adds, 1..n), session-chunks (longest conversation); names left out keep their"
            + " default; default ${DEFAULT-VALUE}")
    String sessions;

    @Option(names = "--chunk-tokens", defaultValue = "5", description = "Tokens per chunk (default ${DEFAULT-VALUE}: 60 KiB"
            + " chunks in 64 KiB slots, 128 to an 8 MiB reclaim unit)")
    int chunkTokens;

    @Option(names = "--kv-bytes-per-token", defaultValue = "12288", description = "KV bytes per token (default Qwen2.5-0.5B"
            + " in bf16)")
    int kvBytesPerToken;

    @Option(names = "--max-chunks", defaultValue = "12", description = "Longest new prefix, in chunks")
    int maxChunks;

    @Option(names = "--l1-chunks", defaultValue = "64", description = "L1 size, in chunks")
    int l1Chunks;

    @Option(names = "--evict-at", defaultValue = "0.95", description = "Evict when L2 is this full (default ${DEFAULT-VALUE})")
    double evictAt;

    @Option(names = "--evict-to", defaultValue = "0.92", description = "... down to this (default ${DEFAULT-VALUE})")
    double evictTo;

    @Option(names = "--op", defaultValue = "0.07", description = "The model's over-provisioning (default ${DEFAULT-VALUE})")
    double op;

    @Option(names = "--gc", defaultValue = "greedy", description = "The model's GC policy (default ${DEFAULT-VALUE})")
    String gc;

    @Option(names = "--cases", split = ",", description = "Cases to run (default all): reference, salt_prefix_lru, groups,"
            + " groups_oldest, groups_least_hit")
    List<String> cases;

    @Option(names = "--workloads", split = ",", defaultValue = "run,tenants",
            description = "run (the main job's: salts, repeats from all history), tenants (--tenants) and/or sessions"
                    + " (--sessions: multi-turn sessions over shared documents of Zipf popularity); default run,tenants")
    List<String> workloads;

    @Option(names = "--tenants", defaultValue = DEFAULT_TENANTS, description = "The multi-tenant workload: salt=share/repeat"
            + "/window per tenant (run --tenants); default ${DEFAULT-VALUE}")
    String tenants;

    @Option(names = "--meta-format", defaultValue = "fdpblock_v2", paramLabel = "FORMAT", description = "The store's"
            + " metadata format: fdpblock_v2 (default) or lmcache_v1")
    String metaFormat;

    @Option(names = "--seed", defaultValue = "42")
    long seed;

    @Option(names = "--out", defaultValue = "target/waf", description = "Where traces, waf.json and waf.png go")
    Path out;

    @Option(names = "--chart", description = "The chart's path (default OUT/waf.png)")
    Path chart;

    /** What one case gave. */
    record Row(String workload, String workloadLabel, String caseName, String caseLabel, double waf, double steadyWaf,
            double l2HitRatio, double meanUsage, double minUsage, double peakUsage, double hostWritesPerCapacity,
            long gcCopiedBytes,
            long requests, long chunksStored, long evictedKeys, long evictedGroups, long evictedHits, String trace) {}

    /** Every option checked before anything is made. @return the chunk size in bytes */
    private int validate() {
        int chunk = KvJobSetup.chunkBytes(spec, chunkTokens, kvBytesPerToken, maxChunks, l1Chunks, 5);
        Cli.reclaimUnitSize(spec, "--ru-size", ruSize);
        // the store's metadata, two of the longest prefixes, and a few reclaim units for its groups to rotate in
        long slot = KvJobSetup.slotBytes(chunk);
        long min = RawBlockCoreConfig.v2MetaBytesFor(4096, 2L * maxChunks) + Math.max(2L * maxChunks * slot, 4 * ruSize);
        min = (min + ruSize - 1) / ruSize * ruSize;
        Cli.size(spec, "--size", size, min, 1L << 50, 4096);
        KvJobSetup.evictionWatermarks(spec, evictAt, evictTo);
        Cli.fraction(spec, "--op", op, "the model's over-provisioning");
        try {
            GcPolicy.parse(gc);
        } catch (IllegalArgumentException e) {
            throw Cli.bad(spec, "--gc " + gc + ": " + e.getMessage());
        }
        return chunk;
    }

    @Override
    public Integer call() throws Exception {
        int chunkBytes = validate();
        Cli.metaFormat(spec, metaFormat);
        List<Case> chosen = new ArrayList<>();
        for (String n : cases == null ? CASES.stream().map(Case::name).toList() : cases) {
            chosen.add(CASES.stream().filter(c -> c.name().equals(n)).findFirst().orElseThrow(
                    () -> Cli.bad(spec, "--cases: unknown case '" + n + "'; known: "
                            + CASES.stream().map(Case::name).toList())));
        }
        List<Workload> wls = new ArrayList<>();
        for (String w : workloads) {
            wls.add(switch (w) {
                case "run" -> new Workload("run", "run's job: 4 salts, 60 % repeats of any earlier request", List.of(),
                        Cli.intIn(spec, "--requests", requests, 1, Integer.MAX_VALUE, "requests per case of the run"
                                + " workload"));
                case "tenants" -> {
                    List<KvCacheJob.Tenant> list;
                    try {
                        list = parseTenants(tenants);
                    } catch (IllegalArgumentException e) {
                        throw Cli.bad(spec, "--tenants: " + e.getMessage());
                    }
                    yield new Workload("tenants", "multi-tenant: " + tenants, list, Cli.intIn(spec, "--tenant-requests",
                            tenantRequests, 1, Integer.MAX_VALUE, "requests per case of the tenants workload"));
                }
                case "sessions" -> {
                    SessionWorkload.Params sp;
                    try {
                        sp = SessionWorkload.Params.parse(sessions);
                    } catch (IllegalArgumentException e) {
                        throw Cli.bad(spec, "--sessions: " + e.getMessage());
                    }
                    yield new Workload("sessions", "multi-turn sessions over Zipf-popular documents: " + sp, List.of(),
                            Cli.intIn(spec, "--session-requests", sessionRequests, 1, Integer.MAX_VALUE, "requests"
                                    + " (turns) per case of the sessions workload"), sp);
                }
                default -> throw Cli.bad(spec, "--workloads: unknown workload '" + w + "'; known: run, tenants,"
                        + " sessions");
            });
        }
        try (StopOnSignal stop = new StopOnSignal(System.err, "finishing the current request, closing the store and"
                + " removing the temp device", RunCommand.STOP_GRACE);
             Scratch scratch = new Scratch("fdpblock-waf-", System.err, stop)) {
            return compare(chosen, wls, chunkBytes, stop, scratch);
        }
    }

    private int compare(List<Case> chosen, List<Workload> wls, int chunkBytes, StopOnSignal stop, Scratch scratch)
            throws Exception {
        Path dir = scratch.dir();
        Cli.fitsFreeSpace(spec, "--size", size, dir);
        Files.createDirectories(out);
        PrintStream o = System.out;
        o.printf(Locale.ROOT, "fdpblock waf: %d case(s) x %d workload(s) on a %s emulated FDP namespace (8 placement ids,"
                + " %s reclaim units), chunks of %d KiB; evict at %.0f %% down to %.0f %%%n",
                chosen.size(), wls.size(), Sizes.human(size), Sizes.human(ruSize),
                chunkBytes >> 10, 100 * evictAt, 100 * evictTo);
        List<Row> rows = new ArrayList<>();
        for (Workload w : wls) {
            for (Case c : chosen) {
                Row r = runCase(w, c, chunkBytes, dir, stop::requested);
                if (r == null) {
                    o.printf("%nfdpblock waf: stopped by a signal during case %s of workload %s; its partial trace is"
                            + " removed, the temp device too%s%n", c.name(), w.name(),
                            rows.isEmpty() ? "" : "; the traces of the " + rows.size() + " cases done are in " + out);
                    return 130;
                }
                rows.add(r);
                o.printf(Locale.ROOT, "  %-8s %-17s WAF %.3f (steady %s), L2 hit ratio %.3f, %s, host writes %.1f x"
                        + " capacity%n", w.name(), c.name(), r.waf(), steady(r), r.l2HitRatio(), usage(r),
                        r.hostWritesPerCapacity());
            }
        }
        o.println();
        table(rows, o);
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("date", LocalDate.now().toString());
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("size", size);
        settings.put("ru_size", ruSize);
        settings.put("requests", requests);
        settings.put("tenant_requests", tenantRequests);
        settings.put("chunk_bytes", chunkBytes);
        settings.put("slot_bytes", KvJobSetup.slotBytes(chunkBytes));
        settings.put("max_chunks", maxChunks);
        settings.put("l1_chunks", l1Chunks);
        settings.put("evict_at", evictAt);
        settings.put("evict_to", evictTo);
        settings.put("op", op);
        settings.put("gc", gc);
        settings.put("tenants", tenants);
        if (wls.stream().anyMatch(w -> w.sessions() != null)) {
            settings.put("session_requests", sessionRequests);
            settings.put("sessions", SessionWorkload.Params.parse(sessions).toString());
        }
        settings.put("meta_format", metaFormat);
        settings.put("seed", seed);
        json.put("settings", settings);
        ObjectMapper mapper = new ObjectMapper();
        List<Map<String, Object>> rowMaps = new ArrayList<>();
        for (Row r : rows) { // a figure not measured is null, not NaN (which JSON has not)
            Map<String, Object> m = mapper.convertValue(r, new TypeReference<
                    LinkedHashMap<String, Object>>() {});
            m.replaceAll((k, v) -> v instanceof Double d && d.isNaN() ? null : v);
            rowMaps.add(m);
        }
        json.put("rows", rowMaps);
        Path jsonFile = out.resolve("waf.json");
        mapper.enable(SerializationFeature.INDENT_OUTPUT).writeValue(jsonFile.toFile(), json);
        Path png = WafComparisonChart.write(rows, chart != null ? chart : out.resolve("waf.png"),
                String.format(Locale.ROOT, "%s, %s reclaim units, %d KiB chunks, L2 kept %.0f-%.0f %% full",
                        Sizes.human(size), Sizes.human(ruSize), chunkBytes >> 10, 100 * evictTo,
                        100 * evictAt),
                String.format(Locale.ROOT, "OP %.0f %%, initially isolated handles, %s GC", 100 * op, gc));
        o.println();
        o.println("figures  " + jsonFile);
        o.println("chart    " + png);
        return 0;
    }

    private static List<KvCacheJob.Tenant> parseTenants(String spec) {
        List<KvCacheJob.Tenant> out = new ArrayList<>();
        for (String t : spec.split(",")) {
            out.add(KvCacheJob.Tenant.parse(t.trim()));
        }
        return out;
    }

    /** The WAF after twice the capacity was written, or why there is none. */
    private String steady(Row r) {
        return Double.isNaN(r.steadyWaf()) ? String.format(Locale.ROOT, "n/a: the host wrote %.1f x capacity, it is"
                + " measured after 2 x", r.hostWritesPerCapacity()) : String.format(Locale.ROOT, "%.3f", r.steadyWaf());
    }

    /** L2's usage once it filled, or that it never did. */
    private String usage(Row r) {
        return Double.isNaN(r.meanUsage()) ? String.format(Locale.ROOT, "L2 never filled to %.0f %% (at most %.1f %%)",
                100 * evictTo, 100 * r.peakUsage()) : String.format(Locale.ROOT, "L2 usage mean %.1f %% (min %.1f %%)",
                100 * r.meanUsage(), 100 * r.minUsage());
    }

    /** Runs the job for one case, traced, then the model over the trace. @return null when a signal stopped it */
    Row runCase(Workload w, Case c, int chunkBytes, Path dir, BooleanSupplier stopped)
            throws Exception {
        Path trace = out.resolve(w.name() + "-" + c.name() + ".trace");
        Path img = BlockDevices.createFile(dir.resolve("kvcache.img"), size);
        KvCacheJob.Result res;
        Map<String, Object> eviction;
        try {
            String json = KvJobSetup.adapterJson(new KvJobSetup.Store(img.toString(), size, chunkBytes, "io_uring",
                    metaFormat, false), c.fdp(), c.placement(), true);
            KvCacheJob.Spec spec = new KvCacheJob.Spec(w.requests(), 0.6, List.of("rag:app1", "chat:app2", "code:app3", ""),
                    maxChunks, chunkBytes, "Qwen/Qwen2.5-0.5B", 0, seed, w.tenants(), true, w.sessions());
            try (TracedAdapter t = TracedAdapter.open(json, trace, ruSize);
                    StorageManager sm = KvJobSetup.manager(chunkBytes, l1Chunks).adapter(t.adapter())
                            .eviction(KvJobSetup.eviction(c.eviction(), c.order()), evictAt, evictTo).build()) {
                res = new KvCacheJob(sm, t.adapter(), spec).run(false, stopped);
                EvictionController ec = sm.evictionControllers().get(0);
                eviction = ec.status();
            }
        } finally {
            Files.deleteIfExists(img);
        }
        if (stopped.getAsBoolean()) {
            Files.deleteIfExists(trace); // a trace of part of the case would give another case's figures
            return null;
        }
        ModelConfig mc = ModelConfig.forTrace(TraceReader.readHeader(trace)).withOverProvisioning(op)
                .withGc(GcPolicy.parse(gc));
        SimulationResult sim = Simulation.run(trace, mc, false, Simulation.DEFAULT_SAMPLES);
        return new Row(w.name(), w.label(), c.name(), c.label(), sim.waf(), sim.wafAfter(2 * size), res.l2HitRatio(),
                res.meanUsage(), res.usageMin, res.usagePeak, (double) sim.hostBytes() / size, sim.gcCopiedBytes(),
                res.requests, res.chunksStored, num(eviction, "evicted_keys"), num(eviction, "evicted_groups"),
                num(eviction, "evicted_hits"), trace.toString());
    }

    private static long num(Map<String, Object> m, String k) {
        return ((Number) m.get(k)).longValue();
    }

    /** The comparison as a Markdown table: per workload, each case's WAF and hit ratio against the reference's. */
    static void table(List<Row> rows, PrintStream o) {
        o.println("| workload | policy | WAF (model) | WAF after 2x capacity | L2 hit ratio | vs per-key LRU | L2 usage"
                + " mean (min) | host writes / capacity | GC copied | evicted keys (groups) |");
        o.println("|---|---|---|---|---|---|---|---|---|---|");
        for (Row r : rows) {
            Row lru = rows.stream().filter(x -> x.workload().equals(r.workload()) && x.caseName().equals("reference"))
                    .findFirst().orElse(null);
            o.printf(Locale.ROOT, "| %s | %s | %.3f | %s | %.3f | %s | %s | %.1f | %s | %d (%d) |%n",
                    r.workload(), r.caseLabel(), r.waf(), Double.isNaN(r.steadyWaf()) ? "-"
                            : String.format(Locale.ROOT, "%.3f", r.steadyWaf()), r.l2HitRatio(),
                    lru == null || lru.l2HitRatio() == 0 ? "-" : String.format(Locale.ROOT, "%.3fx",
                            r.l2HitRatio() / lru.l2HitRatio()),
                    Double.isNaN(r.meanUsage()) ? String.format(Locale.ROOT, "- (never filled; at most %.1f %%)",
                            100 * r.peakUsage()) : String.format(Locale.ROOT, "%.1f %% (%.1f %%)", 100 * r.meanUsage(),
                            100 * r.minUsage()), r.hostWritesPerCapacity(),
                    Sizes.human(r.gcCopiedBytes()), r.evictedKeys(), r.evictedGroups());
        }
    }
}
