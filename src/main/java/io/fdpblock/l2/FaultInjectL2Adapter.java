package io.fdpblock.l2;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.util.Blake2b64;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * A wrapper for tests (type {@code fault_inject}, LMCache's fault-injecting adapter): keys the inner
 * adapter finds at lookup fail at load. Only the load result is changed: the chosen positions of a
 * load read as misses. Everything else, the eventfds and task ids included, is the inner adapter's
 * (docs/contract.md section 8).
 *
 * <p>A load position is dropped when any of these holds:
 * <ul>
 * <li>its key's chunk hash is one of {@code drop_chunk_hashes} (the same chunk fails in every load);
 * <li>its index is one of {@code gap_indices} (counted from the head of the load's key list);
 * <li>it is the index {@code round_half_even((1 - r) * (n - 1))} of a ratio {@code r} of
 *     {@code gap_tail_ratios} for a load of {@code n} keys (0 = last, 0.5 = middle, 1 = first);
 * <li>{@code rate > 0} and its key falls in the seeded hash bucket: BLAKE2b with an 8-byte digest over
 *     {@code "<seed>:<chunk hash hex>:<model>:<kv rank>:<group>:<salt>"}, read big-endian, modulo
 *     1,000,000, below {@code rate * 1,000,000}, which is LMCache's selection, so a seed drops the same
 *     keys in both.
 * </ul>
 *
 * <p>The dropped key was loaded by the inner adapter all the same: its buffer may hold the payload (as
 * a raw-block load whose checksum fails may), and the inner adapter's listeners hear it as accessed.
 * The wrapper unlocks nothing: the caller's unlock of the keys it planned to load (the prefetch
 * controller's phase-2 unlock) releases a failed key's lock as it releases a loaded one's.
 */
public final class FaultInjectL2Adapter extends ForwardingL2Adapter {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.l2");
    private static final long HASH_BUCKETS = 1_000_000;
    private static final HexFormat HEX = HexFormat.of();

    private final double rate;
    private final long rateThreshold;
    private final long seed;
    private final int[] gapIndices;
    private final double[] gapTailRatios;
    private final Set<String> dropChunkHashes;
    /** Per load task (the inner adapter's id) with drops: the positions to clear in its result. */
    private final ConcurrentHashMap<Long, int[]> dropsByLoad = new ConcurrentHashMap<>();
    private final LongAdder droppedKeys = new LongAdder();
    private final LongAdder faultedLoads = new LongAdder();

    private FaultInjectL2Adapter(L2Adapter inner, Builder b) {
        super(inner);
        this.rate = b.rate;
        this.rateThreshold = (long) (b.rate * HASH_BUCKETS);
        this.seed = b.seed;
        this.gapIndices = b.gapIndices.stream().mapToInt(Integer::intValue).sorted().distinct().toArray();
        this.gapTailRatios = b.gapTailRatios.stream().mapToDouble(Double::doubleValue).toArray();
        this.dropChunkHashes = Set.copyOf(b.dropChunkHashes);
        LOG.log(System.Logger.Level.WARNING, "fault_inject ACTIVE over " + inner + ": " + describeFaults()
                + "; loads of these keys fail on purpose (tests and diagnostics only)");
    }

    /** A builder of the faults; {@link Builder#wrap} makes the adapter. */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    protected String kind() {
        return "fault_inject";
    }

    @Override
    public long submitLoadTask(List<ObjectKey> keys, List<MemoryObj> objects) {
        checkOpen();
        long id = inner().submitLoadTask(keys, objects); // first: bad arguments throw there, nothing recorded
        int[] drops = dropPositions(keys);
        if (drops.length > 0) {
            // only the submitter knows the id yet, so its query cannot come before this
            dropsByLoad.put(id, drops);
        }
        return id;
    }

    @Override
    public Bitmap queryLoadResult(long taskId) {
        checkOpen();
        Bitmap hits = inner().queryLoadResult(taskId);
        if (hits == null) {
            return null;
        }
        int[] drops = dropsByLoad.remove(taskId);
        if (drops != null) {
            int cleared = 0;
            for (int i : drops) {
                if (hits.get(i)) {
                    hits.clear(i);
                    cleared++;
                }
            }
            if (cleared > 0) {
                droppedKeys.add(cleared);
                faultedLoads.increment();
            }
        }
        return hits;
    }

    /** The positions of {@code keys} a load of them fails, ascending. */
    int[] dropPositions(List<ObjectKey> keys) {
        int n = keys.size();
        boolean[] drop = new boolean[n];
        for (int i : gapIndices) {
            if (i < n) {
                drop[i] = true;
            }
        }
        for (double r : gapTailRatios) {
            drop[(int) Math.rint((1.0 - r) * (n - 1))] = true; // rint: half to even, as Python's round
        }
        for (int i = 0; i < n; i++) {
            ObjectKey k = keys.get(i);
            if (!dropChunkHashes.isEmpty() && dropChunkHashes.contains(HEX.formatHex(k.chunkHash()))) {
                drop[i] = true;
            } else if (rateThreshold > 0 && inRateBucket(k)) {
                drop[i] = true;
            }
        }
        int count = 0;
        for (boolean d : drop) {
            count += d ? 1 : 0;
        }
        int[] out = new int[count];
        for (int i = 0, j = 0; i < n; i++) {
            if (drop[i]) {
                out[j++] = i;
            }
        }
        return out;
    }

    private boolean inRateBucket(ObjectKey k) {
        String ident = seed + ":" + HEX.formatHex(k.chunkHash()) + ":" + k.modelName() + ":"
                + Integer.toUnsignedString(k.kvRank()) + ":" + k.objectGroupId() + ":" + k.cacheSalt();
        long v = 0;
        for (byte b : Blake2b64.digest(ident.getBytes(StandardCharsets.UTF_8))) { // read big-endian
            v = (v << 8) | (b & 0xFF);
        }
        return Long.remainderUnsigned(v, HASH_BUCKETS) < rateThreshold;
    }

    private String describeFaults() {
        return "rate=" + rate + " seed=" + seed + " gap_indices=" + Arrays.toString(gapIndices) + " gap_tail_ratios="
                + Arrays.toString(gapTailRatios) + " drop_chunk_hashes=" + dropChunkHashes.size();
    }

    /** The inner adapter's status, plus {@code fault_inject}: the faults and how many keys they failed. */
    @Override
    public Map<String, Object> reportStatus() {
        Map<String, Object> s = new LinkedHashMap<>(super.reportStatus());
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("rate", rate);
        f.put("seed", seed);
        f.put("gap_indices", Arrays.stream(gapIndices).boxed().toList());
        f.put("gap_tail_ratios", Arrays.stream(gapTailRatios).boxed().toList());
        f.put("drop_chunk_hashes", dropChunkHashes.stream().sorted().toList());
        f.put("dropped_keys", droppedKeys.sum());
        f.put("faulted_loads", faultedLoads.sum());
        f.put("pending_loads_with_drops", dropsByLoad.size());
        s.put("fault_inject", f);
        return s;
    }

    @Override
    protected void beforeInnerClose() {
        dropsByLoad.clear();
    }

    /** The faults to inject; all optional (none: every call passes through unchanged). */
    public static final class Builder {
        private double rate;
        private long seed;
        private final List<Integer> gapIndices = new ArrayList<>();
        private final List<Double> gapTailRatios = new ArrayList<>();
        private final Set<String> dropChunkHashes = new HashSet<>();

        private Builder() {}

        /** Per-key drop probability in [0, 1], by the seeded hash (0: off). */
        public Builder rate(double rate) {
            if (!(rate >= 0.0 && rate <= 1.0)) {
                throw new IllegalArgumentException("fault_inject: rate " + rate
                        + " must be a number in [0, 1] (a per-key drop probability; 0 turns it off)");
            }
            this.rate = rate;
            return this;
        }

        /** The seed of the rate's hash: the same seed drops the same keys, in every run. */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Positions of a load's key list (from 0) that always fail. */
        public Builder gapIndices(int... indices) {
            for (int i : indices) {
                if (i < 0) {
                    throw new IllegalArgumentException("fault_inject: gap index " + i
                            + " must be >= 0 (a position in a load's key list, 0 = the first key)");
                }
                gapIndices.add(i);
            }
            return this;
        }

        /** Positions as distance from the tail over the load length, each in [0, 1]: 0 = last, 1 = first. */
        public Builder gapTailRatios(double... ratios) {
            for (double r : ratios) {
                if (!(r >= 0.0 && r <= 1.0)) {
                    throw new IllegalArgumentException("fault_inject: gap tail ratio " + r
                            + " must be in [0, 1] (0 = the last key of a load, 0.5 = the middle, 1 = the first)");
                }
                gapTailRatios.add(r);
            }
            return this;
        }

        /** Chunk hashes ({@link ObjectKey#chunkHash()}) whose keys fail in every load. */
        public Builder dropChunkHashes(byte[]... hashes) {
            for (byte[] h : hashes) {
                dropChunkHashes.add(HEX.formatHex(h));
            }
            return this;
        }

        /** The same, as hex strings (as the JSON gives them). */
        public Builder dropChunkHashesHex(String... hashes) {
            for (String h : hashes) {
                byte[] bytes;
                try {
                    bytes = HEX.parseHex(h);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("fault_inject: drop_chunk_hashes entry '" + h
                            + "' is not hex (two hex digits per byte of the chunk hash)", e);
                }
                dropChunkHashes.add(HEX.formatHex(bytes)); // lower case, as keys are compared
            }
            return this;
        }

        /** Wraps {@code inner}, which the wrapper then owns (closing it closes {@code inner}). */
        public FaultInjectL2Adapter wrap(L2Adapter inner) {
            return new FaultInjectL2Adapter(inner, this);
        }
    }

    /**
     * Registered for {@code "type": "fault_inject"}: {@code inner} (required: the wrapped adapter's own
     * JSON, with its type), {@code rate}, {@code seed}, {@code gap_indices}, {@code gap_tail_ratios},
     * {@code drop_chunk_hashes}.
     */
    public static final class Factory implements L2AdapterFactory {
        private static final String KNOWN = "type, inner, rate, seed, gap_indices, gap_tail_ratios, drop_chunk_hashes";

        @Override
        public String type() {
            return "fault_inject";
        }

        @Override
        public L2Adapter create(JsonNode config) throws IOException {
            Builder b = builder();
            JsonNode inner = config.get("inner");
            for (Map.Entry<String, JsonNode> e : ForwardingL2Adapter.wrapperOptions(config)) {
                JsonNode v = e.getValue();
                switch (e.getKey()) {
                    case "rate" -> {
                        if (!v.isNumber()) {
                            throw new IllegalArgumentException("fault_inject: rate = " + v + " must be a number in [0, 1]");
                        }
                        b.rate(v.asDouble());
                    }
                    case "seed" -> {
                        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
                            throw new IllegalArgumentException("fault_inject: seed = " + v
                                    + " must be an integer (64 bits)");
                        }
                        b.seed(v.asLong());
                    }
                    case "gap_indices" -> {
                        for (JsonNode i : array(e)) {
                            if (!i.isIntegralNumber() || !i.canConvertToInt()) {
                                throw new IllegalArgumentException("fault_inject: gap_indices entry " + i
                                        + " must be an integer >= 0");
                            }
                            b.gapIndices(i.asInt());
                        }
                    }
                    case "gap_tail_ratios" -> {
                        for (JsonNode r : array(e)) {
                            if (!r.isNumber()) {
                                throw new IllegalArgumentException("fault_inject: gap_tail_ratios entry " + r
                                        + " must be a number in [0, 1]");
                            }
                            b.gapTailRatios(r.asDouble());
                        }
                    }
                    case "drop_chunk_hashes" -> {
                        for (JsonNode h : array(e)) {
                            if (!h.isTextual()) {
                                throw new IllegalArgumentException("fault_inject: drop_chunk_hashes entry " + h
                                        + " must be a hex string");
                            }
                            b.dropChunkHashesHex(h.textValue());
                        }
                    }
                    default -> throw new IllegalArgumentException("fault_inject: unknown key '" + e.getKey()
                            + "'; known keys: " + KNOWN);
                }
            }
            return b.wrap(ForwardingL2Adapter.createInner("fault_inject", inner));
        }

        private static JsonNode array(Map.Entry<String, JsonNode> e) {
            if (!e.getValue().isArray()) {
                throw new IllegalArgumentException("fault_inject: " + e.getKey() + " = " + e.getValue()
                        + " must be a JSON list");
            }
            return e.getValue();
        }
    }
}
