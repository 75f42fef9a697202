package io.fdpblock.core;

import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("unit")
class RawBlockCoreConfigTest {
    private static final Path DOC = Path.of("docs/configuration.md");
    private static final String BEGIN = "<!-- knob table: generated from RawBlockCoreConfig, do not edit -->\n";
    private static final String END = "<!-- end of knob table -->";

    private static RawBlockCoreConfig.Builder base() {
        return RawBlockCoreConfig.builder("/dev/x", 1 << 20);
    }

    @Test
    void defaultsAreLmcacheDefaults() {
        RawBlockCoreConfig c = base().build();
        assertThat(c.blockAlign()).isEqualTo(4096);
        assertThat(c.headerBytes()).isEqualTo(4096);
        assertThat(c.metaTotalBytes()).isEqualTo(256L << 20);
        assertThat(c.metaCheckpointIntervalSec()).isEqualTo(60);
        assertThat(c.metaVerifyOnLoad()).isTrue();
        assertThat(c.ioEngine()).isEqualTo(IoEngine.POSIX);
        assertThat(c.iouringQueueDepth()).isEqualTo(256);
        assertThat(c.containerBytes()).isEqualTo(128L << 20);
    }

    @Test
    void parsesAdapterJson() {
        RawBlockCoreConfig c = RawBlockCoreConfig.fromJson("""
                {"type":"raw_block","device_path":"/var/tmp/d.img","slot_bytes":2097152,"capacity_bytes":1073741824,
                 "io_engine":"io_uring","iouring_queue_depth":64,"meta_total_bytes":8388608,"fdp_enabled":true,
                 "fdp_placement_ids":[1,2,3],"fdp_data_placement_policy":"cache_salt_prefix",
                 "meta_checkpoint_placement_id":4,"fdp_slot_reuse_policy":"pid_affinity","meta_magic":"LMCIDX01"}""");
        assertThat(c.devicePath()).isEqualTo("/var/tmp/d.img");
        assertThat(c.slotBytes()).isEqualTo(2 << 20);
        assertThat(c.ioEngine()).isEqualTo(IoEngine.IO_URING);
        assertThat(c.iouringQueueDepth()).isEqualTo(64);
        assertThat(c.fdpPlacementIds()).containsExactly(1, 2, 3);
        assertThat(c.fdpDataPlacementPolicy()).isEqualTo(RawBlockCoreConfig.PlacementPolicy.CACHE_SALT_PREFIX);
        assertThat(c.metaCheckpointPlacementId().value()).isEqualTo(4);
        assertThat(c.fdpSlotAffinityEnabled()).isTrue();
    }

    @Test
    void everyRuleNamesTheFieldTheValueAndTheRule() {
        assertThatThrownBy(() -> base().blockAlign(3000).build())
                .hasMessage("raw_block config: block_align = 3000 must be a power of two >= 512");
        assertThatThrownBy(() -> base().headerBytes(2048).build())
                .hasMessageContaining("header_bytes = 2048").hasMessageContaining("multiple of block_align (4096)");
        assertThatThrownBy(() -> base().slotBytes(4096).build())
                .hasMessageContaining("slot_bytes = 4096").hasMessageContaining("larger than header_bytes");
        assertThatThrownBy(() -> base().slotBytes(10000).build()).hasMessageContaining("slot_bytes = 10000");
        assertThatThrownBy(() -> base().metaTotalBytes(8192).build()).hasMessageContaining("meta_total_bytes = 8192");
        assertThatThrownBy(() -> base().metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1).capacityBytes(1 << 20).build())
                .hasMessageContaining("capacity_bytes = 1048576").hasMessageContaining("meta area");
        assertThatThrownBy(() -> base().fdpEnabled(true).fdpPlacementIds(List.of(1, -1)).build())
                .hasMessageContaining("fdp_placement_ids entry -1").hasMessageContaining("0..65535");
        assertThatThrownBy(() -> base().fdpEnabled(true).metaCheckpointPlacementId(65536).build())
                .hasMessageContaining("meta_checkpoint_placement_id 65536").hasMessageContaining("0..65535");
        assertThatThrownBy(() -> base().metaCheckpointPlacementId(3).build()).hasMessageContaining("fdp_enabled");
        assertThatThrownBy(() -> base().fdpPlacementIds(List.of(1)).build()).hasMessageContaining("fdp_enabled");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_path\":\"/x\"}"))
                .hasMessageContaining("slot_bytes is required");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"slot_bytes\":1048576}"))
                .hasMessageContaining("device_path is required");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_path\":\"/x\",\"slot_bytes\":1048576,\"io_engine\":\"spdk\"}"))
                .hasMessageContaining("unknown io_engine 'spdk'");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_path\":\"/x\",\"slot_byte\":1048576}"))
                .hasMessageContaining("unknown key 'slot_byte'").hasMessageContaining("slot_bytes");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_path\":\"/x\",\"slot_bytes\":\"1M\"}"))
                .hasMessageContaining("slot_bytes = \"1M\" must be an integer");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("[1]")).hasMessageContaining("must be a JSON object");
    }

    /** The engine LMCache's JSON selects, read both ways round: the order of the keys must not matter. */
    private static IoEngine engineOf(String first, String second) {
        String base = "\"device_path\":\"/x\",\"slot_bytes\":1048576";
        IoEngine forward = RawBlockCoreConfig.fromJson("{" + base + "," + first + "," + second + "}").ioEngine();
        IoEngine backward = RawBlockCoreConfig.fromJson("{" + second + "," + first + "," + base + "}").ioEngine();
        assertThat(backward).as("%s, %s read the other way round", first, second).isEqualTo(forward);
        return forward;
    }

    @Test
    void engineSwitchesSelectAsLmcacheDoesInEitherKeyOrder() {
        // two keys and the engine they select: use_iouring and use_uring count only without io_engine (null
        // is not given, as in LMCache); use_uring_cmd turns io_uring, given or selected so, into passthru
        String[][] cases = {
            {"\"io_engine\":\"posix\"", "\"use_iouring\":true", "posix"},
            {"\"io_engine\":\"posix\"", "\"use_uring\":true", "posix"},
            {"\"io_engine\":\"memory\"", "\"use_iouring\":true", "memory"},
            {"\"io_engine\":\"uring_cmd\"", "\"use_uring\":true", "uring_cmd"},
            {"\"use_iouring\":false", "\"use_uring\":true", "io_uring"},
            {"\"use_iouring\":false", "\"use_uring\":false", "posix"},
            {"\"io_engine\":null", "\"use_iouring\":true", "io_uring"},
            {"\"use_iouring\":null", "\"use_uring_cmd\":null", "posix"},
            {"\"io_engine\":\"io_uring\"", "\"use_uring_cmd\":true", "uring_cmd"},
            {"\"use_iouring\":true", "\"use_uring_cmd\":true", "uring_cmd"},
            {"\"io_engine\":\"uring_cmd\"", "\"use_uring_cmd\":true", "uring_cmd"},
            {"\"io_engine\":\"posix\"", "\"use_uring_cmd\":false", "posix"},
        };
        for (String[] c : cases) {
            assertThat(engineOf(c[0], c[1])).as("%s, %s", c[0], c[1]).isEqualTo(IoEngine.parse(c[2]));
        }
    }

    @Test
    void useUringCmdWithoutIoUringIsRefusedInEitherKeyOrder() {
        String base = "{\"device_path\":\"/x\",\"slot_bytes\":1048576,";
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + "\"use_uring_cmd\":true}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("raw_block config: use_uring_cmd requires io_uring io_engine, but use_uring_cmd = true is"
                        + " given with io_engine not set (posix): add \"io_engine\": \"io_uring\" beside it for NVMe"
                        + " passthru on /dev/ngXnY (or give \"io_engine\": \"uring_cmd\" alone), or drop use_uring_cmd");
        for (String json : List.of(base + "\"io_engine\":\"posix\",\"use_uring_cmd\":true}",
                base + "\"use_uring_cmd\":true,\"io_engine\":\"posix\"}")) {
            assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(json)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("use_uring_cmd requires io_uring io_engine")
                    .hasMessageContaining("with io_engine = posix");
        }
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + "\"io_engine\":\"memory\",\"use_uring_cmd\":true,"
                + "\"capacity_bytes\":1073741824}")).hasMessageContaining("with io_engine = memory");
    }

    @Test
    void lmcacheKeysWithoutEffectAreCheckedAndIgnored() {
        String base = "{\"device_path\":\"/x\",\"slot_bytes\":1048576";
        RawBlockCoreConfig c = RawBlockCoreConfig.fromJson(base + ",\"meta_idle_quiet_ms\":50,\"num_load_workers\":2,"
                + "\"io_engine\":\"io_uring\",\"use_uring_cmd\":true,\"fdp_slot_reuse_policy\":null}");
        assertThat(c.ioEngine()).isEqualTo(IoEngine.URING_CMD);
        assertThat(c.fdpSlotAffinityEnabled()).isFalse();
        assertThat(RawBlockCoreConfig.ACCEPTED_AND_IGNORED).contains("meta_idle_quiet_ms", "num_store_workers");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + ",\"meta_idle_quiet_ms\":-1}"))
                .hasMessage("raw_block config: meta_idle_quiet_ms = -1 must be >= 0");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + ",\"meta_magic\":\"XX\"}"))
                .hasMessageContaining("meta_magic = \"XX\" must be LMCIDX01");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + ",\"fdp_slot_reuse_policy\":\"lru\"}"))
                .hasMessage("raw_block config: fdp_slot_reuse_policy = \"lru\" must be none or pid_affinity");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + ",\"max_batch_keys\":4294967296}"))
                .hasMessage("raw_block config: max_batch_keys = 4294967296 does not fit a 32-bit integer");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + ",\"use_odirect\":1}"))
                .hasMessage("raw_block config: use_odirect = 1 must be true or false");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + ",\"fdp_placement_ids\":7}"))
                .hasMessage("raw_block config: fdp_placement_ids = 7 must be a list of integers");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + "} {}")).hasMessageContaining("text after");
    }

    @Test
    void devicesAreOneOrAListNeverBoth() {
        assertThatThrownBy(() -> base().devicePaths(List.of("/a")).build())
                .hasMessageContaining("device_path (/dev/x) and device_paths ([/a]) are both set");
        assertThatThrownBy(() -> base().devicePath("").build())
                .hasMessage("raw_block config: device_path = \"\" must name a file, block device or /dev/ngXnY");
        assertThatThrownBy(() -> RawBlockCoreConfig.builder(List.of("/a", "/a"), 1 << 20).build())
                .hasMessageContaining("device_paths = [\"/a\", \"/a\"] must name each device once (it names /a twice)");
        assertThatThrownBy(() -> RawBlockCoreConfig.builder(List.of("/a", "/b"), 1 << 20).ioEngine(IoEngine.MEMORY)
                .build()).hasMessageContaining("io_engine memory has no devices to stripe over");
        assertThatThrownBy(() -> base().ioEngine(null).build())
                .hasMessage("raw_block config: io_engine = null must be one of posix, io_uring, uring_cmd, memory");
    }

    @Test
    void toBuilderKeepsEveryValue() {
        RawBlockCoreConfig c = RawBlockCoreConfig.builder(List.of("/a"), 1 << 20).capacityBytes(1L << 30)
                .metaTotalBytes(8 << 20).metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1).fdpEnabled(true)
                .fdpPlacementIds(List.of(2, 3)).metaCheckpointPlacementId(1).closeTimeoutMs(5).build();
        RawBlockCoreConfig copy = c.toBuilder().build();
        assertThat(copy).hasToString(c.toString());
        assertThat(copy.fdpPlacementIds()).containsExactly(2, 3);
        assertThat(copy.metaCheckpointPlacementId().value()).isEqualTo(1);
        assertThat(copy.closeTimeoutMs()).isEqualTo(5);
        assertThat(c.toBuilder().devicePath("/b").build().devicePaths()).containsExactly("/b");
        assertThat(base().build().metaTotalBytesSet()).isFalse();
        assertThat(base().build().toBuilder().build().metaTotalBytesSet()).isFalse();
    }

    /**
     * docs/configuration.md shows the knob table as RawBlockCoreConfig declares it. After a knob changes,
     * regenerate it: {@code mt RawBlockCoreConfigTest -Dfdpblock.docs.write=true}.
     */
    @Test
    void configurationDocShowsTheKnobTable() throws IOException {
        String doc = Files.readString(DOC);
        int from = doc.indexOf(BEGIN);
        int to = doc.indexOf(END);
        assertThat(from).as("%s has the markers %s and %s", DOC, BEGIN.strip(), END).isNotNegative();
        assertThat(to).as("%s has the marker %s", DOC, END).isGreaterThan(from);
        String table = RawBlockCoreConfig.knobTable().markdown();
        String written = doc.substring(from + BEGIN.length(), to);
        if (Boolean.getBoolean("fdpblock.docs.write")) {
            Files.writeString(DOC, doc.substring(0, from + BEGIN.length()) + table + doc.substring(to));
            return;
        }
        assertThat(written).as("%s is not the knob table RawBlockCoreConfig declares: regenerate it with"
                + " mt RawBlockCoreConfigTest -Dfdpblock.docs.write=true", DOC).isEqualTo(table);
    }
}
