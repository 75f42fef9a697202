package io.fdpblock.adapter;

import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.nvme.PlacementId;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.fdpblock.l2.L2AdapterContractTest.awaitStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * FDP policy in the store and adapter (docs/fdp.md sections 2-6), over a memory device that acts as an
 * FDP namespace (reports ids, takes deallocates). The device tier checks the same on emulated NVMe.
 */
@Tag("host")
class FdpPlacementTest {
    private static final long SLOT = 16 << 10;
    private static final long META = RawBlockCoreConfig.v2MetaBytesFor(4096, 256);
    private static final List<Integer> REPORTED = List.of(0, 1, 2, 3);

    private final Arena arena = Arena.ofShared();
    private final FaultInjectingDevice device = new FaultInjectingDevice(BlockDevices.memory(META + 256 * SLOT, 4096))
            .emulatePlacement(REPORTED, 4 * SLOT);

    @AfterEach
    void tearDown() {
        device.close();
        arena.close();
    }

    private RawBlockCoreConfig.Builder config() {
        return RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(META + 256 * SLOT).metaTotalBytes(META)
                .ioEngine(IoEngine.MEMORY).metaEnablePeriodic(false).fdpEnabled(true)
                .fdpDataPlacementPolicy(RawBlockCoreConfig.PlacementPolicy.CACHE_SALT_PREFIX)
                .metaCheckpointPlacementId(3);
    }

    private MemoryObj data(int size) {
        return MemoryObj.of(arena.allocate(size, 4096));
    }

    @Test
    void placementIsDiscoveredAndBadIdsAreRefusedBeforeAnyIo() throws Exception {
        try (RawBlockCore core = RawBlockCore.open(config().build(), device)) {
            assertThat(core.reportedPlacementIds()).isEqualTo(REPORTED);
            assertThat(core.dataPlacementIds()).as("0 and the metadata id are not for data").containsExactly(1, 2);
            assertThat(core.status()).containsEntry("slots_per_reclaim_unit", 4).containsEntry("fdp_enabled", true);
            device.clearSubmissions();
            MemorySegment p = arena.allocate(4096, 4096);
            assertThatThrownBy(() -> core.put(List.of(PutRequest.of("k@0x00000000@01", p).withPlacement(9))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("placement id 9 is not reported")
                    .hasMessageContaining("[0, 1, 2, 3]");
            assertThat(device.submissions()).isEmpty();
        }
        assertThatThrownBy(() -> RawBlockCore.open(config().fdpPlacementIds(List.of(1, 7)).build(), device))
                .hasMessageContaining("fdp_placement_ids has 7").hasMessageContaining("[0, 1, 2, 3]");
        assertThatThrownBy(() -> RawBlockCore.open(config().metaCheckpointPlacementId(8).build(), device))
                .hasMessageContaining("meta_checkpoint_placement_id = 8");
        FaultInjectingDevice plain = new FaultInjectingDevice(BlockDevices.memory(META + 16 * SLOT, 4096));
        try {
            assertThatThrownBy(() -> RawBlockCore.open(config().capacityBytes(META + 16 * SLOT).build(), plain))
                    .hasMessageContaining("cannot carry placement ids").hasMessageContaining("uring_cmd");
        } finally {
            plain.close();
        }
    }

    @Test
    void cacheSaltPrefixBucketsGetIdsFirstComeAndFallBackWhenTheyRunOut() throws Exception {
        try (RawBlockL2Adapter a = RawBlockL2Adapter.open(config().build(), device)) {
            String[] salts = {"RAG:app1", "rag:app2", "chat:x", "nocolon", "", "code:y"};
            List<ObjectKey> keys = new ArrayList<>();
            List<MemoryObj> objs = new ArrayList<>();
            for (int i = 0; i < salts.length; i++) {
                keys.add(ObjectKey.of("m", 0, new byte[] {(byte) i}).withCacheSalt(salts[i]));
                objs.add(data(4096));
            }
            device.clearSubmissions();
            assertThat(awaitStore(a, a.submitStoreTask(keys, objs)).success()).isTrue();
            // the payloads, then the headers: both of a key carry its id
            int none = PlacementId.NONE_VALUE;
            assertThat(device.submissions()).extracting(s -> s.placementIds())
                    .containsExactly(List.of(1, 1, 2, none, none, none), List.of(1, 1, 2, none, none, none));
            Map<String, Object> st = a.reportStatus();
            assertThat(st).containsEntry("fdp_buckets", Map.of("rag", 1, "chat", 2))
                    .containsEntry("fdp_placement_fallbacks", 1L);
            @SuppressWarnings("unchecked")
            Map<String, Long> bytes = (Map<String, Long>) st.get("bytes_written_by_placement_id");
            assertThat(bytes).containsExactly(Map.entry("none", 3 * 8192L), Map.entry("1", 2 * 8192L),
                    Map.entry("2", 8192L));
        }
    }

    @Test
    void eachPlacementIdFillsReclaimUnitsOfItsOwnAndFreedSlotsAreDeallocatedBeforeReuse() throws Exception {
        try (RawBlockL2Adapter a = RawBlockL2Adapter.open(config().build(), device)) {
            List<ObjectKey> keys = new ArrayList<>();
            List<MemoryObj> objs = new ArrayList<>();
            for (int i = 0; i < 6; i++) { // interleaved buckets: rag, chat, rag, chat, ...
                keys.add(ObjectKey.of("m", 0, new byte[] {(byte) i}).withCacheSalt(i % 2 == 0 ? "rag:a" : "chat:b"));
                objs.add(data(4096));
            }
            device.clearSubmissions();
            assertThat(awaitStore(a, a.submitStoreTask(keys, objs)).success()).isTrue();
            List<Long> offsets = device.submissions().get(1).offsets(); // the headers: at each slot's start
            List<Long> pid1 = new ArrayList<>();
            List<Long> pid2 = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                long slot = (offsets.get(i) - META) / SLOT;
                (i % 2 == 0 ? pid1 : pid2).add(slot / 4); // reclaim unit = 4 slots
            }
            assertThat(pid1).as("rag's slots share one reclaim unit").containsOnly(pid1.get(0));
            assertThat(pid2).as("chat's slots share another").containsOnly(pid2.get(0));
            assertThat(pid1.get(0)).isNotEqualTo(pid2.get(0));

            long slotOfKey0 = offsets.get(0);
            a.delete(List.of(keys.get(0)));
            a.core().checkpointNow(); // fdpblock_v2 releases the slot once the delete is durable; deallocated first
            assertThat(device.deallocations()).hasSize(1);
            assertThat(device.deallocations().get(0)).containsExactly(slotOfKey0, SLOT);
            assertThat(a.reportStatus()).containsEntry("deallocated_slots", 1L);
        }
    }
}
