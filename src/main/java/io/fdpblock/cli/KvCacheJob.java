package io.fdpblock.cli;

import io.fdpblock.controller.KvLayout;
import io.fdpblock.controller.PrefetchHandle;
import io.fdpblock.controller.StorageManager;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;
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
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * An LMCache-like KV-cache workload through a {@link StorageManager}: requests whose chunk keys share
 * prefixes, several cache salts, a mix of new prefixes and repeats. Each request prefetches its
 * longest cached prefix (L1, then L2), checks every loaded chunk byte for byte, and stores the chunks
 * it had to "compute". A small LRU evicts from L2 when it fills, as LMCache's eviction controller would.
 */
final class KvCacheJob {
    /** What the job is asked to do. */
    record Spec(int requests, double repeatRatio, List<String> salts, int maxChunks, int chunkBytes, String model,
            int kvRank, long seed) {}

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
        final Histogram requestLatencyNanos = new Histogram(3_600_000_000_000L, 3);
    }

    private final StorageManager sm;
    private final L2Adapter adapter;
    private final Spec spec;
    private final KvLayout layout;
    /** L2 keys in least-recently-used order (stores and loads touch them). */
    private final LinkedHashMap<ObjectKey, Boolean> lru = new LinkedHashMap<>(16, 0.75f, true);

    KvCacheJob(StorageManager sm, L2Adapter adapter, Spec spec) {
        this.sm = sm;
        this.adapter = adapter;
        this.spec = spec;
        this.layout = KvLayout.ofBytes(spec.chunkBytes());
        adapter.registerListener(new L2AdapterListener() {
            @Override
            public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
                synchronized (lru) {
                    keys.forEach(k -> lru.put(k, Boolean.TRUE));
                }
            }

            @Override
            public void onKeysAccessed(List<ObjectKey> keys) {
                synchronized (lru) {
                    keys.forEach(lru::get);
                }
            }

            @Override
            public void onKeysDeleted(List<ObjectKey> keys) {
                synchronized (lru) {
                    keys.forEach(lru::remove);
                }
            }
        });
    }

    /** Chunk key {@code index} of prefix {@code prefixId}: requests that share a prefix share these keys. */
    ObjectKey key(long prefixId, int index, String salt) {
        byte[] hash = ByteBuffer.allocate(16).putLong(prefixId * 0x9E3779B97F4A7C15L ^ spec.seed()).putLong(index)
                .array();
        return ObjectKey.of(spec.model(), spec.kvRank(), hash).withCacheSalt(salt);
    }

    /** The chunk's bytes are a function of its key, so a load is checked without keeping copies. */
    static long contentSeed(ObjectKey k) {
        return java.util.Arrays.hashCode(k.chunkHash()) * 31L + k.cacheSalt().hashCode();
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

    /** Runs the requests; {@code stop} is asked before each one (a signal ends the job early). */
    Result run(boolean progress, java.util.function.BooleanSupplier stop) throws Exception {
        Result res = new Result();
        SplittableRandom rnd = new SplittableRandom(spec.seed());
        List<Prefix> seen = new ArrayList<>();
        long t0 = System.nanoTime();
        try (ProgressBar bar = progress ? new ProgressBarBuilder().setTaskName("KV requests").setInitialMax(spec.requests())
                .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(250).build() : null) {
            for (int r = 0; r < spec.requests() && !stop.getAsBoolean(); r++) {
                Prefix p;
                if (!seen.isEmpty() && rnd.nextDouble() < spec.repeatRatio()) {
                    Prefix old = seen.get(rnd.nextInt(seen.size()));
                    // a follow-up turn: the same prefix, sometimes a few chunks longer
                    p = new Prefix(old.id(), old.salt(), Math.min(spec.maxChunks(), old.length() + rnd.nextInt(3)));
                } else {
                    p = new Prefix(rnd.nextLong(), spec.salts().get(rnd.nextInt(spec.salts().size())),
                            2 + rnd.nextInt(spec.maxChunks() - 1));
                }
                seen.add(p);
                request(p, res);
                evictIfFull(res);
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
        return res;
    }

    private void request(Prefix p, Result res) throws Exception {
        long start = System.nanoTime();
        List<ObjectKey> keys = new ArrayList<>(p.length());
        for (int i = 0; i < p.length(); i++) {
            keys.add(key(p.id(), i, p.salt()));
        }
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

    /** Above 85 % of the device, delete least-recently-used keys down to 75 % (locked ones stay). */
    private void evictIfFull(Result res) {
        var usage = adapter.usage();
        if (usage.usageFraction() < 0.85) {
            return;
        }
        long target = (long) (usage.totalCapacityBytes() * 0.75);
        long over = usage.totalBytesUsed() - target;
        long perKey = Math.max(1, usage.totalBytesUsed() / Math.max(1, lru.size()));
        List<ObjectKey> victims = new ArrayList<>();
        synchronized (lru) {
            Iterator<ObjectKey> it = lru.keySet().iterator();
            while (it.hasNext() && victims.size() * perKey < over) {
                victims.add(it.next());
            }
        }
        adapter.delete(victims);
        res.evicted += victims.size();
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
