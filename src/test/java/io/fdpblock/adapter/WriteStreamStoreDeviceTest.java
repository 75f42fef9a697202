package io.fdpblock.adapter;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.devicetier.DeviceGuest;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.nvme.FdpRecords;
import io.fdpblock.nvme.NvmeNamespace;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static io.fdpblock.l2.L2AdapterContractTest.awaitLoad;
import static io.fdpblock.l2.L2AdapterContractTest.awaitLookup;
import static io.fdpblock.l2.L2AdapterContractTest.awaitStore;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store end to end on the namespace's block device {@code /dev/nvmeXnY} with {@code io_engine
 * "io_uring"} and {@code fdp_enabled}: placement through the kernel's write streams, no passthru for data.
 * The RawBlock adapter gives each {@code cache_salt_prefix} bucket a data placement id of its own, and the
 * device shows it: every bucket's handle loses exactly the LBAs of its keys (slot header and payload),
 * keys without a bucket go to the default handle, the checkpoint to the metadata id at close; the keys
 * load back byte for byte, and again after a reopen (recovery through the same engine).
 */
@Tag("device")
@Tag(DeviceGuest.WRITE_STREAMS_TAG)
class WriteStreamStoreDeviceTest {
    private static final int PAYLOAD = 256 * 1024;

    private static MemorySegment payload(Arena arena, long seed) {
        MemorySegment s = arena.allocate(PAYLOAD, 4096);
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < PAYLOAD; i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        return s;
    }

    private static Map<Integer, Long> ruamw(NvmeNamespace ns) throws IOException {
        Map<Integer, Long> m = new TreeMap<>();
        for (FdpRecords.RuhStatusEntry e : ns.ruhStatus().entries()) {
            m.put(e.placementId(), e.availableMediaWritesLbas());
        }
        return m;
    }

    private static Map<Integer, Long> drops(Map<Integer, Long> before, Map<Integer, Long> after) {
        Map<Integer, Long> d = new TreeMap<>();
        before.forEach((id, v) -> d.put(id, v - after.get(id)));
        return d;
    }

    @Test
    void saltBucketsLandInTheirOwnHandlesThroughWriteStreamsAndSurviveAReopen() throws Exception {
        DeviceGuest.WriteStreams ws = DeviceGuest.requireWriteStreams();
        Path generic = DeviceGuest.device();
        String block = "/dev/" + ws.blockName();
        RawBlockCoreConfig config = DeviceGuest.storeConfig(block).ioEngine(IoEngine.IO_URING).build();
        DeviceGuest.wipeStore(DeviceGuest.storeConfig(generic.toString()).build()); // the same layout, via passthru

        String[] salts = {"rag:tenant1", "chat:tenant2", "rag:tenant3", "code:x", "", "chat:y", "rag:z", "code:x"};
        List<ObjectKey> keys = new ArrayList<>();
        List<MemoryObj> objs = new ArrayList<>();
        Map<ObjectKey, MemorySegment> stored = new LinkedHashMap<>();
        try (NvmeNamespace ns = NvmeNamespace.open(generic.toString()); Arena arena = Arena.ofShared()) {
            int lba = ns.lbaSize();
            long lbasPerKey = (config.headerBytes() + (long) PAYLOAD) / lba;
            List<Integer> ruh = ns.ruhStatus().placementIds();
            for (int i = 0; i < salts.length; i++) {
                ObjectKey k = ObjectKey.of("org/model", 0, new byte[] {(byte) i, 42}).withCacheSalt(salts[i]);
                MemorySegment p = payload(arena, 100 + i);
                keys.add(k);
                objs.add(MemoryObj.of(p));
                stored.put(k, p);
            }
            ns.ruhUpdate(ruh.stream().mapToInt(Integer::intValue).toArray()); // no reclaim unit fills during the test

            Map<Integer, Long> beforeStore = ruamw(ns);
            Map<Integer, Long> afterStore;
            Map<String, Object> status;
            try (RawBlockL2Adapter a = RawBlockL2Adapter.open(config)) {
                List<Integer> data = a.core().dataPlacementIds();
                System.out.println("store on " + block + ": data placement ids " + data + ", reported "
                        + a.core().reportedPlacementIds());
                assertThat(a.core().reportedPlacementIds()).as("the ids the write streams reach").isEqualTo(ruh);
                assertThat(a.core().status()).containsEntry("io_engine", "io_uring")
                        .containsEntry("fdp_reclaim_unit_bytes", ws.granularityBytes());

                assertThat(awaitStore(a, a.submitStoreTask(keys, objs)).success()).isTrue();
                afterStore = ruamw(ns);
                status = a.reportStatus();
                System.out.println("buckets " + status.get("fdp_buckets") + ", bytes by placement id "
                        + status.get("bytes_written_by_placement_id") + ", RUAMW drops " + drops(beforeStore, afterStore));

                // first come, first served: rag, chat, code take the first three data ids
                Map<String, Integer> bucketIds = Map.of("rag", data.get(0), "chat", data.get(1), "code", data.get(2));
                assertThat(status).containsEntry("fdp_buckets", new TreeMap<>(bucketIds));
                Map<Integer, Long> expected = new TreeMap<>();
                beforeStore.keySet().forEach(id -> expected.put(id, 0L));
                expected.merge(data.get(0), 3 * lbasPerKey, Long::sum); // rag x3
                expected.merge(data.get(1), 2 * lbasPerKey, Long::sum); // chat x2
                expected.merge(data.get(2), 2 * lbasPerKey, Long::sum); // code x2
                expected.merge(ruh.get(0), lbasPerKey, Long::sum);      // no salt: no stream, the default handle
                // metadata on its own id: the new store's two superblocks, and any log commit in the meantime
                int metaId = config.metaCheckpointPlacementId().value();
                Map<Integer, Long> dataDrops = drops(beforeStore, afterStore);
                assertThat(dataDrops.remove(metaId)).as("RUAMW drop of the metadata id %d", metaId)
                        .isGreaterThanOrEqualTo(2L * config.blockAlign() / lba);
                expected.remove(metaId);
                assertThat(dataDrops).as("RUAMW drop per placement id (LBAs)").isEqualTo(expected);

                List<MemoryObj> into = new ArrayList<>();
                for (int i = 0; i < keys.size(); i++) {
                    into.add(MemoryObj.of(arena.allocate(PAYLOAD, 4096)));
                }
                assertThat(awaitLoad(a, a.submitLoadTask(keys, into)).cardinality()).isEqualTo(keys.size());
                for (int i = 0; i < keys.size(); i++) {
                    assertThat(into.get(i).segment().mismatch(stored.get(keys.get(i)))).as("bytes of key %d", i)
                            .isEqualTo(-1);
                }
            }
            Map<Integer, Long> afterClose = ruamw(ns);
            int meta = config.metaCheckpointPlacementId().value();
            Map<Integer, Long> closing = drops(afterStore, afterClose);
            assertThat(closing.get(meta)).as("the final checkpoint went to the metadata id %d", meta).isPositive();
            closing.forEach((id, d) -> assertThat(d).as("RUAMW drop of id %d at close", id).isEqualTo(id == meta ? d : 0L));

            try (RawBlockL2Adapter again = RawBlockL2Adapter.open(config)) {
                assertThat(((Number) again.core().status().get("recovered_keys")).intValue()).as("recovered keys")
                        .isEqualTo(keys.size());
                assertThat(awaitLookup(again, again.submitLookupAndLockTask(keys)).cardinality()).isEqualTo(keys.size());
                again.submitUnlock(keys);
                MemoryObj one = MemoryObj.of(arena.allocate(PAYLOAD, 4096));
                assertThat(awaitLoad(again, again.submitLoadTask(List.of(keys.get(3)), List.of(one))).cardinality())
                        .isEqualTo(1);
                assertThat(one.segment().mismatch(stored.get(keys.get(3)))).isEqualTo(-1);
            }
        }
    }
}
