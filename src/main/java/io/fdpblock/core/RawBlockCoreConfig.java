package io.fdpblock.core;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.util.Json;

import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Configuration of a {@link RawBlockCore}: the fields and defaults of LMCache's raw_block adapter JSON
 * (snake_case), checked at construction. A bad value fails with the field, the value and the rule.
 *
 * <p>Every key is declared once, in the table below (its JSON name, type, default, limits and meaning);
 * the JSON reader, the builder's defaults, the checks and docs/configuration.md all come from it. Each
 * accessor and builder method is the knob of the same name in camelCase.
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
    /** How long an acknowledged put may wait for its log record to be durable (fdpblock_v2), by default. */
    public static final int DEFAULT_META_SYNC_INTERVAL_MS = 1000;

    /** The metadata format of a new device (an existing one opens in the format it holds). */
    public enum MetaFormat {
        /** This project's scalable format: compact off-heap index, log of records plus snapshots. */
        FDPBLOCK_V2,
        /** LMCache raw_block state v1: mirrored JSON checkpoints, byte-compatible with LMCache. */
        LMCACHE_V1;

        /** The name in the configuration: the constant's, in lower case. */
        public String configName() {
            return name().toLowerCase(Locale.ROOT);
        }

        public static MetaFormat parse(String s) {
            return ConfigType.find(values(), MetaFormat::configName, s).orElseThrow(() -> new IllegalArgumentException(
                    "meta_format '" + s + "' is unknown: use fdpblock_v2 or lmcache_v1"));
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
        ALWAYS,
        /**
         * Loads compute the CRC32C only where a power loss may have damaged the bytes: the first load of
         * each slot whose bytes predate this open (a payload torn under an intact header is then a miss);
         * what this open wrote, or verified once, is loaded as LMCache loads it: one read of the payload,
         * unchecked. As under {@code always}, a load whose CRC is not known reads the slot header with the
         * payload and serves it only when the header has the slot magic, the key's identity (BLAKE2b-64 of
         * the encoded key) and the payload length the index holds, so another key's bytes, or a slot never
         * written, left under a recovered entry are still a miss. What is no longer caught is damage after
         * this open wrote or verified a slot (media corruption or a misdirected write the device did not
         * report): those bytes are served. Open verifies as under
         * {@code always}: with {@code meta_verify_on_load} (lmcache_v1) each recovered entry's slot header
         * is checked (magic, identity, length; a mismatch drops the entry), and fdpblock_v2 checks its log
         * and snapshot records' own checksums; payload CRCs are checked at open under neither setting (that
         * would read the whole device).
         */
        RECOVERY;

        /** The name in the configuration: the constant's, in lower case. */
        public String configName() {
            return name().toLowerCase(Locale.ROOT);
        }

        public static VerifyPayload parse(String s) {
            return ConfigType.find(values(), VerifyPayload::configName, s).orElseThrow(() -> new IllegalArgumentException(
                    "raw_block config: verify_payload = " + s + " is unknown: use always (the CRC32C of every loaded"
                    + " payload) or recovery (the CRC32C only on the first load of a slot written before this open)"));
        }
    }

    /** How puts choose a placement id for their data ({@code fdp_data_placement_policy}, docs/fdp.md). */
    public enum PlacementPolicy {
        /** No policy of the store's own: data is written without a directive (docs/fdp.md). */
        NONE,
        /** A key's placement id is chosen by its cache salt up to the first {@code :} (docs/fdp.md). */
        CACHE_SALT_PREFIX;

        /** The name in the configuration: the constant's, in lower case. */
        public String configName() {
            return name().toLowerCase(Locale.ROOT);
        }

        static PlacementPolicy parse(String s) {
            return ConfigType.find(values(), PlacementPolicy::configName, s).orElseThrow(() ->
                    new IllegalArgumentException("fdp_data_placement_policy '" + s + "' is unknown: use none or"
                            + " cache_salt_prefix"));
        }
    }

    // ---- the knobs: each key once, in the order they are checked (a rule sees the knobs above it checked) ----

    private static final ConfigKnob.Table TABLE = new ConfigKnob.Table();

    private static final ConfigKnob<String> DEVICE_PATH = TABLE.knob("device_path", ConfigType.STRING, null,
                    "The file, block device or NVMe generic device (`/dev/ngXnY`) that holds the store.")
            .defaultDoc("required, or `device_paths`")
            .limit(v -> !v.isBlank(), "must name a file, block device or /dev/ngXnY");
    private static final ConfigKnob<List<String>> DEVICE_PATHS = TABLE.knob("device_paths", ConfigType.PATHS, null,
                    "Several devices instead of `device_path`: slots are striped across them in this order, the"
                            + " first holds the metadata area.")
            .limit(v -> !v.isEmpty(), "must name at least one file or device (or use device_path for one)")
            .limit(v -> v.stream().noneMatch(p -> p == null || p.isBlank()), "must have no empty entry: each names a"
                    + " file, block device or /dev/ngXnY")
            .across((v, c) -> c.repeatedDevice() == null, "must name each device once (it names %s twice)",
                    RawBlockCoreConfig::repeatedDevice)
            .across((v, c) -> v.size() == 1 || c.ioEngine() != IoEngine.MEMORY, "needs a file engine (posix,"
                    + " io_uring, uring_cmd): io_engine memory has no devices to stripe over");
    private static final ConfigKnob<Integer> BLOCK_ALIGN = TABLE.knob("block_align", ConfigType.INT,
                    DEFAULT_BLOCK_ALIGN, "The alignment of every read and write: the device's logical block size or"
                            + " a multiple of it.")
            .limit(v -> v >= 512 && Integer.bitCount(v) == 1, "must be a power of two >= 512");
    private static final ConfigKnob<Integer> HEADER_BYTES = TABLE.knob("header_bytes", ConfigType.INT,
                    DEFAULT_HEADER_BYTES, "The slot header at the start of each slot (magic, key identity, payload"
                            + " length and CRC32C).")
            .across((v, c) -> v >= MIN_HEADER_BYTES && v % c.blockAlign() == 0, "must be >= " + MIN_HEADER_BYTES
                    + " and a multiple of block_align (%s)", RawBlockCoreConfig::blockAlign);
    private static final ConfigKnob<Long> SLOT_BYTES = TABLE.knob("slot_bytes", ConfigType.LONG, null,
                    "One slot: its header and room for the largest payload (a KV chunk).")
            .required()
            .across((v, c) -> v > c.headerBytes() && v % c.blockAlign() == 0, "must be a multiple of block_align (%s)"
                    + " and larger than header_bytes (%s)", RawBlockCoreConfig::blockAlign, RawBlockCoreConfig::headerBytes)
            .across((v, c) -> v - c.headerBytes() <= Integer.MAX_VALUE, "must leave at most 2 GiB of payload per slot"
                    + " (header_bytes %s)", RawBlockCoreConfig::headerBytes);
    private static final ConfigKnob<Long> META_TOTAL_BYTES = TABLE.knob("meta_total_bytes", ConfigType.LONG, 0L,
                    "The metadata area at the start of the device (lmcache_v1: two checkpoint containers;"
                            + " fdpblock_v2: the log and snapshots).")
            .defaultDoc("`0`: fdpblock_v2 sizes it from the capacity at open, lmcache_v1 uses 256 MiB")
            .limit(v -> v >= 0, "must be >= 0 (0, or left out: fdpblock_v2 sizes it from the capacity, lmcache_v1"
                    + " uses 256 MiB)")
            .across((v, c) -> c.containerBytes() > c.blockAlign(), "must hold two containers of more than one block"
                    + " each (at least %s with block_align %s)", c -> 4L * c.blockAlign(), RawBlockCoreConfig::blockAlign)
            .across((v, c) -> c.metaTotalBytes() % c.blockAlign() == 0, "must be a multiple of block_align (%s)",
                    RawBlockCoreConfig::blockAlign);
    private static final ConfigKnob<Long> CAPACITY_BYTES = TABLE.knob("capacity_bytes", ConfigType.LONG, 0L,
                    "The bytes of the device the store uses, from offset 0; 0 = the device's size.")
            .limit(v -> v >= 0, "must be >= 0 (0 = the device's size)")
            // written as a difference: meta area + slot may overflow a long
            .across((v, c) -> !c.metaSizeKnown() || v == 0 || v - c.slotBytes() >= c.metaTotalBytes(),
                    "must hold the meta area (%s) and at least one slot (%s)", RawBlockCoreConfig::metaTotalBytes,
                    RawBlockCoreConfig::slotBytes);
    private static final ConfigKnob<MetaFormat> META_FORMAT = TABLE.knob("meta_format",
            ConfigType.choice(MetaFormat.values(), MetaFormat::configName, MetaFormat::parse), MetaFormat.FDPBLOCK_V2,
            "The metadata format of a new device; an existing one opens in the format it holds"
                    + " (docs/on-device-format.md).");
    private static final ConfigKnob<Integer> META_SYNC_INTERVAL_MS = TABLE.knob("meta_sync_interval_ms",
                    ConfigType.INT, DEFAULT_META_SYNC_INTERVAL_MS, "fdpblock_v2: the longest an acknowledged put's log"
                            + " record waits before a group commit makes it durable.")
            .limit(v -> v >= 0, "must be >= 0 (0 = a put is acknowledged once its log record is durable)");
    private static final ConfigKnob<Integer> META_CHECKPOINT_INTERVAL_SEC = TABLE.knob("meta_checkpoint_interval_sec",
                    ConfigType.INT, 60, "lmcache_v1: seconds between periodic checkpoints, whatever the I/O load.")
            .limit(v -> v >= 1, "must be >= 1");
    private static final ConfigKnob<Boolean> META_ENABLE_PERIODIC = TABLE.knob("meta_enable_periodic",
            ConfigType.BOOLEAN, true, "lmcache_v1: write a checkpoint every `meta_checkpoint_interval_sec`.");
    private static final ConfigKnob<Boolean> LOAD_CHECKPOINT_ON_INIT = TABLE.knob("load_checkpoint_on_init",
            ConfigType.BOOLEAN, true, "Open the store a device holds; false over an existing store is refused"
                    + " (`format` discards one).");
    private static final ConfigKnob<Boolean> META_VERIFY_ON_LOAD = TABLE.knob("meta_verify_on_load",
            ConfigType.BOOLEAN, true, "lmcache_v1: at open, check each recovered entry's slot header (magic, key"
                    + " identity, length) and drop the entries that fail.");
    private static final ConfigKnob<VerifyPayload> VERIFY_PAYLOAD = TABLE.knob("verify_payload",
            ConfigType.choice(VerifyPayload.values(), VerifyPayload::configName, VerifyPayload::parse),
            VerifyPayload.ALWAYS, "What a load checks before it serves a payload: `always` its CRC32C, `recovery`"
                    + " the CRC32C only on the first load of a slot that predates this open; what this open wrote or"
                    + " verified is read as LMCache reads it, the payload alone, unchecked (docs/on-device-format.md).");
    private static final ConfigKnob<Boolean> OPEN_DAMAGED = TABLE.knob("open_damaged", ConfigType.BOOLEAN, false,
            "Open a store whose metadata is damaged with what is readable (its lost keys reported, the store"
                    + " unhealthy) instead of refusing it; never discards what is readable.");
    private static final ConfigKnob<Boolean> FORMAT = TABLE.knob("format", ConfigType.BOOLEAN, false,
            "Format the device at open: whatever it holds is discarded. The only way to discard a store.");
    private static final ConfigKnob<Integer> CLOSE_TIMEOUT_MS = TABLE.knob("close_timeout_ms", ConfigType.INT,
                    DEFAULT_CLOSE_TIMEOUT_MS, "How long close waits for puts, loads and deallocations in flight"
                            + " before it gives them up.")
            .limit(v -> v >= 1, "must be >= 1");
    private static final ConfigKnob<Boolean> USE_ODIRECT = TABLE.knob("use_odirect", ConfigType.BOOLEAN, true,
            "Open files and block devices with O_DIRECT, past the page cache.");
    private static final ConfigKnob<IoEngine> IO_ENGINE = TABLE.knob("io_engine",
                    ConfigType.choice(IoEngine.values(), IoEngine::configName, IoEngine::parse), IoEngine.POSIX,
                    "How the store reaches the device: pread/pwrite, io_uring, NVMe passthru on `/dev/ngXnY`, or memory"
                            + " (tests).")
            .nullIsDefault();
    private static final ConfigKnob<Integer> IOURING_QUEUE_DEPTH = TABLE.knob("iouring_queue_depth", ConfigType.INT,
                    256, "Entries of each io_uring submission queue.")
            .limit(v -> v >= 1 && v <= 4096, "must be in 1..4096");
    private static final ConfigKnob<Integer> MAX_BATCH_KEYS = TABLE.knob("max_batch_keys", ConfigType.INT,
                    DEFAULT_MAX_BATCH_KEYS, "Keys per device submission in a batched put (header and payload: two"
                            + " writes per key).")
            .limit(v -> v >= 1 && v <= 1024, "must be in 1..1024");
    private static final ConfigKnob<List<Integer>> FDP_PLACEMENT_IDS = TABLE.knob("fdp_placement_ids",
                    ConfigType.INTS, List.of(), "The placement ids data is written with, from the device's RUH Status;"
                            + " empty = every reported id but the default handle's and the metadata's (docs/fdp.md).")
            .nullIsDefault()
            .limit(ids -> ids.stream().allMatch(id -> PlacementId.check("raw_block config: fdp_placement_ids entry",
                    id) == id), "each entry must be in 0..65535");
    private static final ConfigKnob<PlacementPolicy> FDP_DATA_PLACEMENT_POLICY = TABLE.knob(
                    "fdp_data_placement_policy", ConfigType.choice(PlacementPolicy.values(), PlacementPolicy::configName,
                            PlacementPolicy::parse), PlacementPolicy.NONE,
                    "How puts choose the placement id of their data (docs/fdp.md).")
            .nullIsDefault();
    private static final ConfigKnob<PlacementId> META_CHECKPOINT_PLACEMENT_ID = TABLE.knob(
                    "meta_checkpoint_placement_id", ConfigType.PLACEMENT_ID, PlacementId.NONE,
                    "A placement id of the metadata's own (in RUH Status, left out of the data ids).")
            .defaultDoc("none: no directive")
            .nullIsDefault();
    private static final ConfigKnob<Boolean> FDP_ENABLED = TABLE.knob("fdp_enabled", ConfigType.BOOLEAN, false,
                    "Write with FDP placement directives (uring_cmd on an FDP namespace, docs/fdp.md).")
            .across((v, c) -> v || c.fdpPlacementIds().isEmpty() && c.fdpDataPlacementPolicy() == PlacementPolicy.NONE
                    && c.metaCheckpointPlacementId().isNone(), "must be true when fdp_placement_ids,"
                    + " fdp_data_placement_policy or meta_checkpoint_placement_id is set");
    private static final ConfigKnob<Boolean> FDP_SLOT_AFFINITY_ENABLED = TABLE.knob("fdp_slot_affinity_enabled",
            ConfigType.BOOLEAN, false, "A freed slot is handed first to the placement id it held (docs/fdp.md).");

    static {
        // LMCache's own keys, accepted so that its adapter JSON parses as is
        TABLE.alias("fdp_slot_reuse_policy", ConfigType.oneOf("none", "pid_affinity"), "none",
                        "LMCache's name for `fdp_slot_affinity_enabled`: `pid_affinity` sets it.",
                        (b, v) -> b.fdpSlotAffinityEnabled(v.equals("pid_affinity")))
                .nullIsDefault();
        TABLE.alias("use_uring_cmd", ConfigType.BOOLEAN, false, "LMCache's switch for NVMe passthru: true turns"
                        + " io_uring (`io_engine`, or `use_iouring` / `use_uring` without it) into `uring_cmd`; refused"
                        + " with any other engine, the default posix included (give `\"io_engine\": \"io_uring\"`"
                        + " with it, or `uring_cmd` alone).",
                        (b, on) -> b.useUringCmd = on)
                .nullIsDefault();
        legacyIoUringSwitch("use_iouring");
        legacyIoUringSwitch("use_uring");
        TABLE.alias("meta_magic", ConfigType.STRING, META_MAGIC, "LMCache's metadata magic, checked.", null)
                .limit(META_MAGIC::equals, "must be " + META_MAGIC + " (the only format this store reads)");
        TABLE.alias("meta_version", ConfigType.INT, META_VERSION, "LMCache's metadata version, checked.", null)
                .limit(v -> v == META_VERSION, "must be " + META_VERSION);
        TABLE.ignored("enable_zero_copy", ConfigType.BOOLEAN, "No effect: buffers are zero-copy where aligned.");
        TABLE.ignored("max_data_transfer_size", ConfigType.LONG, "No effect: transfers are split by the device's"
                + " own limit.").limit(v -> v >= 0, "must be >= 0");
        for (String key : List.of("num_store_workers", "num_lookup_workers", "num_load_workers")) {
            TABLE.ignored(key, ConfigType.LONG, "No effect: there are no worker pools to size (no thread hop that"
                            + " buys nothing).")
                    .limit(v -> v >= 1, "must be >= 1");
        }
        TABLE.ignored("meta_idle_quiet_ms", ConfigType.INT, "No effect: checkpoints never wait for idle I/O.")
                .limit(v -> v >= 0, "must be >= 0");
    }

    /**
     * LMCache's older boolean {@code key} for io_uring: it counts only when {@code io_engine} is not given
     * (resolved once every key is read, so the order of the keys does not matter).
     */
    private static void legacyIoUringSwitch(String key) {
        TABLE.alias(key, ConfigType.BOOLEAN, false, "LMCache's older switch: true selects `io_uring` when `io_engine`"
                        + " is not given; beside `io_engine` it has no effect.",
                        (b, on) -> b.legacyIoUring |= on)
                .nullIsDefault();
    }

    /** Keys LMCache accepts in its raw_block JSON that have no effect here (see docs/configuration.md). */
    public static final Set<String> ACCEPTED_AND_IGNORED = TABLE.keysWithoutEffect();
    /** Keys of the adapter JSON that belong to the adapter, not the core. */
    private static final Set<String> ADAPTER_KEYS = Set.of("type", "module_path", "class_name", "adapter_params");
    private static final ObjectMapper JSON = Json.strictMapper();

    /** The values, indexed as the table's knobs; lists are unmodifiable copies. */
    private final Object[] values;
    private final List<String> devicePaths;

    private RawBlockCoreConfig(Builder b) {
        values = b.values.clone();
        String path = get(DEVICE_PATH);
        List<String> paths = get(DEVICE_PATHS);
        TABLE.checkRequired(values);
        if (path != null && paths != null) {
            throw new IllegalArgumentException("raw_block config: device_path (" + path + ") and device_paths ("
                    + paths + ") are both set: give device_path for one device, or device_paths for several");
        }
        if (path == null && paths == null) {
            throw new IllegalArgumentException("raw_block config: device_path is required (or device_paths, a list,"
                    + " for a store striped over several devices)");
        }
        TABLE.checkLimits(this, values);
        devicePaths = paths != null ? paths : List.of(path);
    }

    private <T> T get(ConfigKnob<T> knob) {
        return knob.valueIn(values);
    }

    /** The first device {@code device_paths} names a second time, or null. */
    private String repeatedDevice() {
        Set<String> seen = new HashSet<>();
        return get(DEVICE_PATHS).stream().filter(p -> !seen.add(p)).findFirst().orElse(null);
    }

    /** The sizes of the metadata area are known before open: given, or lmcache_v1's fixed default. */
    private boolean metaSizeKnown() {
        return metaTotalBytesSet() || metaFormat() == MetaFormat.LMCACHE_V1;
    }

    /**
     * The metadata area fdpblock_v2 needs for a device of {@code slots} slots (what it uses when
     * {@code meta_total_bytes} is left out, to within a MiB): set {@code meta_total_bytes} to it and
     * {@code capacity_bytes} to it plus {@code slots * slot_bytes} for a device of exactly that many slots.
     */
    public static long v2MetaBytesFor(int blockAlign, long slots) {
        return StoreFormats.named(MetaFormat.FDPBLOCK_V2.configName()).metaBytesFor(blockAlign, slots, 1 << 20);
    }

    /**
     * The {@code meta_total_bytes} an lmcache_v1 store of {@code slots} slots needs for the checkpoint of
     * a full device to fit a container, estimated at 260 bytes of JSON per key (keys of about 110
     * characters; longer keys need more). The store warns at open when its metadata area is smaller.
     */
    public static long v1MetaBytesFor(int blockAlign, long slots) {
        return StoreFormats.named(MetaFormat.LMCACHE_V1.configName()).metaBytesFor(blockAlign, slots, blockAlign);
    }

    public static Builder builder(String devicePath, long slotBytes) {
        return new Builder().devicePath(devicePath).slotBytes(slotBytes);
    }

    /** A store striped over {@code devicePaths} (the first holds the metadata area). */
    public static Builder builder(List<String> devicePaths, long slotBytes) {
        return new Builder().devicePaths(devicePaths).slotBytes(slotBytes);
    }

    // ---- JSON (LMCache --l2-adapter style) ----

    /** The configuration keys this store understands. */
    public static Set<String> knownKeys() {
        return TABLE.keys();
    }

    /** The knob table, for the test that keeps docs/configuration.md in step with it. */
    static ConfigKnob.Table knobTable() {
        return TABLE;
    }

    /**
     * Parses the raw_block part of an adapter JSON (e.g. LMCache's {@code --l2-adapter} value).
     * {@code type} and other adapter-level keys are ignored; any other unknown key is an error (a typo
     * would otherwise silently fall back to a default).
     */
    public static RawBlockCoreConfig fromJson(String json) {
        JsonNode root;
        try {
            root = Json.readOne(JSON, json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("raw_block config is not valid JSON (" + e.getOriginalMessage()
                    + ", line " + e.getLocation().getLineNr() + " column " + e.getLocation().getColumnNr() + ")", e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("raw_block config must be a JSON object, got: " + json);
        }
        return fromJson(root);
    }

    /** Parses a raw_block JSON object, as {@link #fromJson(String)}. */
    public static RawBlockCoreConfig fromJson(JsonNode root) {
        Builder b = new Builder();
        for (Map.Entry<String, JsonNode> e : root.properties()) {
            ConfigKnob<?> knob = TABLE.get(e.getKey());
            if (knob != null) {
                knob.readJson(b, e.getValue());
            } else if (!ADAPTER_KEYS.contains(e.getKey())) {
                throw new IllegalArgumentException("raw_block config: unknown key '" + e.getKey() + "'; known keys: "
                        + String.join(", ", TABLE.keys()));
            }
        }
        JsonNode engine = root.get(IO_ENGINE.key());
        b.resolveEngineSwitches(engine != null && !engine.isNull());
        return b.build();
    }

    // ---- accessors: one a knob, the value as set (docs/configuration.md says what each means) ----

    /** The device, or with {@code device_paths} the first one (it holds the metadata area). */
    public String devicePath() { return devicePaths.get(0); }
    /** Every device, in stripe order (one entry for {@code device_path}). */
    public List<String> devicePaths() { return devicePaths; }
    public long capacityBytes() { return get(CAPACITY_BYTES); }
    public long slotBytes() { return get(SLOT_BYTES); }
    public int blockAlign() { return get(BLOCK_ALIGN); }
    public int headerBytes() { return get(HEADER_BYTES); }
    /**
     * The metadata area: as configured, else (lmcache_v1) 256 MiB; fdpblock_v2 sizes it from the
     * capacity when it is not configured ({@link #metaTotalBytesSet()}).
     */
    public long metaTotalBytes() { return metaTotalBytesSet() ? get(META_TOTAL_BYTES) : DEFAULT_META_TOTAL_BYTES; }
    /** {@code meta_total_bytes} was given. */
    public boolean metaTotalBytesSet() { return get(META_TOTAL_BYTES) > 0; }
    public MetaFormat metaFormat() { return get(META_FORMAT); }
    public int metaSyncIntervalMs() { return get(META_SYNC_INTERVAL_MS); }
    public int metaCheckpointIntervalSec() { return get(META_CHECKPOINT_INTERVAL_SEC); }
    public boolean metaEnablePeriodic() { return get(META_ENABLE_PERIODIC); }
    public boolean loadCheckpointOnInit() { return get(LOAD_CHECKPOINT_ON_INIT); }
    public boolean metaVerifyOnLoad() { return get(META_VERIFY_ON_LOAD); }
    /** See {@link VerifyPayload}. */
    public VerifyPayload verifyPayload() { return get(VERIFY_PAYLOAD); }
    public boolean useOdirect() { return get(USE_ODIRECT); }
    public IoEngine ioEngine() { return get(IO_ENGINE); }
    public int iouringQueueDepth() { return get(IOURING_QUEUE_DEPTH); }
    public int maxBatchKeys() { return get(MAX_BATCH_KEYS); }
    public boolean fdpEnabled() { return get(FDP_ENABLED); }
    public List<Integer> fdpPlacementIds() { return get(FDP_PLACEMENT_IDS); }
    public PlacementPolicy fdpDataPlacementPolicy() { return get(FDP_DATA_PLACEMENT_POLICY); }
    /** {@link PlacementId#NONE}: checkpoints are written without a directive. */
    public PlacementId metaCheckpointPlacementId() { return get(META_CHECKPOINT_PLACEMENT_ID); }
    public boolean fdpSlotAffinityEnabled() { return get(FDP_SLOT_AFFINITY_ENABLED); }
    public boolean format() { return get(FORMAT); }
    public boolean openDamaged() { return get(OPEN_DAMAGED); }
    public int closeTimeoutMs() { return get(CLOSE_TIMEOUT_MS); }
    /** Bytes of payload a slot holds. */
    public long maxPayloadBytes() { return slotBytes() - headerBytes(); }
    /** Each of the two checkpoint containers. */
    public long containerBytes() { return metaTotalBytes() / 2 / blockAlign() * blockAlign(); }

    /** A builder holding every value of this config (one device as {@code device_path}, several as a list). */
    public Builder toBuilder() {
        Builder b = new Builder(values);
        // a caller may give another device_path to a copy of a one-device config, whichever key it came from
        return devicePaths.size() > 1 ? b.devicePath(null).devicePaths(devicePaths)
                : b.devicePaths(null).devicePath(devicePath());
    }

    @Override
    public String toString() {
        return "RawBlockCoreConfig{" + (devicePaths.size() > 1 ? "device_paths=" + devicePaths : "device_path="
                + devicePath()) + ", capacity_bytes=" + capacityBytes() + ", slot_bytes=" + slotBytes()
                + ", block_align=" + blockAlign() + ", header_bytes=" + headerBytes() + ", meta_total_bytes="
                + metaTotalBytes() + ", io_engine=" + ioEngine() + ", fdp_enabled=" + fdpEnabled()
                + (format() ? ", format=true" : "") + "}";
    }

    /**
     * Builds a config: starts from every knob's default, and {@link #build()} checks every rule. Each
     * setter is the knob of the same name (docs/configuration.md).
     */
    public static final class Builder {
        private final Object[] values;
        /** LMCache's {@code use_iouring} or {@code use_uring} was true (JSON only; see resolveEngineSwitches). */
        private boolean legacyIoUring;
        /** LMCache's {@code use_uring_cmd} was true (JSON only; see resolveEngineSwitches). */
        private boolean useUringCmd;

        public Builder() {
            this(TABLE.defaults());
        }

        private Builder(Object[] values) {
            this.values = values.clone();
        }

        <T> Builder set(ConfigKnob<T> knob, T v) {
            knob.store(values, v);
            return this;
        }

        public Builder devicePath(String v) { return set(DEVICE_PATH, v); }
        /** Several devices, slots striped across them (the first holds the metadata); not with devicePath. */
        public Builder devicePaths(List<String> v) { return set(DEVICE_PATHS, v); }
        public Builder capacityBytes(long v) { return set(CAPACITY_BYTES, v); }
        public Builder slotBytes(long v) { return set(SLOT_BYTES, v); }
        public Builder blockAlign(int v) { return set(BLOCK_ALIGN, v); }
        public Builder headerBytes(int v) { return set(HEADER_BYTES, v); }
        /** 0 = the default (lmcache_v1: 256 MiB; fdpblock_v2: sized from the capacity). */
        public Builder metaTotalBytes(long v) { return set(META_TOTAL_BYTES, v); }
        public Builder metaFormat(MetaFormat v) { return set(META_FORMAT, v); }
        public Builder metaSyncIntervalMs(int v) { return set(META_SYNC_INTERVAL_MS, v); }
        public Builder metaCheckpointIntervalSec(int v) { return set(META_CHECKPOINT_INTERVAL_SEC, v); }
        public Builder metaEnablePeriodic(boolean v) { return set(META_ENABLE_PERIODIC, v); }
        public Builder loadCheckpointOnInit(boolean v) { return set(LOAD_CHECKPOINT_ON_INIT, v); }
        public Builder metaVerifyOnLoad(boolean v) { return set(META_VERIFY_ON_LOAD, v); }
        public Builder verifyPayload(VerifyPayload v) { return set(VERIFY_PAYLOAD, v); }
        public Builder useOdirect(boolean v) { return set(USE_ODIRECT, v); }
        public Builder ioEngine(IoEngine v) { return set(IO_ENGINE, v); }
        public Builder iouringQueueDepth(int v) { return set(IOURING_QUEUE_DEPTH, v); }
        public Builder maxBatchKeys(int v) { return set(MAX_BATCH_KEYS, v); }
        public Builder fdpEnabled(boolean v) { return set(FDP_ENABLED, v); }
        public Builder fdpPlacementIds(List<Integer> v) { return set(FDP_PLACEMENT_IDS, v); }
        public Builder fdpDataPlacementPolicy(PlacementPolicy v) { return set(FDP_DATA_PLACEMENT_POLICY, v); }
        /** @throws IllegalArgumentException for an id outside 0..65535 */
        public Builder metaCheckpointPlacementId(int v) {
            return set(META_CHECKPOINT_PLACEMENT_ID, ConfigType.placementId(META_CHECKPOINT_PLACEMENT_ID.key(), v));
        }
        public Builder metaCheckpointPlacementId(PlacementId v) { return set(META_CHECKPOINT_PLACEMENT_ID, v); }
        public Builder fdpSlotAffinityEnabled(boolean v) { return set(FDP_SLOT_AFFINITY_ENABLED, v); }
        public Builder format(boolean v) { return set(FORMAT, v); }
        public Builder openDamaged(boolean v) { return set(OPEN_DAMAGED, v); }
        public Builder closeTimeoutMs(int v) { return set(CLOSE_TIMEOUT_MS, v); }

        /**
         * LMCache's engine switches, as its raw_block adapter reads them, once every key is read: the
         * legacy io_uring switches select io_uring only when {@code io_engine} is not given, and
         * {@code use_uring_cmd} needs io_uring (given, or selected so), which it makes uring_cmd. Our
         * own {@code uring_cmd} engine satisfies it too.
         */
        private void resolveEngineSwitches(boolean ioEngineGiven) {
            if (!ioEngineGiven && legacyIoUring) {
                set(IO_ENGINE, IoEngine.IO_URING);
            }
            if (!useUringCmd) {
                return;
            }
            IoEngine engine = IO_ENGINE.valueIn(values);
            if (engine != IoEngine.IO_URING && engine != IoEngine.URING_CMD) {
                throw new IllegalArgumentException("raw_block config: use_uring_cmd requires io_uring io_engine, but"
                        + " use_uring_cmd = true is given with io_engine " + (ioEngineGiven ? "= " + engine.configName()
                        : "not set (posix)") + ": add \"io_engine\": \"io_uring\" beside it for NVMe passthru on"
                        + " /dev/ngXnY (or give \"io_engine\": \"uring_cmd\" alone), or drop use_uring_cmd");
            }
            set(IO_ENGINE, IoEngine.URING_CMD);
        }

        /** @throws IllegalArgumentException naming the key, the value and the rule it breaks */
        public RawBlockCoreConfig build() {
            return new RawBlockCoreConfig(this);
        }
    }
}
