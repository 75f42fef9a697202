package io.fdpblock.cli;

import io.fdpblock.cache.KvLayout;
import io.fdpblock.controller.EvictionController;
import io.fdpblock.controller.PrefetchHandle;
import io.fdpblock.controller.StorageManager;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;

import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.HdrHistogram.Histogram;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.BooleanSupplier;

/**
 * An LMCache-like KV-cache workload through a {@link StorageManager}: requests whose chunk keys share
 * prefixes, several cache salts, a mix of new prefixes and repeats. Each request prefetches its
 * longest cached prefix (L1, then L2), checks every loaded chunk byte for byte, and stores the chunks
 * it had to "compute". The manager's eviction controllers (LRU by default) keep L2 below its threshold,
 * as LMCache's eviction controller would; the job gives them a round after each request, so that when
 * they evict does not depend on thread timing.
 */
final class KvCacheJob {
    /**
     * What the job is asked to do. With {@code tenants}, each request belongs to a tenant (drawn by share)
     * that has its own salt, repeat ratio and history; without, new prefixes draw a salt from {@code salts}
     * and repeats draw from every request so far. With {@code settle}, each request waits for its stores to
     * reach L2 before the next one starts: every computed chunk is stored (none skipped because L1 is full of
     * chunks still on their way), and what L2 holds at each request does not depend on thread timing. With
     * {@code sessions}, the requests are multi-turn sessions over shared documents ({@link SessionWorkload},
     * documents taking {@code salts} in turn) and the repeat ratio, max chunks and tenants are not used.
     */
    record Spec(int requests, double repeatRatio, List<String> salts, int maxChunks, int chunkBytes, String model,
            int kvRank, long seed, List<Tenant> tenants, boolean settle, SessionWorkload.Params sessions) {
        Spec(int requests, double repeatRatio, List<String> salts, int maxChunks, int chunkBytes, String model,
                int kvRank, long seed, List<Tenant> tenants, boolean settle) {
            this(requests, repeatRatio, salts, maxChunks, chunkBytes, model, kvRank, seed, tenants, settle, null);
        }

        Spec(int requests, double repeatRatio, List<String> salts, int maxChunks, int chunkBytes, String model,
                int kvRank, long seed) {
            this(requests, repeatRatio, salts, maxChunks, chunkBytes, model, kvRank, seed, List.of(), false);
        }
    }

    /**
     * A tenant of a multi-tenant job: its cache salt, its share of the requests, how often it repeats a
     * prefix of its own, and from how many of its latest requests a repeat is drawn (0 = all of them): a
     * short window is data that stops being useful soon (short-lived), a long one data reused for long.
     */
    record Tenant(String salt, double share, double repeatRatio, int window) {
        /** {@code salt=share/repeat/window}, e.g. {@code chat:s=0.5/0.7/50}. */
        static Tenant parse(String s) {
            int eq = s.lastIndexOf('=');
            String[] v = eq < 0 ? new String[0] : s.substring(eq + 1).split("/");
            try {
                if (v.length != 3) {
                    throw new NumberFormatException();
                }
                Tenant t = new Tenant(s.substring(0, eq), Double.parseDouble(v[0]), Double.parseDouble(v[1]),
                        Integer.parseInt(v[2]));
                if (!(t.share > 0) || t.repeatRatio < 0 || t.repeatRatio > 1 || t.window < 0) {
                    throw new NumberFormatException();
                }
                return t;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("tenant '" + s + "' must be salt=share/repeat/window with share > 0,"
                        + " repeat in 0..1 and window >= 0 (0 = all its requests), e.g. chat:s=0.5/0.7/50");
            }
        }
    }

    /** What it did. */
    static final class Result {
        int requests;
        long keysRequested;
        long l1PrefixHits;
        long l2PrefixHits;
        long chunksStored;
        long storeSkipped;
        long bytesStored;
        long bytesLoaded;
        long chunksVerified;
        long chunksMismatched;
        long evicted;
        long nanos;
        /** L2 usage fraction after each request once it first reached the low watermark: sum, count, min. */
        double usageSum;
        long usageSamples;
        double usageMin = Double.NaN;
        /** The highest L2 usage fraction after any request (filled or not). */
        double usagePeak;

        /** Of the keys L1 did not have, the share L2 served. */
        double l2HitRatio() {
            long asked = keysRequested - l1PrefixHits;
            return asked == 0 ? 0 : (double) l2PrefixHits / asked;
        }

        /** Mean L2 usage in steady state (NaN before it filled). */
        double meanUsage() {
            return usageSamples == 0 ? Double.NaN : usageSum / usageSamples;
        }
        final Histogram requestLatencyNanos = new Histogram(3_600_000_000_000L, 3);
    }

    private final StorageManager sm;
    private final L2Adapter adapter;
    private final Spec spec;
    private final KvLayout layout;

    KvCacheJob(StorageManager sm, L2Adapter adapter, Spec spec) {
        this.sm = sm;
        this.adapter = adapter;
        this.spec = spec;
        this.layout = KvLayout.ofBytes(spec.chunkBytes());
    }

    /** Chunk key {@code index} of prefix {@code prefixId}: requests that share a prefix share these keys. */
    ObjectKey key(long prefixId, int index, String salt) {
        byte[] hash = ByteBuffer.allocate(16).putLong(prefixId * 0x9E3779B97F4A7C15L ^ spec.seed()).putLong(index)
                .array();
        return ObjectKey.of(spec.model(), spec.kvRank(), hash).withCacheSalt(salt);
    }

    /** The chunk's bytes are a function of its key, so a load is checked without keeping copies. */
    static long contentSeed(ObjectKey k) {
        return Arrays.hashCode(k.chunkHash()) * 31L + k.cacheSalt().hashCode();
    }

    static void fill(MemorySegment s, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG, i, r.nextLong());
        }
    }

    static boolean matches(MemorySegment s, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            if (s.get(ValueLayout.JAVA_LONG, i) != r.nextLong()) {
                return false;
            }
        }
        return true;
    }

    private record Prefix(long id, String salt, int length) {}

    /**
     * Runs the requests; {@code stop} is asked before each one (a signal ends the job early). The eviction
     * controllers are stopped at the end, so that what the result counts is what L2 holds.
     */
    Result run(boolean progress, BooleanSupplier stop) throws Exception {
        Result res = new Result();
        SplittableRandom rnd = new SplittableRandom(spec.seed());
        List<Prefix> seen = new ArrayList<>();
        List<List<Prefix>> seenBy = new ArrayList<>();
        double shares = 0;
        for (Tenant t : spec.tenants()) {
            seenBy.add(new ArrayList<>());
            shares += t.share();
        }
        long t0 = System.nanoTime();
        try (ProgressBar bar = progress ? new ProgressBarBuilder().setTaskName("KV requests").setInitialMax(spec.requests())
                .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(250).build() : null) {
            SessionWorkload sessions = spec.sessions() == null ? null
                    : new SessionWorkload(spec.sessions(), spec.salts(), spec.seed());
            for (int r = 0; r < spec.requests() && !stop.getAsBoolean(); r++) {
                if (sessions != null) {
                    SessionWorkload.Turn t = sessions.next();
                    List<ObjectKey> keys = new ArrayList<>(t.documentChunks() + t.sessionChunks());
                    for (long[] c : SessionWorkload.chunks(t)) {
                        keys.add(key(c[0], (int) c[1], t.salt()));
                    }
                    request(keys, res);
                } else {
                    request(keys(spec.tenants().isEmpty() ? next(rnd, seen, spec.repeatRatio(), 0, null)
                            : nextOfTenant(rnd, seenBy, shares)), res);
                }
                if (spec.settle() && !sm.awaitStoresIdle(Duration.ofMinutes(1))) {
                    throw new IllegalStateException("the stores of request " + r + " did not finish within a minute");
                }
                for (EvictionController ec : sm.evictionControllers()) {
                    ec.evictIfNeeded();
                }
                sampleUsage(res);
                if (bar != null) {
                    bar.step();
                    bar.setExtraMessage(String.format("L1 %d L2 %d hits", res.l1PrefixHits, res.l2PrefixHits));
                }
            }
            if (!sm.awaitStoresIdle(Duration.ofMinutes(2))) {
                throw new IllegalStateException("stores did not finish within 2 minutes");
            }
        }
        res.nanos = System.nanoTime() - t0;
        // the last stores may have started a round on a controller's thread: stop waits for it, so that the
        // count has every key evicted and nothing is evicted after it; the round before it leaves L2 below
        // the high watermark whether or not the thread got to it
        for (EvictionController ec : sm.evictionControllers()) {
            ec.evictIfNeeded();
            ec.stop();
            res.evicted += ((Number) ec.status().get("evicted_keys")).longValue();
        }
        return res;
    }

    /** Records L2 usage after a request, from the first time it reached the eviction's low watermark. */
    private void sampleUsage(Result res) {
        double u = adapter.usage().usageFraction();
        res.usagePeak = Math.max(res.usagePeak, u);
        List<EvictionController> ecs = sm.evictionControllers();
        if (res.usageSamples > 0 || (!ecs.isEmpty() && u >= ecs.get(0).lowWatermark())) {
            res.usageSum += u;
            res.usageSamples++;
            res.usageMin = res.usageSamples == 1 ? u : Math.min(res.usageMin, u);
        }
    }

    /**
     * The next request: a repeat of one of the last {@code window} (0 = all) of {@code seen} with
     * probability {@code repeat}, else a new prefix (salt {@code salt}, or one of the spec's salts).
     */
    private Prefix next(SplittableRandom rnd, List<Prefix> seen, double repeat, int window, String salt) {
        Prefix p;
        if (!seen.isEmpty() && rnd.nextDouble() < repeat) {
            int from = window == 0 ? 0 : Math.max(0, seen.size() - window);
            Prefix old = seen.get(from + rnd.nextInt(seen.size() - from));
            // a follow-up turn: the same prefix, sometimes a few chunks longer
            p = new Prefix(old.id(), old.salt(), Math.min(spec.maxChunks(), old.length() + rnd.nextInt(3)));
        } else {
            p = new Prefix(rnd.nextLong(), salt != null ? salt : spec.salts().get(rnd.nextInt(spec.salts().size())),
                    2 + rnd.nextInt(spec.maxChunks() - 1));
        }
        seen.add(p);
        return p;
    }

    private Prefix nextOfTenant(SplittableRandom rnd, List<List<Prefix>> seenBy, double shares) {
        double x = rnd.nextDouble() * shares;
        int i = 0;
        while (i < spec.tenants().size() - 1 && x >= spec.tenants().get(i).share()) {
            x -= spec.tenants().get(i).share();
            i++;
        }
        Tenant t = spec.tenants().get(i);
        return next(rnd, seenBy.get(i), t.repeatRatio(), t.window(), t.salt());
    }

    private List<ObjectKey> keys(Prefix p) {
        List<ObjectKey> keys = new ArrayList<>(p.length());
        for (int i = 0; i < p.length(); i++) {
            keys.add(key(p.id(), i, p.salt()));
        }
        return keys;
    }

    /** One request for {@code keys} (a prefix: a chunk is useful only after all those before it). */
    private void request(List<ObjectKey> keys, Result res) throws Exception {
        long start = System.nanoTime();
        res.requests++;
        res.keysRequested += keys.size();
        PrefetchHandle h = sm.submitPrefetchTask(keys, layout);
        Integer found = sm.awaitPrefetchStatus(h, Duration.ofMinutes(1));
        if (found == null) {
            throw new IllegalStateException("prefetch of " + keys.size() + " keys did not finish within a minute");
        }
        res.l1PrefixHits += h.l1PrefixHitCount();
        res.l2PrefixHits += found - h.l1PrefixHitCount();
        List<ObjectKey> hit = keys.subList(0, found);
        List<MemoryObj> objs = sm.readPrefetchedResults(hit);
        try {
            for (int i = 0; i < objs.size(); i++) {
                MemorySegment s = objs.get(i).segment().asSlice(0, spec.chunkBytes());
                if (matches(s, contentSeed(hit.get(i)))) {
                    res.chunksVerified++;
                } else {
                    res.chunksMismatched++;
                }
                if (i >= h.l1PrefixHitCount()) {
                    res.bytesLoaded += spec.chunkBytes();
                }
            }
        } finally {
            sm.finishReadPrefetched(hit);
        }
        // The engine computes the rest and LMCache stores it: zero-copy into L1, then to L2.
        List<ObjectKey> missing = keys.subList(found, keys.size());
        if (!missing.isEmpty()) {
            List<MemoryObj> slots = sm.reserveWrite(missing, layout);
            List<ObjectKey> written = new ArrayList<>(missing.size());
            for (int i = 0; i < missing.size(); i++) {
                MemoryObj o = slots.get(i);
                if (o == null) {
                    res.storeSkipped++; // already in L1 or L1 full: LMCache skips it too
                    continue;
                }
                fill(o.segment().asSlice(0, spec.chunkBytes()), contentSeed(missing.get(i)));
                written.add(missing.get(i));
            }
            sm.finishWrite(written);
            res.chunksStored += written.size();
            res.bytesStored += (long) written.size() * spec.chunkBytes();
        }
        res.requestLatencyNanos.recordValue(Math.min(3_600_000_000_000L, System.nanoTime() - start));
    }

    static Map<String, Object> summary(Result r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("requests", r.requests);
        m.put("keys_requested", r.keysRequested);
        m.put("l1_prefix_hits", r.l1PrefixHits);
        m.put("l2_prefix_hits", r.l2PrefixHits);
        m.put("chunks_stored", r.chunksStored);
        m.put("chunks_verified", r.chunksVerified);
        m.put("chunks_mismatched", r.chunksMismatched);
        return m;
    }
}
