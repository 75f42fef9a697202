package io.fdpblock.cli;

import io.fdpblock.controller.EvictionPolicy;
import io.fdpblock.controller.Policies;
import io.fdpblock.controller.StorageManager;
import io.fdpblock.controller.TenantQuotas;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.FaultInjectL2Adapter;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;
import io.fdpblock.l2.L2Adapters;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.l2.QosL2Adapter;
import io.fdpblock.l2.QosScheduler;
import io.fdpblock.linux.EventFd;
import io.fdpblock.linux.IoMemory;
import io.fdpblock.tools.util.Sizes;

import org.HdrHistogram.Histogram;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

/**
 * The main job: an LMCache-like KV-cache workload through StorageManager, both controllers and the
 * raw-block adapter, on a file-backed device in a temp dir (default) or an NVMe namespace.
 */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = "The main job: a KV-cache workload (shared prefixes, several cache salts, new and repeated"
                + " requests) through StorageManager, the store/prefetch controllers and the raw-block adapter;"
                + " every loaded chunk is checked byte for byte, and the device is reopened to check what survived."
                + " SIGINT/SIGTERM stop it after the current request, close the store with its final checkpoint and"
                + " remove the temp device.")
public final class RunCommand implements Callable<Integer> {
    /** How long a signal waits for the job to close the store before the JVM exits anyway. */
    static final Duration STOP_GRACE = Duration.ofMinutes(2);

    @Spec
    CommandSpec spec;

    @Option(names = "--device", description = "A file (created at --size when missing), an NVMe generic device"
            + " (/dev/ngXnY, with --engine uring_cmd) or an NVMe block device (/dev/nvmeXnY, engine io_uring; --fdp"
            + " through write streams, Linux >= 6.16) to use instead of a temp file; the store on it is kept")
    String device;

    @Option(names = "--engine", defaultValue = "io_uring", description = "io_uring (default), posix, or uring_cmd (NVMe)")
    String engine;

    @Option(names = "--fdp", description = "FDP placement: --placement's buckets (cache_salt_prefix), checkpoints on"
            + " their own id (needs --engine uring_cmd and --device /dev/ngXnY, --device /dev/nvmeXnY, or --emulate-fdp)")
    boolean fdp;

    @Option(names = "--format", description = "Discard whatever --device holds and start a new store on it (the"
            + " config's \"format\": true); without it a device holding other data or another layout is refused,"
            + " untouched")
    boolean format;

    @Option(names = "--open-damaged", description = "Open a --device whose metadata is damaged with what is readable"
            + " (the config's \"open_damaged\": true): its lost keys are reported and the store stays unhealthy;"
            + " without it such a device is refused, untouched")
    boolean openDamaged;

    @Option(names = "--meta-format", defaultValue = "fdpblock_v2", paramLabel = "FORMAT", description = "Metadata"
            + " format of a new store: fdpblock_v2 (default; log and snapshots) or lmcache_v1 (LMCache's raw_block"
            + " state v1); an existing store opens in the format it has")
    String metaFormat;

    @Option(names = "--size", defaultValue = "1073741824", description = "Bytes of device to use, a multiple of 4096"
            + " (default 1 GiB)")
    long size;

    @Option(names = "--requests", defaultValue = "1500", description = "Requests to run (at least 1)")
    int requests;

    @Option(names = "--repeat-ratio", defaultValue = "0.6", description = "Share of requests that repeat a seen prefix,"
            + " 0..1")
    double repeatRatio;

    // One string split here, not picocli's split: that drops an empty last element, and the default's
    // trailing empty salt (chunks without one) would be lost.
    @Option(names = "--salts", defaultValue = "rag:app1,chat:app2,code:app3,",
            description = "Cache salts to spread requests over, comma-separated (an empty one = no salt)")
    String saltList;
    private List<String> salts;

    @Option(names = "--chunk-tokens", defaultValue = "64",
            description = "Tokens per chunk (LMCache's default is 256; 64 keeps the default run short)")
    int chunkTokens;

    @Option(names = "--kv-bytes-per-token", defaultValue = "12288",
            description = "KV bytes per token: 2 (K,V) x layers x KV heads x head dim x dtype bytes; default"
                    + " Qwen2.5-0.5B in bf16 = 2 x 24 x 2 x 64 x 2")
    int kvBytesPerToken;

    @Option(names = "--max-chunks", defaultValue = "12", description = "Longest prefix, in chunks (2..4096)")
    int maxChunks;

    @Option(names = "--l1-chunks", defaultValue = "64", description = "L1 (CPU memory) size, in chunks (at least"
            + " --max-chunks)")
    int l1Chunks;

    @Option(names = "--seed", defaultValue = "42")
    long seed;

    @Option(names = "--no-progress", description = "No progress bar")
    boolean noProgress;

    @Option(names = "--status", description = "Also print the adapter's full reportStatus() (counters, latency"
            + " histograms, store state) as JSON")
    boolean printStatus;

    @Option(names = "--trace", paramLabel = "FILE", description = "Record every write, flush and deallocation of the job"
            + " to FILE (docs/trace-format.md), for `fdpblock simulate --trace FILE`")
    Path trace;

    @Option(names = "--eviction", paramLabel = "POLICY", defaultValue = "lru", description = "L2 eviction policy: lru"
            + " (per key), reclaim_unit (whole reclaim-unit groups; needs --fdp) or tenant_quota (per tenant, against"
            + " --tenant-quota) (default ${DEFAULT-VALUE})")
    String eviction;

    @Option(names = "--group-order", paramLabel = "ORDER", description = "reclaim_unit: which group goes first: oldest,"
            + " least_hit or second_chance (default second_chance)")
    String groupOrder;

    @Option(names = "--evict-at", paramLabel = "FRACTION", defaultValue = "0.85",
            description = "Evict when L2 is this full (default ${DEFAULT-VALUE})")
    double evictAt;

    @Option(names = "--evict-to", paramLabel = "FRACTION", defaultValue = "0.75",
            description = "... down to this (default ${DEFAULT-VALUE})")
    double evictTo;

    @Option(names = "--emulate-fdp", paramLabel = "RU_BYTES", converter = SimulateCommand.SizeConverter.class,
            description = "The device acts as an FDP namespace with 8 placement ids and reclaim units of RU_BYTES (e.g."
                    + " 8M): the store (with --fdp) groups and tags as on an FDP SSD, and a --trace records it")
    Long emulateFdp;

    @Option(names = "--placement", paramLabel = "POLICY", defaultValue = "cache_salt_prefix",
            description = "With --fdp: the data placement policy, cache_salt_prefix or none (default ${DEFAULT-VALUE})")
    String placement;

    @Option(names = "--settle", description = "Each request waits for its stores to reach L2 before the next: every"
            + " computed chunk is stored, and the run does not depend on thread timing")
    boolean settle;

    @Option(names = "--tenants", split = ",", paramLabel = "SALT=SHARE/REPEAT/WINDOW",
            description = "A multi-tenant job instead of --salts/--repeat-ratio: per tenant its salt, share of the"
                    + " requests, repeat ratio and how many of its latest requests a repeat draws from (0 = all), e.g."
                    + " chat:s=0.5/0.7/50,rag:d=0.3/0.6/0,batch:j=0.2/0/0")
    List<String> tenants;

    @Option(names = "--load-deadline-ms", paramLabel = "MS", defaultValue = "0", description = "A prefetch not done"
            + " within MS of its submission is answered with what L1 and its finished loads hold; its late loads drain"
            + " (0: no deadline, the default)")
    long loadDeadlineMs;

    @Option(names = "--retention-ttl-ms", paramLabel = "MS", defaultValue = "0", description = "Every store shields"
            + " its chunks from L2 eviction for MS (within --retention-budget; 0: no retention, the default)")
    long retentionTtlMs;

    @Option(names = "--retention-budget", paramLabel = "FRACTION", defaultValue = "0", description = "The share of L2"
            + " that retention may shield, below --evict-at (needed with --retention-ttl-ms)")
    double retentionBudget;

    @Option(names = "--tenant-quota", split = ",", paramLabel = "SALT=BYTES", description = "With --eviction"
            + " tenant_quota: a tenant's L2 quota, e.g. rag:app1=64M (an empty salt: chunks without one); a salt"
            + " without a quota is evicted first and whole")
    List<String> tenantQuotas;

    @Option(names = "--qos-weights", split = ",", paramLabel = "SALT=WEIGHT", description = "Puts L2 behind the qos"
            + " wrapper: its stores, lookups and loads are admitted per cache salt in these weights' shares ("
            + QosScheduler.MIN_WEIGHT + ".." + QosScheduler.MAX_WEIGHT + "; a salt of the run without one has "
            + QosScheduler.DEFAULT_WEIGHT + "), e.g. rag:app1=300,chat:app2=100")
    List<String> qosWeights;

    @Option(names = "--qos-quantum-bytes", paramLabel = "BYTES", converter = SimulateCommand.SizeConverter.class,
            description = "With --qos-weights: what a weight-" + QosScheduler.DEFAULT_WEIGHT + " salt is admitted per"
                    + " turn, e.g. 256K (default 1M)")
    Long qosQuantumBytes;

    @Option(names = "--fault-inject-rate", paramLabel = "R", description = "Puts L2 behind the fault_inject wrapper: a"
            + " share R (0..1) of the keys L2 finds fail at load, chosen by --fault-inject-seed; the job takes each as a"
            + " miss, computes and stores it again")
    Double faultInjectRate;

    @Option(names = "--fault-inject-seed", paramLabel = "N", description = "Chooses --fault-inject-rate's keys: the"
            + " same seed fails the same keys in every run (default: --seed)")
    Long faultInjectSeed;

    /** Set by {@link #validateControllerOptions()}. */
    private final Map<String, Long> quotaBytes = new LinkedHashMap<>();
    /** Set by {@link #validateWrapperOptions()}: the qos wrapper's settings, or null without it. */
    private QosScheduler.Builder qos;
    /** Set by {@link #validate()}. */
    private Supplier<EvictionPolicy> evictionPolicy;
    private List<KvCacheJob.Tenant> tenantList = List.of();

    /** Every option checked before anything is created; returns the chunk size in bytes. */
    private int validate() {
        Cli.intIn(spec, "--requests", requests, 1, Integer.MAX_VALUE, "the number of requests");
        Cli.fraction(spec, "--repeat-ratio", repeatRatio, "the share of repeated requests");
        int chunk = KvJobSetup.chunkBytes(spec, chunkTokens, kvBytesPerToken, maxChunks, l1Chunks, 64);
        salts = List.of(saltList.split(",", -1));
        for (String salt : salts) {
            try {
                ObjectKey.of("Qwen/Qwen2.5-0.5B", 0, new byte[] {0}).withCacheSalt(salt); // the key's own rules
            } catch (IllegalArgumentException ex) {
                throw Cli.bad(spec, "--salts: " + ex.getMessage());
            }
        }
        IoEngine e = Cli.engine(spec, engine);
        if (e == IoEngine.MEMORY) {
            throw Cli.bad(spec, "--engine memory keeps nothing across the reopen that run checks: use io_uring"
                    + " (default) or posix, or uring_cmd with --device /dev/ngXnY");
        }
        boolean passthru = e == IoEngine.URING_CMD;
        if (passthru && device == null) {
            throw Cli.bad(spec, "--engine uring_cmd needs --device /dev/ngXnY (an NVMe namespace's generic device);"
                    + " the default temp file cannot do NVMe passthru: drop --engine or name the device");
        }
        if (emulateFdp != null) {
            if (passthru || (device != null && device.startsWith("/dev/"))) {
                throw Cli.bad(spec, "--emulate-fdp makes a file act as an FDP namespace; " + (device == null ? "--engine"
                        + " uring_cmd" : "--device " + device) + " is a device of its own: drop --emulate-fdp (--fdp uses"
                        + " the namespace's own FDP) or use a file");
            }
            Cli.reclaimUnitSize(spec, "--emulate-fdp", emulateFdp);
        }
        if (fdp && emulateFdp == null && !passthru
                && (e != IoEngine.IO_URING || device == null || !device.startsWith("/dev/nvme"))) {
            throw Cli.bad(spec, "--fdp needs --engine uring_cmd and --device /dev/ngXnY (NVMe passthru writes),"
                    + " --engine io_uring and --device /dev/nvmeXnY (the kernel's write streams, Linux >= 6.16), or"
                    + " --emulate-fdp RU_BYTES (a file acting as an FDP namespace)");
        }
        if (!placement.equals("cache_salt_prefix") && !placement.equals("none")) {
            throw Cli.bad(spec, "--placement " + placement + " is not a placement policy: use cache_salt_prefix or none");
        }
        KvJobSetup.evictionWatermarks(spec, evictAt, evictTo);
        try {
            evictionPolicy = KvJobSetup.eviction(eviction, groupOrder);
        } catch (IllegalArgumentException ex) {
            throw Cli.bad(spec, "--eviction " + eviction + (groupOrder == null ? "" : " --group-order " + groupOrder)
                    + ": " + ex.getMessage());
        }
        if (Policies.RECLAIM_UNIT.equals(eviction) && !fdp) {
            throw Cli.bad(spec, "--eviction reclaim_unit evicts reclaim-unit groups, which the store has only with --fdp"
                    + " (on an FDP namespace, or with --emulate-fdp RU_BYTES): add --fdp or use --eviction lru");
        }
        if (tenants != null) {
            List<KvCacheJob.Tenant> list = new ArrayList<>();
            for (String t : tenants) {
                try {
                    KvCacheJob.Tenant tenant = KvCacheJob.Tenant.parse(t.trim());
                    ObjectKey.of("Qwen/Qwen2.5-0.5B", 0, new byte[] {0}).withCacheSalt(tenant.salt()); // the key's rules
                    list.add(tenant);
                } catch (IllegalArgumentException ex) {
                    throw Cli.bad(spec, "--tenants: " + ex.getMessage());
                }
            }
            tenantList = List.copyOf(list);
        }
        Cli.metaFormat(spec, metaFormat);
        Cli.size(spec, "--size", size, minSize(), 1L << 50, 4096);
        validateControllerOptions();
        validateWrapperOptions();
        return chunk;
    }

    /** The cache salts the job's requests have (--tenants', else --salts), in their order. */
    private List<String> runSalts() {
        if (tenants == null) {
            return List.copyOf(new LinkedHashSet<>(salts));
        }
        return List.copyOf(new LinkedHashSet<>(tenantList.stream().map(KvCacheJob.Tenant::salt).toList()));
    }

    /** The qos and fault_inject options (after --salts and --tenants are checked). */
    private void validateWrapperOptions() {
        if (qosWeights != null) {
            qos = QosScheduler.builder();
            List<String> known = runSalts();
            Map<String, Integer> given = new LinkedHashMap<>();
            for (String w : qosWeights) {
                int eq = w.lastIndexOf('=');
                if (eq < 0) {
                    throw Cli.bad(spec, "--qos-weights '" + w + "' must be SALT=WEIGHT, e.g. rag:app1=300 (an empty"
                            + " salt: =300 for chunks without one)");
                }
                String salt = w.substring(0, eq);
                if (!known.contains(salt)) {
                    throw Cli.bad(spec, "--qos-weights '" + w + "': " + shown(salt) + " is not a cache salt of this"
                            + " run (" + String.join(", ", known.stream().map(RunCommand::shown).toList()) + "): weight"
                            + " one of those, or add it to " + (tenants == null ? "--salts" : "--tenants"));
                }
                if (given.containsKey(salt)) {
                    throw Cli.bad(spec, "--qos-weights gives cache salt " + shown(salt) + " two weights (" + given.get(salt)
                            + " and " + w.substring(eq + 1) + "): give it one");
                }
                int weight;
                try {
                    weight = Integer.parseInt(w.substring(eq + 1).trim());
                } catch (NumberFormatException ex) {
                    throw Cli.bad(spec, "--qos-weights '" + w + "': weight '" + w.substring(eq + 1) + "' is not a whole"
                            + " number: give one in " + QosScheduler.MIN_WEIGHT + ".." + QosScheduler.MAX_WEIGHT
                            + ", e.g. " + salt + "=300");
                }
                try {
                    qos.weight(salt, weight); // the wrapper's range
                } catch (IllegalArgumentException ex) {
                    throw Cli.bad(spec, "--qos-weights '" + w + "': " + ex.getMessage());
                }
                given.put(salt, weight);
            }
            if (qosQuantumBytes != null) {
                try {
                    qos.quantumBytes(qosQuantumBytes);
                } catch (IllegalArgumentException ex) {
                    throw Cli.bad(spec, "--qos-quantum-bytes " + qosQuantumBytes + ": " + ex.getMessage());
                }
            }
        } else if (qosQuantumBytes != null) {
            throw Cli.bad(spec, "--qos-quantum-bytes " + qosQuantumBytes + " sets the qos wrapper, which --qos-weights"
                    + " turns on: add it, e.g. --qos-weights " + runSalts().get(0) + "=300");
        }
        if (faultInjectRate != null) {
            Cli.fraction(spec, "--fault-inject-rate", faultInjectRate, "the share of the keys L2 finds that fail at load");
        } else if (faultInjectSeed != null) {
            throw Cli.bad(spec, "--fault-inject-seed " + faultInjectSeed + " chooses the keys of --fault-inject-rate,"
                    + " which is not given: add it, e.g. --fault-inject-rate 0.1");
        }
    }

    /** A cache salt as the report and messages show it: the empty one as "". */
    private static String shown(String salt) {
        return salt.isEmpty() ? "\"\"" : salt;
    }

    private boolean wraps() {
        return qos != null || faultInjectRate != null;
    }

    /** L2's locked keys in {@code status} (the store's count, through any wrapper). */
    private static long locksAtEnd(Map<String, Object> status) {
        return ((Number) status.getOrDefault("locked_keys", 0)).longValue();
    }

    /**
     * The run's adapter behind the wrappers its options ask for (which then own it), or null when none
     * is asked for. fault_inject goes inside qos: it stands for the storage failing a read, so it sits
     * next to the storage, and qos admits a load that then fails as the device served it (its bytes were
     * read), as docs/contract.md section 8 stacks them.
     */
    private L2Adapter wrapped(L2Adapter storage) throws IOException {
        L2Adapter a = storage;
        try {
            if (faultInjectRate != null) {
                a = FaultInjectL2Adapter.builder().rate(faultInjectRate)
                        .seed(faultInjectSeed != null ? faultInjectSeed : seed).wrap(a);
            }
            if (qos != null) {
                a = QosL2Adapter.wrap(a, qos.build());
            }
            return a;
        } catch (IOException | RuntimeException e) {
            a.close();
            throw e;
        }
    }

    /** The load deadline, retention and quota options (after --eviction and --evict-at are checked). */
    private void validateControllerOptions() {
        if (loadDeadlineMs < 0) {
            throw Cli.bad(spec, "--load-deadline-ms " + loadDeadlineMs + " must be >= 0 (0: no deadline)");
        }
        if (retentionTtlMs < 0) {
            throw Cli.bad(spec, "--retention-ttl-ms " + retentionTtlMs + " must be >= 0 (0: no retention)");
        }
        Cli.fraction(spec, "--retention-budget", retentionBudget, "the share of L2 retention may shield");
        if ((retentionTtlMs > 0) != (retentionBudget > 0)) {
            throw Cli.bad(spec, retentionTtlMs > 0
                    ? "--retention-ttl-ms " + retentionTtlMs + " needs --retention-budget: the share of L2 it may"
                            + " shield, e.g. --retention-budget 0.3"
                    : "--retention-budget " + retentionBudget + " retains nothing without --retention-ttl-ms, e.g."
                            + " --retention-ttl-ms 60000");
        }
        if (retentionBudget > 0 && !(retentionBudget < evictAt)) {
            throw Cli.bad(spec, "--retention-budget " + retentionBudget + " must be below --evict-at " + evictAt
                    + ", so that eviction always finds chunks it may take");
        }
        if (retentionBudget > 0 && Policies.RECLAIM_UNIT.equals(eviction)) {
            throw Cli.bad(spec, "--retention-budget needs an eviction that can keep retained chunks: --eviction lru or"
                    + " tenant_quota, not reclaim_unit");
        }
        if (tenantQuotas != null) {
            if (!Policies.TENANT_QUOTA.equals(eviction)) {
                throw Cli.bad(spec, "--tenant-quota applies to --eviction tenant_quota: add it (now --eviction "
                        + eviction + ")");
            }
            SimulateCommand.SizeConverter sizes = new SimulateCommand.SizeConverter();
            for (String q : tenantQuotas) {
                int eq = q.lastIndexOf('=');
                if (eq < 0) {
                    throw Cli.bad(spec, "--tenant-quota '" + q + "' must be SALT=BYTES, e.g. rag:app1=64M");
                }
                try {
                    quotaBytes.put(q.substring(0, eq), sizes.convert(q.substring(eq + 1)));
                    new TenantQuotas().set(q.substring(0, eq), 0); // the salt's rules
                } catch (CommandLine.TypeConversionException | IllegalArgumentException ex) {
                    throw Cli.bad(spec, "--tenant-quota '" + q + "': " + ex.getMessage());
                }
            }
        } else if (Policies.TENANT_QUOTA.equals(eviction)) {
            throw Cli.bad(spec, "--eviction tenant_quota evicts every tenant without a quota at once: give each one"
                    + " --tenant-quota SALT=BYTES, e.g. --tenant-quota rag:app1=64M,chat:app2=64M");
        }
    }

    /** The smallest device the job runs on: the metadata area and room for two of the longest prefixes. */
    private long minSize() {
        long slot = (long) chunkTokens * kvBytesPerToken + 4096;
        long slots = 2L * maxChunks;
        if (RawBlockCoreConfig.MetaFormat.parse(metaFormat) == RawBlockCoreConfig.MetaFormat.LMCACHE_V1) {
            return KvJobSetup.V1_META_TOTAL_BYTES + slots * slot;
        }
        long capacity = slots * slot; // fdpblock_v2 sizes its metadata from the capacity: a few rounds settle it
        for (int i = 0; i < 4; i++) {
            capacity = RawBlockCoreConfig.v2MetaBytesFor(4096, capacity / slot) + slots * slot;
        }
        return (capacity + 4095) / 4096 * 4096;
    }

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        int chunkBytes = validate();
        Path userDevice = device == null ? null : Path.of(device);
        if (userDevice != null) {
            checkUserDevice(userDevice);
        }
        try (StopOnSignal stop = new StopOnSignal(System.err, "finishing the current request, closing the store"
                + " (final checkpoint)" + (device == null ? " and removing the temp device" : ""), STOP_GRACE);
             Scratch scratch = new Scratch("fdpblock-run-", System.err, stop)) {
            Path path = userDevice;
            if (path == null) {
                Path dir = scratch.dir();
                Cli.fitsFreeSpace(spec, "--size", size, dir);
                path = Cli.createDeviceFile(spec, "--size", dir.resolve("kvcache.img"), size);
            } else if (!Files.exists(path)) {
                Cli.fitsFreeSpace(spec, "--size", size, path.toAbsolutePath().getParent());
                Cli.createDeviceFile(spec, "--size", path, size);
            }
            long ru = emulateFdp == null ? 0 : emulateFdp;
            String json = adapterJson(path.toString(), chunkBytes, format);
            out.printf("fdpblock run: KV-cache job on %s (%s%s), %s of it, model Qwen2.5-0.5B-like, chunk %d tokens ="
                    + " %d KiB, L1 %d chunks, %d requests%n", path, engine, fdp ? ", FDP" : "", Sizes.human(size),
                    chunkTokens, chunkBytes >> 10, l1Chunks, requests);
            KvCacheJob.Result r;
            Map<String, Object> status;
            Map<String, Object> managerStatus;
            KvCacheJob.Spec jobSpec = new KvCacheJob.Spec(requests, repeatRatio, salts, maxChunks, chunkBytes,
                    "Qwen/Qwen2.5-0.5B", 0, seed, tenantList, settle);
            StorageManager.Builder smb = KvJobSetup.manager(chunkBytes, l1Chunks).eviction(evictionPolicy, evictAt,
                    evictTo).loadDeadline(Duration.ofMillis(loadDeadlineMs))
                    .retention(retentionBudget, Duration.ofMillis(retentionTtlMs));
            quotaBytes.forEach(smb::tenantQuota);
            TracedAdapter traced = trace == null && ru == 0 ? null : TracedAdapter.open(json, trace, ru);
            boolean wraps = wraps();
            // the wrapper closes the store (final checkpoint) before a traced device closes
            try (traced; L2Adapter wrapper = wraps ? wrapped(traced != null ? traced.adapter() : L2Adapters.create(json))
                    : null;
                    StorageManager sm = (wrapper != null ? smb.adapter(wrapper) : traced != null
                            ? smb.adapter(traced.adapter()) : smb.adapterJson(json)).build()) {
                L2Adapter adapter = sm.adapters().get(0);
                KvCacheJob job = new KvCacheJob(sm, adapter, jobSpec);
                r = job.run(!noProgress, stop::requested);
                sm.stopControllers(); // no eviction round between this count and the close
                status = adapter.reportStatus();
                managerStatus = sm.status();
            } // closes the adapter: final checkpoint, a failure thrown (exit 3); a traced one after the manager
            if (trace != null) {
                out.printf("trace         %d records in %s: fdpblock simulate --trace %s%n", traced.records(), trace, trace);
            }
            int keysAtClose = ((Number) status.getOrDefault("keys", 0)).intValue();
            if (stop.requested()) {
                out.printf("%nfdpblock run: stopped by a signal after %d of %d requests; the store was closed with its"
                        + " final checkpoint (%d keys)%s%n", r.requests, requests, keysAtClose,
                        userDevice == null ? "; the temp device is removed" : " on " + path);
                return 130;
            }
            // the reopen must never format: it checks what the first open left
            Reopened again = reopenAndCheck(adapterJson(path.toString(), chunkBytes, false), chunkBytes, ru);
            Verdict v = verdict(r, again, keysAtClose);
            if (wraps && v.exitCode() == 0 && locksAtEnd(status) != 0) {
                // the wrappers change when and whether lookups and loads complete: every lock must still end
                v = new Verdict(1, "FAILED: " + locksAtEnd(status) + " L2 locks were still held after the controllers"
                        + " stopped (every lookup's lock is released by the prefetch's unlock, a failed load's too)");
            }
            report(out, r, status, managerStatus, again, keysAtClose, v);
            if (printStatus) {
                out.println(Json.indented(status));
            }
            return v.exitCode();
        }
    }

    /**
     * A --device: an existing device, or a file (created when missing, never under /dev and never for
     * NVMe passthru) large enough for --size.
     */
    private void checkUserDevice(Path file) throws Exception {
        boolean passthru = IoEngine.parse(engine) == IoEngine.URING_CMD;
        if (!Files.exists(file) && (passthru || file.toAbsolutePath().startsWith("/dev/"))) {
            throw Cli.bad(spec, "--device " + file + " does not exist: name an existing device (ls /dev/ng* for NVMe"
                    + " namespaces), or a file elsewhere to create");
        }
        String what = Cli.notFileOrDevice(file);
        if (what != null && !Files.isDirectory(file)) {
            throw Cli.bad(spec, "--device " + file + " is " + what + ", not a file or a device: name a file (created"
                    + " when missing) or a device");
        }
        if (passthru && !Files.isRegularFile(file) && !Files.isDirectory(file)) {
            return; // a character device: the engine says whether it is an NVMe namespace
        }
        if (Files.exists(file) && isCharacterDevice(file)) {
            throw Cli.bad(spec, "--device " + file + " is a character device: --engine " + engine + " needs a file or a"
                    + " block device; an NVMe namespace's generic device /dev/ngXnY needs --engine uring_cmd");
        }
        if (file.toAbsolutePath().startsWith("/dev/")) {
            return; // an existing block or character device
        }
        Cli.creatable(spec, "--device", file);
        if (Files.isRegularFile(file) && Files.size(file) < size) {
            long usable = Files.size(file) / 4096 * 4096;
            throw Cli.bad(spec, "--device " + file + " holds " + Files.size(file) + " bytes, fewer than --size " + size
                    + ": " + (usable >= minSize() ? "give a --size of at most " + usable + ", or " : "")
                    + "name a new file (created at --size)");
        }
    }

    private static boolean isCharacterDevice(Path p) throws IOException {
        int mode = (Integer) Files.getAttribute(p, "unix:mode");
        return (mode & 0170000) == 0020000; // S_IFCHR
    }

    /** The adapter's JSON ({@link KvJobSetup#adapterJson}). */
    private String adapterJson(String path, int chunkBytes, boolean formatIt) throws Exception {
        return KvJobSetup.adapterJson(new KvJobSetup.Store(path, size, chunkBytes, engine, metaFormat, formatIt,
                openDamaged), fdp,
                placement, emulateFdp != null);
    }

    /** What a second open of the device found. */
    record Reopened(int recovered, int sampled, int verified, int mismatched) {}

    /** The outcome: a check that checked nothing is not a pass. */
    record Verdict(int exitCode, String line) {}

    static Verdict verdict(KvCacheJob.Result r, Reopened again, int keysAtClose) {
        if (r.chunksMismatched > 0 || again.mismatched() > 0) {
            return new Verdict(1, "FAILED: bytes differ (" + r.chunksMismatched + " loaded chunks, "
                    + again.mismatched() + " after the reopen)");
        }
        if (again.recovered() < keysAtClose) {
            return new Verdict(1, "FAILED: the store held " + keysAtClose + " keys at close, the reopen recovered "
                    + again.recovered() + ": " + (keysAtClose - again.recovered()) + " keys lost");
        }
        if (again.sampled() == 0) {
            return new Verdict(1, "FAILED: the reopen found no keys to check, so nothing survived to be verified"
                    + " (the job stored " + r.chunksStored + " chunks)");
        }
        return new Verdict(0, "VERIFIED");
    }

    /** Reopens the store (recovery) and loads a sample of what it holds, checking the bytes. */
    private static Reopened reopenAndCheck(String json, int chunkBytes, long emulatedRu) throws Exception {
        // an emulated FDP namespace is one only through its wrapper
        try (TracedAdapter emulated = emulatedRu > 0 ? TracedAdapter.open(json, null, emulatedRu) : null;
                L2Adapter a = emulated != null ? emulated.adapter() : L2Adapters.create(json);
                Arena arena = Arena.ofShared()) {
            List<ObjectKey> held = new ArrayList<>();
            a.registerListener(new L2AdapterListener() {
                @Override
                public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
                    held.addAll(keys);
                }
            });
            List<ObjectKey> sample = held.subList(0, Math.min(64, held.size()));
            int verified = 0;
            int mismatched = 0;
            if (!sample.isEmpty()) {
                Bitmap locked = await(a, a.submitLookupAndLockTask(sample), false);
                List<MemoryObj> bufs = new ArrayList<>();
                MemorySegment region = IoMemory.allocate(arena, (long) sample.size() * chunkBytes);
                for (int i = 0; i < sample.size(); i++) {
                    bufs.add(MemoryObj.of(region.asSlice((long) i * chunkBytes, chunkBytes)));
                }
                Bitmap loaded = await(a, a.submitLoadTask(sample, bufs), true);
                a.submitUnlock(sample);
                for (int i = 0; i < sample.size(); i++) {
                    if (locked.get(i) && loaded.get(i) && KvCacheJob.matches(bufs.get(i).segment(),
                            KvCacheJob.contentSeed(sample.get(i)))) {
                        verified++;
                    } else {
                        mismatched++;
                    }
                }
            }
            return new Reopened(held.size(), sample.size(), verified, mismatched);
        }
    }

    private static Bitmap await(L2Adapter a, long id, boolean load) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (System.nanoTime() < deadline) {
            Bitmap b = load ? a.queryLoadResult(id) : a.queryLookupAndLockResult(id);
            if (b != null) {
                return b;
            }
            EventFd.await(load ? a.loadEventFd() : a.lookupAndLockEventFd(), Duration.ofMillis(100));
        }
        throw new IllegalStateException("task " + id + " did not complete within a minute");
    }

    /** One line: per cache salt of the run, its weight and what the qos wrapper admitted of it. */
    private void reportQos(PrintStream out, Map<?, ?> q) {
        Map<?, ?> admitted = (Map<?, ?>) q.get("admitted_by_cache_salt");
        Map<?, ?> weights = (Map<?, ?>) q.get("sched_weights");
        StringBuilder line = new StringBuilder();
        for (String salt : runSalts()) {
            Map<?, ?> a = admitted.get(salt) instanceof Map<?, ?> m ? m : Map.of();
            line.append(line.isEmpty() ? "" : "; ").append(shown(salt)).append(" weight ")
                    .append(weights.containsKey(salt) ? weights.get(salt) : q.get("default_sched_weight")).append(": ")
                    .append(countOf(a, "tasks")).append(" tasks, ").append(countOf(a, "bytes")).append(" bytes, ")
                    .append(countOf(a, "lookup_keys")).append(" lookup keys");
        }
        out.printf("qos           admitted by cache salt (quantum %s bytes): %s%n", q.get("quantum_bytes"), line);
    }

    private static Object countOf(Map<?, ?> m, String key) {
        Object v = m.get(key);
        return v == null ? 0 : v;
    }

    @SuppressWarnings("unchecked")
    private void report(PrintStream out, KvCacheJob.Result r, Map<String, Object> status,
            Map<String, Object> managerStatus, Reopened again, int keysAtClose, Verdict v) {
        double sec = r.nanos / 1e9;
        long keys = Math.max(1, r.keysRequested);
        out.println();
        out.printf("requests      %d in %.1f s (%.1f req/s), %d chunk keys asked for%n", r.requests, sec,
                r.requests / sec, r.keysRequested);
        out.printf("prefix hits   L1 %.1f %%, L2 %.1f %%, computed %.1f %%%n", 100.0 * r.l1PrefixHits / keys,
                100.0 * r.l2PrefixHits / keys, 100.0 * (keys - r.l1PrefixHits - r.l2PrefixHits) / keys);
        out.printf("stored        %d chunks, %s (%.1f MB/s); %d not stored (already in L1 or L1 full)%n",
                r.chunksStored, Sizes.human(r.bytesStored), r.bytesStored / sec / 1e6, r.storeSkipped);
        out.printf("L1            %s evictions; refused for lack of room: %s stores, %s prefetch reservations%n",
                managerStatus.get("l1_evictions"), managerStatus.get("l1_refused_stores"),
                managerStatus.get("l1_refused_prefetches"));
        out.printf("loaded        %s from L2 (%.1f MB/s)%n", Sizes.human(r.bytesLoaded), r.bytesLoaded / sec / 1e6);
        String usage = r.usageSamples == 0
                ? String.format("L2 never filled to the eviction's %.0f %% (at most %.1f %% used)", 100 * evictTo,
                        100 * r.usagePeak)
                : String.format("L2 usage after filling: mean %.1f %%, min %.1f %%", 100 * r.meanUsage(),
                        100 * r.usageMin);
        out.printf("evicted       %d keys from L2 (%s eviction, above %.0f %% %s); %s; L2 hit ratio %.3f (of the"
                + " keys L1 did not have)%n", r.evicted, eviction, 100 * evictAt, quotaBytes.isEmpty() ? "full"
                : "of a tenant's quota", usage, r.l2HitRatio());
        if (loadDeadlineMs > 0) {
            out.printf("deadline      %s prefetches answered at the %d ms load deadline%n",
                    managerStatus.get("prefetch_deadline_timeouts"), loadDeadlineMs);
        }
        if (managerStatus.get("retention") instanceof Map<?, ?> ret) {
            out.printf("retention     %s chunks shielded for %d ms (%s bytes of a budget of %s), %s past the budget%n",
                    ret.get("retained_keys"), retentionTtlMs, ret.get("retained_bytes"), ret.get("max_retained_bytes"),
                    ret.get("budget_rejections"));
        }
        if (!quotaBytes.isEmpty()) {
            out.printf("quotas        %s bytes; used in L2 at the end %s%n", quotaBytes,
                    managerStatus.get("l2_bytes_by_cache_salt"));
        }
        if (status.get("qos") instanceof Map<?, ?> q) {
            reportQos(out, q);
        }
        if (status.get("fault_inject") instanceof Map<?, ?> f) {
            out.printf("fault inject  rate %s, seed %s: %s keys failed at load on purpose, in %s of the %s loads L2 did;"
                    + " each one a miss, computed and stored again; %d of %d requests answered%n", f.get("rate"),
                    f.get("seed"), f.get("dropped_keys"), f.get("faulted_loads"),
                    ((Map<?, ?>) status.get("load")).get("tasks"), r.requests, requests);
        }
        if (wraps()) {
            out.printf("locks         %d L2 locks held at the end (every lookup's released by its prefetch)%n",
                    locksAtEnd(status));
        }
        out.printf("latency (us)  %-36s %9s %9s %9s %9s%n", "", "p50", "p99", "p99.9", "max");
        for (String op : List.of("store", "lookup", "load")) {
            Map<String, Object> m = (Map<String, Object>) status.get(op);
            out.printf("              %-36s %9.0f %9.0f %9.0f %9.0f%n", op + " (L2 task, submit -> eventfd)",
                    (Double) m.get("p50_us"), (Double) m.get("p99_us"), (Double) m.get("p999_us"), (Double) m.get("max_us"));
        }
        Histogram h = r.requestLatencyNanos;
        out.printf("              %-36s %9.0f %9.0f %9.0f %9.0f%n", "request (prefetch+check+store)",
                h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(99) / 1e3, h.getValueAtPercentile(99.9) / 1e3,
                h.getMaxValue() / 1e3);
        out.printf("placement     bytes written by placement id %s (none = no directive)%n",
                status.get("bytes_written_by_placement_id"));
        if (status.containsKey("fdp_buckets")) {
            out.printf("              buckets %s, fallbacks %s%n", status.get("fdp_buckets"),
                    status.get("fdp_placement_fallbacks"));
        }
        if ("fdpblock_v2".equals(status.get("meta_format"))) {
            out.printf("metadata      fdpblock_v2: %s log commits, %s snapshots, %s bytes of metadata written (%s failed)%n",
                    status.get("log_commits"), status.get("snapshots_written"), status.get("meta_bytes_written"),
                    status.get("checkpoint_failures"));
        } else {
            out.printf("checkpoints   %s periodic ones written during the run, the last %s bytes, plus the final one at"
                    + " close (%s failed)%n", status.get("checkpoints_written"), status.get("last_checkpoint_bytes"),
                    status.get("checkpoint_failures"));
        }
        out.println();
        out.printf("checked       %d loaded chunks equal byte for byte what was stored (%d differ)%n", r.chunksVerified,
                r.chunksMismatched);
        out.printf("              reopened the device: %d keys recovered of %d held at close, %d of %d sampled chunks"
                + " loaded and equal%n", again.recovered(), keysAtClose, again.verified(), again.sampled());
        out.println(v.line());
    }
}
