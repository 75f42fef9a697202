package io.fdpblock.cli;

import io.fdpblock.controller.StorageManager;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;
import io.fdpblock.l2.L2Adapters;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.linux.EventFd;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The main job: an LMCache-like KV-cache workload through StorageManager, both controllers and the
 * raw-block adapter, on a file-backed device in a temp dir (default) or an NVMe namespace.
 */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = "The main job: a KV-cache workload (shared prefixes, several cache salts, new and repeated"
                + " requests) through StorageManager, the store/prefetch controllers and the raw-block adapter;"
                + " every loaded chunk is checked byte for byte, and the device is reopened to check what survived.")
public final class RunCommand implements Callable<Integer> {
    @Option(names = "--device", description = "An NVMe generic device (/dev/ngXnY) or a file to use instead of a temp file")
    String device;

    @Option(names = "--engine", defaultValue = "io_uring", description = "io_uring (default), posix, or uring_cmd (NVMe)")
    String engine;

    @Option(names = "--fdp", description = "FDP placement: cache_salt_prefix buckets, checkpoints on their own id")
    boolean fdp;

    @Option(names = "--size", defaultValue = "1073741824", description = "Bytes of device to use (default 1 GiB)")
    long size;

    @Option(names = "--requests", defaultValue = "1500", description = "Requests to run")
    int requests;

    @Option(names = "--repeat-ratio", defaultValue = "0.6", description = "Share of requests that repeat a seen prefix")
    double repeatRatio;

    @Option(names = "--salts", split = ",", defaultValue = "rag:app1,chat:app2,code:app3,",
            description = "Cache salts to spread requests over (an empty one = no salt)")
    List<String> salts;

    @Option(names = "--chunk-tokens", defaultValue = "64",
            description = "Tokens per chunk (LMCache's default is 256; 64 keeps the default run short)")
    int chunkTokens;

    @Option(names = "--kv-bytes-per-token", defaultValue = "12288",
            description = "KV bytes per token: 2 (K,V) x layers x KV heads x head dim x dtype bytes; default"
                    + " Qwen2.5-0.5B in bf16 = 2 x 24 x 2 x 64 x 2")
    int kvBytesPerToken;

    @Option(names = "--max-chunks", defaultValue = "12", description = "Longest prefix, in chunks")
    int maxChunks;

    @Option(names = "--l1-chunks", defaultValue = "64", description = "L1 (CPU memory) size, in chunks")
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
            + " (per key) or reclaim_unit (whole reclaim-unit groups; needs --fdp) (default ${DEFAULT-VALUE})")
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

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        int chunkBytes = Math.multiplyExact(chunkTokens, kvBytesPerToken);
        if (chunkBytes % 4096 != 0 || chunkBytes <= 0) {
            throw new IllegalArgumentException("--chunk-tokens x --kv-bytes-per-token = " + chunkBytes
                    + " must be a positive multiple of 4096");
        }
        if (requests < 1 || maxChunks < 2 || l1Chunks < maxChunks || repeatRatio < 0 || repeatRatio > 1) {
            throw new IllegalArgumentException("need --requests >= 1, --max-chunks >= 2, --l1-chunks >= --max-chunks ("
                    + maxChunks + ") and --repeat-ratio in 0..1");
        }
        Path tempDir = null;
        String path = device;
        if (path == null) {
            tempDir = BlockDevices.directIoTempDir("fdpblock-run-");
            path = BlockDevices.createFile(tempDir.resolve("kvcache.img"), size).toString();
        }
        long ru = emulateFdp == null ? 0 : emulateFdp;
        String json = KvJobSetup.adapterJson(path, size, chunkBytes, engine, fdp, placement, ru > 0);
        var evictionPolicy = KvJobSetup.eviction(eviction, groupOrder);
        List<KvCacheJob.Tenant> tenantList = tenants == null ? List.of()
                : tenants.stream().map(KvCacheJob.Tenant::parse).toList();
        out.printf("fdpblock run: KV-cache job on %s (%s%s), %s of it, model Qwen2.5-0.5B-like, chunk %d tokens = %d"
                + " KiB, L1 %d chunks, %d requests%n", path, engine, fdp ? ", FDP" : "", EnginesCommand.human(size),
                chunkTokens, chunkBytes >> 10, l1Chunks, requests);
        try {
            KvCacheJob.Result r;
            Map<String, Object> status;
            KvCacheJob.Spec spec = new KvCacheJob.Spec(requests, repeatRatio, salts, maxChunks, chunkBytes,
                    "Qwen/Qwen2.5-0.5B", 0, seed, tenantList, settle);
            StorageManager.Builder smb = KvJobSetup.manager(chunkBytes, l1Chunks).eviction(evictionPolicy, evictAt, evictTo);
            TracedAdapter traced = trace == null && ru == 0 ? null : TracedAdapter.open(json, trace, ru);
            try (traced; StorageManager sm = (traced == null ? smb.adapterJson(json) : smb.adapter(traced.adapter())).build()) {
                L2Adapter adapter = sm.adapters().get(0);
                KvCacheJob job = new KvCacheJob(sm, adapter, spec);
                r = job.run(!noProgress);
                status = adapter.reportStatus();
            } // closes the adapter: final checkpoint (a traced one after the manager; then the device and its trace)
            if (trace != null) {
                out.printf("trace         %d records in %s: fdpblock simulate --trace %s%n", traced.records(), trace, trace);
            }
            Reopened again = reopenAndCheck(json, chunkBytes, ru);
            report(out, r, status, again, chunkBytes);
            if (printStatus) {
                out.println(new com.fasterxml.jackson.databind.ObjectMapper()
                        .enable(com.fasterxml.jackson.databind.SerializationFeature.INDENT_OUTPUT).writeValueAsString(status));
            }
            return r.chunksMismatched == 0 && again.mismatched == 0 ? 0 : 1;
        } finally {
            if (tempDir != null) {
                Files.deleteIfExists(Path.of(path));
                Files.deleteIfExists(tempDir);
            }
        }
    }

    /** What a second open of the device found. */
    record Reopened(int recovered, int sampled, int verified, int mismatched) {}

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
                for (int i = 0; i < sample.size(); i++) {
                    bufs.add(MemoryObj.of(arena.allocate(chunkBytes, 4096)));
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

    @SuppressWarnings("unchecked")
    private void report(PrintStream out, KvCacheJob.Result r, Map<String, Object> status, Reopened again,
            int chunkBytes) {
        double sec = r.nanos / 1e9;
        long keys = Math.max(1, r.keysRequested);
        out.println();
        out.printf("requests      %d in %.1f s (%.1f req/s), %d chunk keys asked for%n", r.requests, sec,
                r.requests / sec, r.keysRequested);
        out.printf("prefix hits   L1 %.1f %%, L2 %.1f %%, computed %.1f %%%n", 100.0 * r.l1PrefixHits / keys,
                100.0 * r.l2PrefixHits / keys, 100.0 * (keys - r.l1PrefixHits - r.l2PrefixHits) / keys);
        out.printf("stored        %d chunks, %s (%.1f MB/s); %d not stored (already in L1 or L1 full)%n",
                r.chunksStored, EnginesCommand.human(r.bytesStored), r.bytesStored / sec / 1e6, r.storeSkipped);
        out.printf("loaded        %s from L2 (%.1f MB/s)%n", EnginesCommand.human(r.bytesLoaded), r.bytesLoaded / sec / 1e6);
        out.printf("evicted       %d keys from L2 (%s eviction, above %.0f %% full); L2 usage after filling: mean %.1f %%,"
                + " min %.1f %%; L2 hit ratio %.3f (of the keys L1 did not have)%n", r.evicted, eviction, 100 * evictAt,
                100 * r.meanUsage(), 100 * r.usageMin, r.l2HitRatio());
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
        out.printf("checkpoints   %s periodic ones written during the run, the last %s bytes, plus the final one at close%n",
                status.get("checkpoints_written"), status.get("last_checkpoint_bytes"));
        out.println();
        out.printf("checked       %d loaded chunks equal byte for byte what was stored (%d differ)%n", r.chunksVerified,
                r.chunksMismatched);
        out.printf("              reopened the device: %d keys recovered, %d of %d sampled chunks loaded and equal%n",
                again.recovered(), again.verified(), again.sampled());
        out.println(r.chunksMismatched == 0 && again.mismatched() == 0 ? "VERIFIED" : "FAILED: bytes differ");
    }
}
