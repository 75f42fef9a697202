package io.fdpblock.core;

import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.l2.KeyCodec;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.zip.CRC32;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What recovery makes of what is on the device: LMCache's own checkpoints, and damage. */
@Tag("host")
class RecoveryTest {
    private static final RawBlockCoreConfig.MetaFormat V1 = RawBlockCoreConfig.MetaFormat.LMCACHE_V1;

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path dir;

    /** Read-modify-write of whole 4 KiB blocks, straight on the device (what a crash or bit rot leaves). */
    static void patch(BlockDevice dev, long offset, int length, Consumer<MemorySegment> edit) throws IOException {
        long start = offset / 4096 * 4096;
        long len = (offset + length + 4095) / 4096 * 4096 - start;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(len, 4096);
            IoBatch b = new IoBatch();
            b.read(start, buf);
            dev.execute(b);
            edit.accept(buf.asSlice(offset - start, length));
            b.reset();
            b.write(start, buf);
            dev.execute(b);
        }
    }

    private static MemorySegment bytes(String s) {
        return MemorySegment.ofArray(s.getBytes(StandardCharsets.UTF_8));
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aHandWrittenV1CheckpointAsLmcacheWritesItIsRead(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            String key = "org%2Fmodel@0x00000007@00000315";
            assertThat(KeyCodec.encode("org/model", 7, new byte[] {0, 0, 3, 0x15}, "", 0)).isEqualTo(key);
            long slot1 = CoreFixture.META + CoreFixture.SLOT;
            // Exactly the JSON LMCache writes: json.dumps(snapshot, separators=(",", ":"), ensure_ascii=True)
            String json = "{\"version\":1,\"device_path\":\"/dev/ng0n1\",\"capacity_bytes\":" + f.capacity
                    + ",\"block_align\":4096,\"header_bytes\":4096,\"slot_bytes\":65536,\"meta_total_bytes\":1048576,"
                    + "\"meta_magic\":\"LMCIDX01\",\"meta_version\":1,\"data_base_offset\":1048576,\"next_slot\":2,"
                    + "\"entries\":{\"" + key + "\":{\"offset\":" + slot1 + ",\"size\":1024,\"shape\":[2,32,256,8],"
                    + "\"dtype\":\"bfloat16\",\"fmt\":\"KV_2LTD\",\"cached_positions\":null}}}";
            byte[] payload = json.getBytes(StandardCharsets.UTF_8);
            CRC32 crc = new CRC32();
            crc.update(payload);
            // seq 1 -> container 0: payload after the header block, then the header
            patch(f.device, 4096, payload.length, s -> MemorySegment.copy(MemorySegment.ofArray(payload), 0, s, 0, payload.length));
            patch(f.device, 0, 32, s -> {
                MemorySegment.copy(bytes("LMCIDX01"), 0, s, 0, 8);
                s.set(U32, 8, 1);
                s.set(U64, 12, 1L);
                s.set(U64, 20, payload.length);
                s.set(U32, 28, (int) crc.getValue());
            });
            // LMCache's slot header has no CRC tail: magic, BLAKE2b-64 identity, length
            patch(f.device, slot1, 24, s -> {
                MemorySegment.copy(bytes("LMCBLK01"), 0, s, 0, 8);
                s.set(U64, 8, SlotIdentity.of(key));
                s.set(U64, 16, 1024L);
            });
            MemorySegment data = f.payload(key, 1024);
            patch(f.device, slot1 + 4096, 1024, s -> s.copyFrom(data));

            RawBlockCore core = f.open();
            assertThat(core.status()).containsEntry("recovered_keys", 1).containsEntry("verify_dropped_keys", 0)
                    .containsEntry("checkpoint_seq", 1L);
            MemorySegment dest = f.buffer(4096);
            assertThat(core.load(List.of(new LoadRequest(key, dest)))).containsExactly(true);
            assertThat(dest.asSlice(0, 1024).mismatch(data)).isEqualTo(-1);
            // slot 0 (below next_slot, unused) is free, slot 1 is taken: the next put goes to slot 0
            f.device.clearSubmissions();
            core.put(List.of(PutRequest.of(CoreFixture.key(9), f.payload(CoreFixture.key(9), 10))));
            assertThat(f.device.submissions().get(0).offsets().get(0)).isEqualTo(CoreFixture.META);
            // and our checkpoint goes to container 1 as seq 2, which a reopen prefers
            core.close();
            RawBlockCore again = f.open();
            assertThat(again.status()).containsEntry("checkpoint_seq", 2L).containsEntry("recovered_keys", 2);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void ourCheckpointIsTheLmcacheFormat(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            RawBlockCore core = f.open();
            String key = CoreFixture.key(1);
            core.put(List.of(PutRequest.of(key, f.payload(key, 100))
                    .withMeta(new ObjectMeta(List.of(4), "uint8", "BINARY", null))));
            core.close();
            // seq 1 (container 0) is the empty checkpoint the new store committed at open; close wrote seq 2
            assertThat(containerJson(f, 0, 1)).endsWith("\"next_slot\":0,\"entries\":{}}");
            long container1 = (CoreFixture.META / 2) / 4096 * 4096;
            String json = containerJson(f, container1, 2);
            assertThat(json).startsWith("{\"version\":1,\"device_path\":")
                    .contains(",\"block_align\":4096,\"header_bytes\":4096,\"slot_bytes\":65536,\"meta_total_bytes\":1048576,"
                            + "\"meta_magic\":\"LMCIDX01\",\"meta_version\":1,\"data_base_offset\":1048576,\"next_slot\":1,")
                    .endsWith("\"entries\":{\"" + key + "\":{\"offset\":1048576,\"size\":100,\"shape\":[4],"
                            + "\"dtype\":\"uint8\",\"fmt\":\"BINARY\",\"cached_positions\":null}}}");
        }
    }

    /** The payload of the container at {@code offset} after checking its LMCache header: magic, version, seq, CRC-32. */
    private static String containerJson(CoreFixture f, long offset, long seq) throws Exception {
        byte[][] header = new byte[1][];
        patch(f.device, offset, 32, s -> header[0] = s.toArray(ValueLayout.JAVA_BYTE));
        MemorySegment h = MemorySegment.ofArray(header[0]);
        assertThat(new String(header[0], 0, 8, StandardCharsets.US_ASCII)).isEqualTo("LMCIDX01");
        assertThat(h.get(U32, 8)).isEqualTo(1);
        assertThat(h.get(U64, 12)).isEqualTo(seq);
        int len = (int) h.get(U64, 20);
        byte[][] payload = new byte[1][];
        patch(f.device, offset + 4096, len, s -> payload[0] = s.toArray(ValueLayout.JAVA_BYTE));
        CRC32 crc = new CRC32();
        crc.update(payload[0]);
        assertThat(h.get(U32, 28)).isEqualTo((int) crc.getValue());
        return new String(payload[0], StandardCharsets.UTF_8);
    }


    private List<String> storeThree(CoreFixture f) throws Exception {
        RawBlockCore core = f.open();
        List<String> keys = new ArrayList<>();
        List<PutRequest> reqs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            keys.add(CoreFixture.key(i));
            reqs.add(PutRequest.of(CoreFixture.key(i), f.payload(CoreFixture.key(i), 5000)));
        }
        assertThat(core.put(reqs)).containsOnly(true);
        core.close();
        return keys; // key i is in slot i
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void corruptedPayloadLengthOrIdentityInASlotHeaderDropsTheKeyOnOpen(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            List<String> keys = storeThree(f);
            patch(f.device, CoreFixture.META + 16, 8, s -> s.set(U64, 0, 4999L)); // key 0: length
            patch(f.device, CoreFixture.META + CoreFixture.SLOT + 8, 1,
                    s -> s.set(ValueLayout.JAVA_BYTE, 0, (byte) (s.get(ValueLayout.JAVA_BYTE, 0) ^ 1))); // key 1: identity
            RawBlockCore core = f.open();
            assertThat(core.exists(keys, false)).containsExactly(false, false, true);
            assertThat(core.status()).containsEntry("verify_dropped_keys", 2).containsEntry("dirty", true);
            assertThat(core.freeSlots()).isEqualTo(core.maxSlots() - 1);
            core.close(); // persists the cleanup
            RawBlockCore again = f.open();
            assertThat(again.status()).containsEntry("recovered_keys", 1).containsEntry("verify_dropped_keys", 0);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void corruptedPayloadBytesLoadAsAMiss(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            List<String> keys = storeThree(f);
            patch(f.device, CoreFixture.META + 2 * CoreFixture.SLOT + 4096 + 1234, 1,
                    s -> s.set(ValueLayout.JAVA_BYTE, 0, (byte) (s.get(ValueLayout.JAVA_BYTE, 0) + 1)));
            RawBlockCore core = f.open();
            assertThat(core.exists(keys, false)).containsOnly(true);
            List<LoadRequest> loads = new ArrayList<>();
            for (String k : keys) {
                loads.add(new LoadRequest(k, f.buffer(8192)));
            }
            assertThat(core.load(loads)).containsExactly(true, true, false);
            assertThat(core.status()).containsEntry("crc_mismatches", 1L);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aFlippedCrcByteInTheNewestContainerLetsTheOlderOneWin(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            RawBlockCore core = f.open(); // seq 1 in container 0: the new store's empty checkpoint
            core.put(List.of(PutRequest.of(CoreFixture.key(1), f.payload(CoreFixture.key(1), 100))));
            core.checkpointNow(); // seq 2 in container 1: key 1
            core.put(List.of(PutRequest.of(CoreFixture.key(2), f.payload(CoreFixture.key(2), 100))));
            core.close(); // seq 3 in container 0: keys 1, 2
            patch(f.device, 28, 1,
                    s -> s.set(ValueLayout.JAVA_BYTE, 0, (byte) (s.get(ValueLayout.JAVA_BYTE, 0) ^ 0x40)));
            RawBlockCore again = f.open();
            assertThat(again.status()).containsEntry("checkpoint_seq", 2L);
            assertThat(again.exists(List.of(CoreFixture.key(1), CoreFixture.key(2)), false)).containsExactly(true, false);
            assertThat((String) again.status().get("recovery")).contains("fell back")
                    .contains("container 0 (seq 3): payload fails its CRC-32");
            assertThat(again.status()).containsEntry("recovery_fell_back", true);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY"})
    void aCheckpointThatDoesNotFitIsAnErrorNeverSkippedSilently(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 200, V1)) {
            // 4 blocks of meta area: two containers of 2 blocks, 4096 bytes of payload each
            RawBlockCore core = f.open(f.config().metaTotalBytes(4 * 4096).capacityBytes(4 * 4096 + 200 * CoreFixture.SLOT)
                    .build());
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                reqs.add(PutRequest.of(CoreFixture.key(i), f.payload(CoreFixture.key(i), 10)));
            }
            core.put(reqs);
            assertThatThrownBy(core::checkpointNow).hasMessageContaining("NOT written").hasMessageContaining("meta_total_bytes");
            assertThat(core.status()).containsEntry("is_healthy", false).containsEntry("dirty", true)
                    .containsEntry("checkpoint_failures", 1L);
            assertThat((String) core.status().get("last_checkpoint_error")).contains("raise meta_total_bytes");
            // the final checkpoint fails too: close says so instead of losing the changes silently
            assertThatThrownBy(core::close).isInstanceOf(IOException.class)
                    .hasMessageContaining("final checkpoint could not be written").hasMessageContaining("not durable");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void checkpointsCarryTheMetaPlacementId(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            f.device.emulatePlacement(List.of(0, 2, 7), 0);
            RawBlockCore core = f.open(f.config().fdpEnabled(true).metaCheckpointPlacementId(7).build());
            core.put(List.of(PutRequest.of(CoreFixture.key(1), f.payload(CoreFixture.key(1), 100)).withPlacement(2)));
            f.device.clearSubmissions();
            core.checkpointNow();
            assertThat(f.device.submissions()).filteredOn(s -> s.writes() > 0)
                    .extracting(s -> s.placementIds()).containsExactly(List.of(7), List.of(7));
        }
    }
}
