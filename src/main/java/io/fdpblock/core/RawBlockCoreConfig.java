package io.fdpblock.core;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.PlacementId;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * Configuration of a {@link RawBlockCore}: the fields and defaults of LMCache's raw_block adapter JSON
 * (snake_case), checked at construction. A bad value fails with the field, the value and the rule.
 */
public final class RawBlockCoreConfig {
    public static final int DEFAULT_BLOCK_ALIGN = 4096;
    public static final int DEFAULT_HEADER_BYTES = 4096;
    public static final long DEFAULT_META_TOTAL_BYTES = 256L << 20;
    public static final String META_MAGIC = "LMCIDX01";
    public static final int META_VERSION = 1;
    /** Slot header bytes the format defines (magic, identity, length); a header must hold at least these. */
    public static final int MIN_HEADER_BYTES = 24;
    /** Keys per device submission in a batched put (header + payload = two writes per key). */
    public static final int DEFAULT_MAX_BATCH_KEYS = 64;
    /** How long close waits for puts, loads and deallocations in flight before it gives them up. */
    public static final int DEFAULT_CLOSE_TIMEOUT_MS = 60_000;
    /** Keys LMCache accepts in its raw_block JSON that have no effect here (see the README). */
    public static final Set<String> ACCEPTED_AND_IGNORED = Set.of("enable_zero_copy", "max_data_transfer_size",
            "num_store_workers", "num_lookup_workers", "num_load_workers", "meta_idle_quiet_ms");

    /** The metadata format of a new device (an existing one opens in the format it holds). */
    public enum MetaFormat {
        /** This project's scalable format: compact off-heap index, log of records plus snapshots. */
        FDPBLOCK_V2("fdpblock_v2"),
        /** LMCache raw_block state v1: mirrored JSON checkpoints, byte-compatible with LMCache. */
        LMCACHE_V1("lmcache_v1");

        private final String configName;

        MetaFormat(String configName) {
            this.configName = configName;
        }

        public String configName() {
            return configName;
        }

        public static MetaFormat parse(String s) {
            for (MetaFormat f : values()) {
                if (f.configName.equalsIgnoreCase(s)) {
                    return f;
                }
            }
            throw new IllegalArgumentException("meta_format '" + s + "' is unknown: use fdpblock_v2 or lmcache_v1");
        }
    }

    /**
     * What a load checks before it serves a payload ({@code verify_payload}). Puts write the payload's
     * CRC32C into the slot header under either setting, so the setting can change between opens.
     */
    public enum VerifyPayload {
        /**
         * The default. Every load computes the payload's CRC32C and compares it with the one its slot
         * header carries (known from the put, from fdpblock_v2's metadata, from the header checks of
         * {@code meta_verify_on_load}, or read with the payload): a payload that fails is a miss, counted
         * in {@code crc_mismatches}. A matching CRC also tells another key's bytes apart, so a load whose
         * CRC is known does not read the slot header. A header without a CRC (LMCache wrote the slot) is
         * checked for magic, key identity and length, and its payload served unchecked, as LMCache does.
         * So bytes a power loss left under a recovered entry (another key's, in a slot reused before the
         * delete was durable, or torn) are a miss, never served.
         */
        ALWAYS("always"),
        /**
         * Loads compute the CRC32C only where a power loss may have damaged the bytes: the first load of
         * each slot whose bytes predate this open (a payload torn under an intact header is then a miss);
         * what this open wrote, or verified once, is loaded without it. Every load reads the slot header
         * with the payload (one more {@code header_bytes} read in the same submission) and serves the
         * payload only when the header has the slot magic, the key's identity (BLAKE2b-64 of the encoded
         * key) and the payload length the index holds: another key's bytes, or a slot never written, are
         * still a miss. What is no longer caught is damage to a payload after this open wrote or verified
         * it (media corruption the device did not report): those bytes are served. Open verifies as under
         * {@code always}: with {@code meta_verify_on_load} (lmcache_v1) each recovered entry's slot header
         * is checked (magic, identity, length; a mismatch drops the entry), and fdpblock_v2 checks its log
         * and snapshot records' own checksums; payload CRCs are checked at open under neither setting (that
         * would read the whole device).
         */
        RECOVERY("recovery");

        private final String configName;

        VerifyPayload(String configName) {
            this.configName = configName;
        }

        public String configName() {
            return configName;
        }

        public static VerifyPayload parse(String s) {
            for (VerifyPayload v : values()) {
                if (v.configName.equalsIgnoreCase(s)) {
                    return v;
                }
            }
            throw new IllegalArgumentException("raw_block config: verify_payload = " + s + " is unknown: use always"
                    + " (the CRC32C of every loaded payload) or recovery (no CRC32C on loads; the slot header's key"
                    + " identity is still checked)");
        }
    }

    /** How long an acknowledged put may wait for its log record to be durable (fdpblock_v2), by default. */
    public static final int DEFAULT_META_SYNC_INTERVAL_MS = 1000;

    public enum PlacementPolicy {
        NONE("none"), CACHE_SALT_PREFIX("cache_salt_prefix");

        private final String configName;

        PlacementPolicy(String configName) {
            this.configName = configName;
        }

        public String configName() {
            return configName;
        }

        static PlacementPolicy parse(String s) {
            for (PlacementPolicy p : values()) {
                if (p.configName.equalsIgnoreCase(s)) {
                    return p;
                }
            }
            throw new IllegalArgumentException("fdp_data_placement_policy '" + s + "' is unknown: use none or"
                    + " cache_salt_prefix");
        }
    }

    private final String devicePath;
    private final List<String> devicePaths;
    private final long capacityBytes;
    private final long slotBytes;
    private final int blockAlign;
    private final int headerBytes;
    private final long metaTotalBytes;
    private final boolean metaTotalBytesSet;
    private final MetaFormat metaFormat;
    private final int metaSyncIntervalMs;
    private final int metaCheckpointIntervalSec;
    private final int metaIdleQuietMs;
    private final boolean metaEnablePeriodic;
    private final boolean loadCheckpointOnInit;
    private final boolean metaVerifyOnLoad;
    private final VerifyPayload verifyPayload;
    private final boolean useOdirect;
    private final IoEngine ioEngine;
    private final int iouringQueueDepth;
    private final int maxBatchKeys;
    private final boolean fdpEnabled;
    private final List<Integer> fdpPlacementIds;
    private final PlacementPolicy fdpDataPlacementPolicy;
    private final PlacementId metaCheckpointPlacementId;
    private final boolean fdpSlotAffinityEnabled;
    private final boolean format;
    private final boolean openDamaged;
    private final int closeTimeoutMs;

    private RawBlockCoreConfig(Builder b) {
        if (b.devicePath != null && b.devicePaths != null) {
            throw new IllegalArgumentException("raw_block config: device_path (" + b.devicePath + ") and device_paths ("
                    + b.devicePaths + ") are both set: give device_path for one device, or device_paths for several");
        }
        if (b.devicePaths != null) {
            devicePaths = checkDevicePaths(b.devicePaths, b.ioEngine);
            devicePath = devicePaths.get(0);
        } else {
            if (b.devicePath == null) {
                throw new IllegalArgumentException("raw_block config: device_path is required (or device_paths, a list,"
                        + " for a store striped over several devices)");
            }
            devicePath = b.devicePath;
            if (devicePath.isBlank()) {
                throw invalid("device_path", "\"\"", "must name a file, block device or /dev/ngXnY");
            }
            devicePaths = List.of(devicePath);
        }
        capacityBytes = b.capacityBytes;
        slotBytes = b.slotBytes;
        blockAlign = b.blockAlign;
        headerBytes = b.headerBytes;
        metaTotalBytesSet = b.metaTotalBytes > 0;
        metaTotalBytes = metaTotalBytesSet ? b.metaTotalBytes : DEFAULT_META_TOTAL_BYTES;
        metaFormat = b.metaFormat;
        metaSyncIntervalMs = b.metaSyncIntervalMs;
        metaCheckpointIntervalSec = b.metaCheckpointIntervalSec;
        metaIdleQuietMs = b.metaIdleQuietMs;
        metaEnablePeriodic = b.metaEnablePeriodic;
        loadCheckpointOnInit = b.loadCheckpointOnInit;
        metaVerifyOnLoad = b.metaVerifyOnLoad;
        verifyPayload = b.verifyPayload;
        useOdirect = b.useOdirect;
        ioEngine = b.ioEngine;
        iouringQueueDepth = b.iouringQueueDepth;
        maxBatchKeys = b.maxBatchKeys;
        fdpEnabled = b.fdpEnabled;
        fdpPlacementIds = List.copyOf(b.fdpPlacementIds);
        fdpDataPlacementPolicy = b.fdpDataPlacementPolicy;
        metaCheckpointPlacementId = b.metaCheckpointPlacementId;
        fdpSlotAffinityEnabled = b.fdpSlotAffinityEnabled;
        openDamaged = b.openDamaged;
        format = b.format;
        closeTimeoutMs = b.closeTimeoutMs;

        if (blockAlign < 512 || Integer.bitCount(blockAlign) != 1) {
            throw invalid("block_align", blockAlign, "must be a power of two >= 512");
        }
        if (headerBytes < MIN_HEADER_BYTES || headerBytes % blockAlign != 0) {
            throw invalid("header_bytes", headerBytes, "must be >= " + MIN_HEADER_BYTES
                    + " and a multiple of block_align (" + blockAlign + ")");
        }
        if (slotBytes <= headerBytes || slotBytes % blockAlign != 0) {
            throw invalid("slot_bytes", slotBytes, "must be a multiple of block_align (" + blockAlign
                    + ") and larger than header_bytes (" + headerBytes + ")");
        }
        if (slotBytes - headerBytes > Integer.MAX_VALUE) {
            throw invalid("slot_bytes", slotBytes, "leaves more than 2 GiB of payload per slot");
        }
        if (metaTotalBytes / 2 / blockAlign * blockAlign <= blockAlign) {
            throw invalid("meta_total_bytes", metaTotalBytes, "must hold two containers of more than one block each"
                    + " (at least " + 4L * blockAlign + " with block_align " + blockAlign + ")");
        }
        if (metaTotalBytes % blockAlign != 0) {
            throw invalid("meta_total_bytes", metaTotalBytes, "must be a multiple of block_align (" + blockAlign + ")");
        }
        if (capacityBytes < 0) {
            throw invalid("capacity_bytes", capacityBytes, "must be >= 0 (0 = the device's size)");
        }
        if (b.metaTotalBytes < 0) {
            throw invalid("meta_total_bytes", b.metaTotalBytes, "must be > 0 (or left out: fdpblock_v2 sizes it from"
                    + " the capacity, lmcache_v1 uses 256 MiB)");
        }
        // fdpblock_v2 without meta_total_bytes sizes its metadata from the device at open (StoreGeometry)
        boolean metaKnown = metaTotalBytesSet || metaFormat == MetaFormat.LMCACHE_V1;
        if (metaKnown && capacityBytes > 0 && capacityBytes - slotBytes < metaTotalBytes) { // may overflow a long
            throw invalid("capacity_bytes", capacityBytes, "must hold the meta area (" + metaTotalBytes
                    + ") and at least one slot (" + slotBytes + ")");
        }
        if (metaCheckpointIntervalSec < 1) {
            throw invalid("meta_checkpoint_interval_sec", metaCheckpointIntervalSec, "must be >= 1");
        }
        if (metaIdleQuietMs < 0) {
            throw invalid("meta_idle_quiet_ms", metaIdleQuietMs, "must be >= 0");
        }
        if (ioEngine == null) {
            throw invalid("io_engine", "null", "must be one of posix, io_uring, uring_cmd, memory");
        }
        if (iouringQueueDepth < 1 || iouringQueueDepth > 4096) {
            throw invalid("iouring_queue_depth", iouringQueueDepth, "must be in 1..4096");
        }
        if (maxBatchKeys < 1 || maxBatchKeys > 1024) {
            throw invalid("max_batch_keys", maxBatchKeys, "must be in 1..1024");
        }
        for (int id : fdpPlacementIds) {
            PlacementId.check("raw_block config: fdp_placement_ids entry", id);
        }
        if (!fdpEnabled && (!fdpPlacementIds.isEmpty() || fdpDataPlacementPolicy != PlacementPolicy.NONE
                || !metaCheckpointPlacementId.isNone())) {
            throw invalid("fdp_enabled", false, "must be true when fdp_placement_ids, fdp_data_placement_policy or"
                    + " meta_checkpoint_placement_id is set");
        }
        if (metaSyncIntervalMs < 0) {
            throw invalid("meta_sync_interval_ms", metaSyncIntervalMs, "must be >= 0 (0 = a put is acknowledged once"
                    + " its log record is durable)");
        }
        if (metaFormat == null) {
            throw invalid("meta_format", "null", "must be fdpblock_v2 or lmcache_v1");
        }
        if (verifyPayload == null) {
            throw invalid("verify_payload", "null", "must be always or recovery");
        }
        if (closeTimeoutMs < 1) {
            throw invalid("close_timeout_ms", closeTimeoutMs, "must be >= 1");
        }
    }

    private static List<String> checkDevicePaths(List<String> paths, IoEngine engine) {
        if (paths.isEmpty()) {
            throw invalid("device_paths", "[]", "must name at least one file or device (or use device_path for one)");
        }
        Set<String> seen = new java.util.HashSet<>();
        for (String p : paths) {
            if (p == null || p.isBlank()) {
                throw invalid("device_paths", paths, "has an empty entry; each must name a file, block device or"
                        + " /dev/ngXnY");
            }
            if (!seen.add(p)) {
                throw invalid("device_paths", paths, "names " + p + " twice; each device may appear once");
            }
        }
        if (paths.size() > 1 && engine == IoEngine.MEMORY) {
            throw invalid("device_paths", paths, "needs a file engine (posix, io_uring, uring_cmd): io_engine memory"
                    + " has no devices to stripe over");
        }
        return List.copyOf(paths);
    }

    private static IllegalArgumentException invalid(String field, Object value, String rule) {
        return new IllegalArgumentException("raw_block config: " + field + " = " + value + " " + rule);
    }

    /**
     * The metadata area fdpblock_v2 needs for a device of {@code slots} slots (what it uses when
     * {@code meta_total_bytes} is left out, to within a MiB): set {@code meta_total_bytes} to it and
     * {@code capacity_bytes} to it plus {@code slots * slot_bytes} for a device of exactly that many slots.
     */
    public static long v2MetaBytesFor(int blockAlign, long slots) {
        return V2Layout.requiredMetaBytes(blockAlign, slots, 1 << 20);
    }

    /**
     * The {@code meta_total_bytes} an lmcache_v1 store of {@code slots} slots needs for the checkpoint of
     * a full device to fit a container, estimated at {@value Checkpointer#ESTIMATED_BYTES_PER_ENTRY}
     * bytes of JSON per key (keys of about 110 characters; longer keys need more). The store warns at
     * open when its metadata area is smaller.
     */
    public static long v1MetaBytesFor(int blockAlign, long slots) {
        // two containers, each a header block and room for the whole JSON
        return 2 * (OnDiskFormat.roundUp(slots * Checkpointer.ESTIMATED_BYTES_PER_ENTRY, blockAlign) + blockAlign);
    }

    public static Builder builder(String devicePath, long slotBytes) {
        return new Builder().devicePath(devicePath).slotBytes(slotBytes);
    }

    /** A store striped over {@code devicePaths} (the first holds the metadata area). */
    public static Builder builder(List<String> devicePaths, long slotBytes) {
        return new Builder().devicePaths(devicePaths).slotBytes(slotBytes);
    }

    // ---- JSON (LMCache --l2-adapter style) ----

    private static final ObjectMapper JSON = io.fdpblock.util.Json.strictMapper();
    /** Keys of the adapter JSON that belong to the adapter, not the core. */
    private static final Set<String> ADAPTER_KEYS = Set.of("type", "module_path", "class_name", "adapter_params");
    private static final Map<String, BiConsumer<Builder, JsonNode>> FIELDS = new LinkedHashMap<>();

    static {
        FIELDS.put("device_path", (b, n) -> b.devicePath(text("device_path", n)));
        FIELDS.put("device_paths", (b, n) -> {
            if (!n.isArray()) {
                throw invalid("device_paths", n, "must be a list of paths, e.g. [\"/dev/nvme0n1\", \"/dev/nvme1n1\"]");
            }
            List<String> paths = new ArrayList<>();
            n.forEach(e -> paths.add(text("device_paths entry", e)));
            b.devicePaths(paths);
        });
        FIELDS.put("capacity_bytes", (b, n) -> b.capacityBytes(integer("capacity_bytes", n)));
        FIELDS.put("slot_bytes", (b, n) -> b.slotBytes(integer("slot_bytes", n)));
        FIELDS.put("block_align", (b, n) -> b.blockAlign(toInt("block_align", n)));
        FIELDS.put("header_bytes", (b, n) -> b.headerBytes(toInt("header_bytes", n)));
        FIELDS.put("meta_total_bytes", (b, n) -> b.metaTotalBytes(integer("meta_total_bytes", n)));
        FIELDS.put("meta_format", (b, n) -> b.metaFormat(MetaFormat.parse(text("meta_format", n))));
        FIELDS.put("meta_sync_interval_ms", (b, n) -> b.metaSyncIntervalMs(toInt("meta_sync_interval_ms", n)));
        FIELDS.put("meta_magic", (b, n) -> {
            if (!META_MAGIC.equals(text("meta_magic", n))) {
                throw invalid("meta_magic", n, "must be " + META_MAGIC + " (the only format this store reads)");
            }
        });
        FIELDS.put("meta_version", (b, n) -> {
            if (toInt("meta_version", n) != META_VERSION) {
                throw invalid("meta_version", n, "must be " + META_VERSION);
            }
        });
        FIELDS.put("meta_checkpoint_interval_sec", (b, n) -> b.metaCheckpointIntervalSec(toInt("meta_checkpoint_interval_sec", n)));
        FIELDS.put("meta_idle_quiet_ms", (b, n) -> b.metaIdleQuietMs(toInt("meta_idle_quiet_ms", n)));
        FIELDS.put("meta_enable_periodic", (b, n) -> b.metaEnablePeriodic(bool("meta_enable_periodic", n)));
        FIELDS.put("load_checkpoint_on_init", (b, n) -> b.loadCheckpointOnInit(bool("load_checkpoint_on_init", n)));
        FIELDS.put("open_damaged", (b, n) -> b.openDamaged(bool("open_damaged", n)));
        FIELDS.put("meta_verify_on_load", (b, n) -> b.metaVerifyOnLoad(bool("meta_verify_on_load", n)));
        FIELDS.put("verify_payload", (b, n) -> b.verifyPayload(VerifyPayload.parse(text("verify_payload", n))));
        FIELDS.put("use_odirect", (b, n) -> b.useOdirect(bool("use_odirect", n)));
        FIELDS.put("io_engine", (b, n) -> b.ioEngine(IoEngine.parse(text("io_engine", n))));
        FIELDS.put("iouring_queue_depth", (b, n) -> b.iouringQueueDepth(toInt("iouring_queue_depth", n)));
        FIELDS.put("max_batch_keys", (b, n) -> b.maxBatchKeys(toInt("max_batch_keys", n)));
        FIELDS.put("fdp_enabled", (b, n) -> b.fdpEnabled(bool("fdp_enabled", n)));
        FIELDS.put("fdp_placement_ids", (b, n) -> {
            if (n.isNull()) {
                return;
            }
            if (!n.isArray()) {
                throw invalid("fdp_placement_ids", n, "must be a list of integers");
            }
            List<Integer> ids = new ArrayList<>();
            n.forEach(e -> ids.add(toInt("fdp_placement_ids", e)));
            b.fdpPlacementIds(ids);
        });
        FIELDS.put("fdp_data_placement_policy", (b, n) -> {
            if (!n.isNull()) {
                b.fdpDataPlacementPolicy(PlacementPolicy.parse(text("fdp_data_placement_policy", n)));
            }
        });
        FIELDS.put("meta_checkpoint_placement_id", (b, n) -> {
            if (!n.isNull()) {
                b.metaCheckpointPlacementId(toInt("meta_checkpoint_placement_id", n));
            }
        });
        FIELDS.put("format", (b, n) -> b.format(bool("format", n)));
        FIELDS.put("close_timeout_ms", (b, n) -> b.closeTimeoutMs(toInt("close_timeout_ms", n)));
        FIELDS.put("fdp_slot_affinity_enabled", (b, n) -> b.fdpSlotAffinityEnabled(bool("fdp_slot_affinity_enabled", n)));
        FIELDS.put("fdp_slot_reuse_policy", (b, n) -> { // LMCache's name for the same switch
            String v = n.isNull() ? "none" : text("fdp_slot_reuse_policy", n);
            if (!v.equals("none") && !v.equals("pid_affinity")) {
                throw invalid("fdp_slot_reuse_policy", n, "must be none or pid_affinity");
            }
            b.fdpSlotAffinityEnabled(v.equals("pid_affinity"));
        });
        // LMCache keys accepted so that its adapter JSON parses as is.
        FIELDS.put("use_uring_cmd", (b, n) -> {
            if (bool("use_uring_cmd", n)) {
                b.ioEngine(IoEngine.URING_CMD);
            }
        });
        FIELDS.put("use_iouring", (b, n) -> {
            if (bool("use_iouring", n)) {
                b.ioEngine(IoEngine.IO_URING);
            }
        });
        FIELDS.put("use_uring", (b, n) -> {
            if (bool("use_uring", n)) {
                b.ioEngine(IoEngine.IO_URING);
            }
        });
        // No effect here (ACCEPTED_AND_IGNORED): buffers are always zero-copy where aligned, transfers are
        // split by the device's own limit, and there are no worker pools to size (no thread hop that buys
        // nothing). meta_idle_quiet_ms is parsed above: checkpoints never wait for idle I/O.
        FIELDS.put("enable_zero_copy", (b, n) -> bool("enable_zero_copy", n));
        FIELDS.put("max_data_transfer_size", (b, n) -> {
            if (integer("max_data_transfer_size", n) < 0) {
                throw invalid("max_data_transfer_size", n, "must be >= 0");
            }
        });
        for (String workers : List.of("num_store_workers", "num_lookup_workers", "num_load_workers")) {
            FIELDS.put(workers, (b, n) -> {
                if (integer(workers, n) < 1) {
                    throw invalid(workers, n, "must be >= 1");
                }
            });
        }
    }

    /** The configuration keys this store understands. */
    public static Set<String> knownKeys() {
        return FIELDS.keySet();
    }

    /**
     * Parses the raw_block part of an adapter JSON (e.g. LMCache's {@code --l2-adapter} value).
     * {@code type} and other adapter-level keys are ignored; any other unknown key is an error (a typo
     * would otherwise silently fall back to a default).
     */
    public static RawBlockCoreConfig fromJson(String json) {
        JsonNode root;
        try {
            root = io.fdpblock.util.Json.readOne(JSON, json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("raw_block config is not valid JSON (" + e.getOriginalMessage()
                    + ", line " + e.getLocation().getLineNr() + " column " + e.getLocation().getColumnNr() + ")", e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("raw_block config must be a JSON object, got: " + json);
        }
        return fromJson(root);
    }

    public static RawBlockCoreConfig fromJson(JsonNode root) {
        Builder b = new Builder();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            BiConsumer<Builder, JsonNode> setter = FIELDS.get(e.getKey());
            if (setter != null) {
                setter.accept(b, e.getValue());
            } else if (!ADAPTER_KEYS.contains(e.getKey())) {
                throw new IllegalArgumentException("raw_block config: unknown key '" + e.getKey() + "'; known keys: "
                        + String.join(", ", FIELDS.keySet()));
            }
        }
        return b.build();
    }

    private static String text(String field, JsonNode n) {
        if (!n.isTextual()) {
            throw invalid(field, n, "must be a string");
        }
        return n.asText();
    }

    private static long integer(String field, JsonNode n) {
        if (!n.isIntegralNumber() || !n.canConvertToLong()) {
            throw invalid(field, n, "must be an integer");
        }
        return n.asLong();
    }

    private static int toInt(String field, JsonNode n) {
        long v = integer(field, n);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw invalid(field, n, "does not fit a 32-bit integer");
        }
        return (int) v;
    }

    private static boolean bool(String field, JsonNode n) {
        if (!n.isBoolean()) {
            throw invalid(field, n, "must be true or false");
        }
        return n.asBoolean();
    }

    // ---- accessors ----

    /** The device, or with {@code device_paths} the first one (it holds the metadata area). */
    public String devicePath() { return devicePath; }
    /** Every device, in stripe order (one entry for {@code device_path}). */
    public List<String> devicePaths() { return devicePaths; }
    /** 0 = the device's size. */
    public long capacityBytes() { return capacityBytes; }
    public long slotBytes() { return slotBytes; }
    public int blockAlign() { return blockAlign; }
    public int headerBytes() { return headerBytes; }
    /**
     * The metadata area: as configured, else (lmcache_v1) 256 MiB; fdpblock_v2 sizes it from the
     * capacity when it is not configured ({@link #metaTotalBytesSet()}).
     */
    public long metaTotalBytes() { return metaTotalBytes; }
    /** {@code meta_total_bytes} was given. */
    public boolean metaTotalBytesSet() { return metaTotalBytesSet; }
    /** The format of a new device. */
    public MetaFormat metaFormat() { return metaFormat; }
    /** fdpblock_v2: the longest a put's log record waits before it is made durable; 0 = before the put is acknowledged. */
    public int metaSyncIntervalMs() { return metaSyncIntervalMs; }
    public int metaCheckpointIntervalSec() { return metaCheckpointIntervalSec; }
    public int metaIdleQuietMs() { return metaIdleQuietMs; }
    public boolean metaEnablePeriodic() { return metaEnablePeriodic; }
    public boolean loadCheckpointOnInit() { return loadCheckpointOnInit; }
    public boolean metaVerifyOnLoad() { return metaVerifyOnLoad; }
    /** What a load checks before it serves a payload (see {@link VerifyPayload}). */
    public VerifyPayload verifyPayload() { return verifyPayload; }
    public boolean useOdirect() { return useOdirect; }
    public IoEngine ioEngine() { return ioEngine; }
    public int iouringQueueDepth() { return iouringQueueDepth; }
    public int maxBatchKeys() { return maxBatchKeys; }
    public boolean fdpEnabled() { return fdpEnabled; }
    public List<Integer> fdpPlacementIds() { return fdpPlacementIds; }
    public PlacementPolicy fdpDataPlacementPolicy() { return fdpDataPlacementPolicy; }
    /** The placement id checkpoints are written with ({@link PlacementId#NONE}: no directive). */
    public PlacementId metaCheckpointPlacementId() { return metaCheckpointPlacementId; }
    public boolean fdpSlotAffinityEnabled() { return fdpSlotAffinityEnabled; }
    /** Format the device at open: whatever it holds is discarded. Only ever done when asked. */
    public boolean format() { return format; }
    /**
     * Open a store whose metadata is damaged with what is readable (its lost keys reported, the store
     * unhealthy) instead of refusing it. Never discards what is readable; off by default.
     */
    public boolean openDamaged() { return openDamaged; }
    public int closeTimeoutMs() { return closeTimeoutMs; }
    /** Bytes of payload a slot holds. */
    public long maxPayloadBytes() { return slotBytes - headerBytes; }
    /** Each of the two checkpoint containers. */
    public long containerBytes() { return metaTotalBytes / 2 / blockAlign * blockAlign; }

    public Builder toBuilder() {
        Builder b = devicePaths.size() > 1 ? new Builder().devicePaths(devicePaths) : new Builder().devicePath(devicePath);
        return b.capacityBytes(capacityBytes).slotBytes(slotBytes)
                .blockAlign(blockAlign).headerBytes(headerBytes).metaTotalBytes(metaTotalBytesSet ? metaTotalBytes : 0)
                .metaFormat(metaFormat).metaSyncIntervalMs(metaSyncIntervalMs)
                .metaCheckpointIntervalSec(metaCheckpointIntervalSec).metaIdleQuietMs(metaIdleQuietMs)
                .metaEnablePeriodic(metaEnablePeriodic).loadCheckpointOnInit(loadCheckpointOnInit)
                .metaVerifyOnLoad(metaVerifyOnLoad).verifyPayload(verifyPayload).useOdirect(useOdirect).ioEngine(ioEngine)
                .iouringQueueDepth(iouringQueueDepth).maxBatchKeys(maxBatchKeys).fdpEnabled(fdpEnabled)
                .fdpPlacementIds(fdpPlacementIds).fdpDataPlacementPolicy(fdpDataPlacementPolicy)
                .metaCheckpointPlacementId(metaCheckpointPlacementId).fdpSlotAffinityEnabled(fdpSlotAffinityEnabled)
                .format(format).openDamaged(openDamaged).closeTimeoutMs(closeTimeoutMs);
    }

    @Override
    public String toString() {
        return "RawBlockCoreConfig{" + (devicePaths.size() > 1 ? "device_paths=" + devicePaths : "device_path="
                + devicePath) + ", capacity_bytes=" + capacityBytes + ", slot_bytes="
                + slotBytes + ", block_align=" + blockAlign + ", header_bytes=" + headerBytes + ", meta_total_bytes="
                + metaTotalBytes + ", io_engine=" + ioEngine + ", fdp_enabled=" + fdpEnabled
                + (format ? ", format=true" : "") + "}";
    }

    /** Builds a config; {@link #build()} checks every rule. */
    public static final class Builder {
        private String devicePath;
        private List<String> devicePaths;
        private long capacityBytes;
        private long slotBytes = -1;
        private int blockAlign = DEFAULT_BLOCK_ALIGN;
        private int headerBytes = DEFAULT_HEADER_BYTES;
        private long metaTotalBytes;
        private MetaFormat metaFormat = MetaFormat.FDPBLOCK_V2;
        private int metaSyncIntervalMs = DEFAULT_META_SYNC_INTERVAL_MS;
        private int metaCheckpointIntervalSec = 60;
        private int metaIdleQuietMs = 100;
        private boolean metaEnablePeriodic = true;
        private boolean loadCheckpointOnInit = true;
        private boolean metaVerifyOnLoad = true;
        private VerifyPayload verifyPayload = VerifyPayload.ALWAYS;
        private boolean useOdirect = true;
        private IoEngine ioEngine = IoEngine.POSIX;
        private int iouringQueueDepth = 256;
        private int maxBatchKeys = DEFAULT_MAX_BATCH_KEYS;
        private boolean fdpEnabled;
        private List<Integer> fdpPlacementIds = List.of();
        private PlacementPolicy fdpDataPlacementPolicy = PlacementPolicy.NONE;
        private PlacementId metaCheckpointPlacementId = PlacementId.NONE;
        private boolean fdpSlotAffinityEnabled;
        private boolean format;
        private boolean openDamaged;
        private int closeTimeoutMs = DEFAULT_CLOSE_TIMEOUT_MS;

        public Builder devicePath(String v) { devicePath = v; return this; }
        /** Several devices, slots striped across them (the first holds the metadata); not with devicePath. */
        public Builder devicePaths(List<String> v) { devicePaths = v == null ? null : new ArrayList<>(v); return this; }
        public Builder capacityBytes(long v) { capacityBytes = v; return this; }
        public Builder slotBytes(long v) { slotBytes = v; return this; }
        public Builder blockAlign(int v) { blockAlign = v; return this; }
        public Builder headerBytes(int v) { headerBytes = v; return this; }
        /** 0 = the default (lmcache_v1: 256 MiB; fdpblock_v2: sized from the capacity). */
        public Builder metaTotalBytes(long v) { metaTotalBytes = v; return this; }
        public Builder metaFormat(MetaFormat v) { metaFormat = v; return this; }
        public Builder metaSyncIntervalMs(int v) { metaSyncIntervalMs = v; return this; }
        public Builder metaCheckpointIntervalSec(int v) { metaCheckpointIntervalSec = v; return this; }
        public Builder metaIdleQuietMs(int v) { metaIdleQuietMs = v; return this; }
        public Builder metaEnablePeriodic(boolean v) { metaEnablePeriodic = v; return this; }
        public Builder loadCheckpointOnInit(boolean v) { loadCheckpointOnInit = v; return this; }
        public Builder metaVerifyOnLoad(boolean v) { metaVerifyOnLoad = v; return this; }
        public Builder verifyPayload(VerifyPayload v) { verifyPayload = v; return this; }
        public Builder useOdirect(boolean v) { useOdirect = v; return this; }
        public Builder ioEngine(IoEngine v) { ioEngine = v; return this; }
        public Builder iouringQueueDepth(int v) { iouringQueueDepth = v; return this; }
        public Builder maxBatchKeys(int v) { maxBatchKeys = v; return this; }
        public Builder fdpEnabled(boolean v) { fdpEnabled = v; return this; }
        public Builder fdpPlacementIds(List<Integer> v) { fdpPlacementIds = v; return this; }
        public Builder fdpDataPlacementPolicy(PlacementPolicy v) { fdpDataPlacementPolicy = v; return this; }
        /** @throws IllegalArgumentException for an id outside 0..65535 */
        public Builder metaCheckpointPlacementId(int v) {
            metaCheckpointPlacementId = PlacementId.of(PlacementId.check("raw_block config: meta_checkpoint_placement_id", v));
            return this;
        }
        public Builder metaCheckpointPlacementId(PlacementId v) { metaCheckpointPlacementId = v; return this; }
        public Builder fdpSlotAffinityEnabled(boolean v) { fdpSlotAffinityEnabled = v; return this; }
        public Builder format(boolean v) { format = v; return this; }
        public Builder openDamaged(boolean v) { openDamaged = v; return this; }
        public Builder closeTimeoutMs(int v) { closeTimeoutMs = v; return this; }

        public RawBlockCoreConfig build() {
            if (slotBytes == -1) {
                throw new IllegalArgumentException("raw_block config: slot_bytes is required");
            }
            return new RawBlockCoreConfig(this);
        }
    }
}
