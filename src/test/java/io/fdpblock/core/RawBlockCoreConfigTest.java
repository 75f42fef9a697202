package io.fdpblock.core;

import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("unit")
class RawBlockCoreConfigTest {
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
        assertThat(c.metaIdleQuietMs()).isEqualTo(100);
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
}
