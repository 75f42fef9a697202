package io.fdpblock.core;

import io.fdpblock.core.v1.ContainerFormat;
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
            CoreFixture.patch(f.device, 4096, payload.length, s -> MemorySegment.copy(MemorySegment.ofArray(payload), 0, s, 0, payload.length));
            CoreFixture.patch(f.device, 0, 32, s -> {
                MemorySegment.copy(bytes("LMCIDX01"), 0, s, 0, 8);
                s.set(U32, 8, 1);
                s.set(U64, 12, 1L);
                s.set(U64, 20, payload.length);
                s.set(U32, 28, (int) crc.getValue());
            });
            // LMCache's slot header has no CRC tail: magic, BLAKE2b-64 identity, length
            CoreFixture.patch(f.device, slot1, 24, s -> {
                MemorySegment.copy(bytes("LMCBLK01"), 0, s, 0, 8);
                s.set(U64, 8, SlotIdentity.of(key));
                s.set(U64, 16, 1024L);
            });
            MemorySegment data = f.payload(key, 1024);
            CoreFixture.patch(f.device, slot1 + 4096, 1024, s -> s.copyFrom(data));

            RawBlockCore core = f.open();
            assertThat(core.status()).containsEntry("recovered_keys", 1).containsEntry("verify_dropped_keys", 0)
                    .containsEntry("checkpoint_seq", 1L);
            MemorySegment dest = f.buffer(4096);
            assertThat(core.load(List.of(new LoadRequest(key, dest)))).containsExactly(true);
            assertThat(dest.asSlice(0, 1024).mismatch(data)).isEqualTo(-1);
            // slot 0 (below next_slot, unused) is free, slot 1 is taken: the next put goes to slot 0
            f.device.clearSubmissions();
            core.put(List.of(PutRequest.of(CoreFixture.key(9), f.payload(CoreFixture.key(9), 10))));
            assertThat(f.device.submissions().get(1).offsets().get(0)).as("its header, after its payload")
                    .isEqualTo(CoreFixture.META);
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
        CoreFixture.patch(f.device, offset, 32, s -> header[0] = s.toArray(ValueLayout.JAVA_BYTE));
        MemorySegment h = MemorySegment.ofArray(header[0]);
        assertThat(new String(header[0], 0, 8, StandardCharsets.US_ASCII)).isEqualTo("LMCIDX01");
        assertThat(h.get(U32, 8)).isEqualTo(1);
        assertThat(h.get(U64, 12)).isEqualTo(seq);
        int len = (int) h.get(U64, 20);
        byte[][] payload = new byte[1][];
        CoreFixture.patch(f.device, offset + 4096, len, s -> payload[0] = s.toArray(ValueLayout.JAVA_BYTE));
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
            CoreFixture.patch(f.device, CoreFixture.META + 16, 8, s -> s.set(U64, 0, 4999L)); // key 0: length
            CoreFixture.patch(f.device, CoreFixture.META + CoreFixture.SLOT + 8, 1,
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
            CoreFixture.patch(f.device, CoreFixture.META + 2 * CoreFixture.SLOT + 4096 + 1234, 1,
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

    private static final long CONTAINER_1 = CoreFixture.META / 2 / 4096 * 4096;

    /**
     * seq 1 (container 0, empty), seq 2 (container 1) with keys 1 and 2, seq 3 (container 0) with keys 1
     * to 4: the newest checkpoint holds keys the older one lacks.
     */
    private static List<String> threeCheckpoints(CoreFixture f) throws Exception {
        RawBlockCore core = f.open();
        List<String> keys = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            keys.add(CoreFixture.key(i));
            core.put(List.of(PutRequest.of(CoreFixture.key(i), f.payload(CoreFixture.key(i), 100 * i))));
            if (i == 2) {
                core.checkpointNow();
            }
        }
        core.close();
        return keys;
    }

    /** The metadata area and the first slots: to prove an open wrote nothing. */
    static byte[] image(BlockDevice dev, long bytes) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(bytes, 4096);
            IoBatch b = new IoBatch(1);
            b.read(0, buf);
            dev.execute(b);
            return buf.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static void flip(BlockDevice dev, long offset, int mask) throws IOException {
        CoreFixture.patch(dev, offset, 1, s -> s.set(ValueLayout.JAVA_BYTE, 0, (byte) (s.get(ValueLayout.JAVA_BYTE, 0) ^ mask)));
    }

    private static void assertLoads(CoreFixture f, RawBlockCore core, List<String> keys) throws IOException {
        assertThat(core.keySizes()).containsOnlyKeys(keys);
        for (String key : keys) {
            MemorySegment dest = f.buffer(4096);
            assertThat(core.load(List.of(new LoadRequest(key, dest)))).as(key).containsExactly(true);
            int size = core.keySizes().get(key).intValue();
            assertThat(dest.asSlice(0, size).mismatch(f.payload(key, size))).as(key).isEqualTo(-1);
        }
    }

    private static void assertRefusedUnchanged(CoreFixture f, String... says) throws IOException {
        byte[] before = image(f.device, CoreFixture.META + 8 * CoreFixture.SLOT);
        assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                        .isEqualTo(StoreRefusedException.Reason.DAMAGED))
                .hasMessageContaining("\"open_damaged\": true").hasMessageContaining("nothing was changed")
                .hasMessageContaining("restore").satisfies(e -> assertThat(e.getMessage()).contains(says));
        assertThat(image(f.device, CoreFixture.META + 8 * CoreFixture.SLOT)).isEqualTo(before);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aZeroedHeaderOfTheNewestCheckpointIsRefusedNotTakenForTheOlderOne(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            List<String> keys = threeCheckpoints(f);
            CoreFixture.patch(f.device, 0, 4096, s -> s.fill((byte) 0)); // seq 3's header
            assertRefusedUnchanged(f, "container 0 (header at offset 0): no header (its bytes are all zeros)",
                    "payload (offset 4096", "complete checkpoint seq 3, newer than container 1's seq 2");

            // opened as asked: its payload is complete, so every key is there, and the store says it was damaged
            RawBlockCore damaged = f.open(f.config().openDamaged(true).build());
            assertLoads(f, damaged, keys);
            assertThat(damaged.status()).containsEntry("is_healthy", false).containsEntry("metadata_lost_keys", 0L)
                    .containsEntry("checkpoint_seq", 3L).containsEntry("recovery_fell_back", false);
            assertThat((String) damaged.status().get("metadata_damage")).contains("container 0 (header at offset 0)")
                    .contains("opened with open_damaged from checkpoint seq 3");
            damaged.close(); // checkpoint seq 4 into container 1
            RawBlockCore again = f.open();
            assertLoads(f, again, keys);
            assertThat(again.status()).containsEntry("is_healthy", true).containsEntry("checkpoint_seq", 4L)
                    .containsEntry("recovery_fell_back", false);
            assertThat((String) again.status().get("recovery")).contains("nothing lost")
                    .contains("is the older checkpoint seq 3");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aFlippedByteInTheOlderCheckpointsSeqDoesNotMakeItTheNewest(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            List<String> keys = threeCheckpoints(f);
            flip(f.device, CONTAINER_1 + 12 + 7, 0x01); // seq 2 reads as 2^56 + 2, far above seq 3
            RawBlockCore core = f.open();
            assertLoads(f, core, keys);
            assertThat(core.status()).containsEntry("checkpoint_seq", 3L).containsEntry("is_healthy", true)
                    .containsEntry("recovery_fell_back", false);
            assertThat((String) core.status().get("recovery")).contains("container 1 (header at offset " + CONTAINER_1
                    + "): the header (seq 72057594037927938").contains("disagrees with its fdpblock seal (seq 2")
                    .contains("is the older checkpoint seq 2, so nothing is lost");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY"})
    void aFlippedByteInTheNewestSeqThatMakesItLookOlderIsRefused(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            threeCheckpoints(f);
            flip(f.device, 12, 0x02); // seq 3 reads as 1, older than container 1's seq 2
            assertRefusedUnchanged(f, "container 0 (header at offset 0): the header (seq 1", "seal (seq 3",
                    "complete checkpoint seq 3");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aDamagedPayloadOfTheNewestCheckpointIsRefusedAndOpenDamagedCountsTheKeysLost(IoEngine engine)
            throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            List<String> keys = threeCheckpoints(f);
            // a digit of a size in seq 3's JSON: it still parses, and fails its CRC-32
            byte[][] json = new byte[1][];
            CoreFixture.patch(f.device, 4096, 4096, s -> json[0] = s.toArray(ValueLayout.JAVA_BYTE));
            int at = new String(json[0], StandardCharsets.US_ASCII).indexOf("\"size\":100,") + 9;
            flip(f.device, 4096 + at, 0x01); // "100" -> "101"
            assertRefusedUnchanged(f, "container 0 (header at offset 0) commits checkpoint seq 3",
                    "its payload (offset 4096) fails that CRC-32");

            RawBlockCore damaged = f.open(f.config().openDamaged(true).build());
            assertLoads(f, damaged, keys.subList(0, 2)); // the older checkpoint's
            assertThat(damaged.status()).containsEntry("is_healthy", false).containsEntry("metadata_lost_keys", 2L)
                    .containsEntry("recovery_fell_back", true).containsEntry("checkpoint_seq", 2L);
            assertThat((String) damaged.status().get("metadata_damage")).contains("2 durable keys lost");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY"})
    void aNewerPayloadUnderTheOldHeaderOfItsContainerIsAnInterruptedCheckpointNotDamage(IoEngine engine)
            throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            List<String> keys = threeCheckpoints(f);
            byte[] seq2Header = image(f.device, CONTAINER_1 + 4096);
            RawBlockCore core = f.open();
            core.put(List.of(PutRequest.of(CoreFixture.key(5), f.payload(CoreFixture.key(5), 500))));
            core.close(); // seq 4 into container 1
            // what a crash after seq 4's payload and before its header leaves
            CoreFixture.patch(f.device, CONTAINER_1, 4096, s -> s.copyFrom(MemorySegment.ofArray(seq2Header)
                    .asSlice(CONTAINER_1, 4096)));
            RawBlockCore reopened = f.open();
            assertLoads(f, reopened, keys);
            assertThat(reopened.status()).containsEntry("checkpoint_seq", 3L).containsEntry("is_healthy", true)
                    .containsEntry("recovery_fell_back", false);
            assertThat((String) reopened.status().get("recovery"))
                    .contains("container 1 (seq 2, older): payload fails its CRC-32: it holds checkpoint seq 4 whose"
                            + " header was never written");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY"})
    void bothHeadersZeroedAreRefusedAndOpenDamagedOpensTheNewestCompletePayload(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            List<String> keys = threeCheckpoints(f);
            CoreFixture.patch(f.device, 0, 4096, s -> s.fill((byte) 0));
            CoreFixture.patch(f.device, CONTAINER_1, 4096, s -> s.fill((byte) 0));
            byte[] before = image(f.device, CoreFixture.META + 8 * CoreFixture.SLOT);
            assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                    .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                            .isEqualTo(StoreRefusedException.Reason.UNREADABLE))
                    .hasMessageContaining("container 0's payload (offset 4096) still holds the complete checkpoint seq 3")
                    .hasMessageContaining("\"open_damaged\": true opens it");
            assertThat(image(f.device, CoreFixture.META + 8 * CoreFixture.SLOT)).isEqualTo(before);
            RawBlockCore damaged = f.open(f.config().openDamaged(true).build());
            assertLoads(f, damaged, keys);
            assertThat(damaged.status()).containsEntry("is_healthy", false).containsEntry("checkpoint_seq", 3L)
                    .containsEntry("metadata_lost_keys", -1L);
            assertThat((String) damaged.status().get("metadata_damage")).contains("cannot be read");
        }
    }

    /** LMCache's container headers: bytes 32.. of the header block stay zero. */
    private static void asLmcacheWroteIt(CoreFixture f) throws IOException {
        for (long c : new long[] {0, CONTAINER_1}) {
            CoreFixture.patch(f.device, c + ContainerFormat.SEAL_OFFSET, ContainerFormat.SEAL_BYTES,
                    s -> s.fill((byte) 0));
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void onLmcachesHeadersAFlippedCrcByteInTheNewestFallsBackAndSaysSo(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            threeCheckpoints(f);
            asLmcacheWroteIt(f);
            flip(f.device, 28, 0x40);
            RawBlockCore again = f.open();
            assertThat(again.status()).containsEntry("checkpoint_seq", 2L).containsEntry("recovery_fell_back", true);
            assertThat(again.exists(List.of(CoreFixture.key(2), CoreFixture.key(3)), false)).containsExactly(true, false);
            assertThat((String) again.status().get("recovery")).contains("fell back")
                    .contains("container 0 (seq 3): payload fails its CRC-32");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY"})
    void onLmcachesHeadersAFlippedSeqThatMakesTheOlderLookNewestIsReported(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            threeCheckpoints(f); // seq 2 (next_slot 2) in container 1, seq 3 (next_slot 4) in container 0
            asLmcacheWroteIt(f);
            flip(f.device, CONTAINER_1 + 12 + 7, 0x01); // seq 2 reads as 2^56 + 2
            RawBlockCore again = f.open();
            // LMCache's rule (the highest seq) still decides, but not silently
            assertThat(again.status()).containsEntry("recovery_fell_back", true)
                    .containsEntry("checkpoint_seq", 72057594037927938L);
            assertThat((String) again.status().get("recovery")).contains("fell back")
                    .contains("container 0 (seq 3) has the higher next_slot (4 > 2)");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY"})
    void onLmcachesHeadersAZeroedNewestHeaderFallsBackAndSaysSo(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            threeCheckpoints(f);
            asLmcacheWroteIt(f);
            // and LMCache's payloads have no trailer either
            CoreFixture.patch(f.device, 4096, 4096, s -> {
                int end = 0;
                while (s.get(ValueLayout.JAVA_BYTE, end) != 0) {
                    end++;
                }
                s.asSlice(end).fill((byte) 0);
            });
            CoreFixture.patch(f.device, 0, 4096, s -> s.fill((byte) 0));
            RawBlockCore again = f.open();
            assertThat(again.status()).containsEntry("checkpoint_seq", 2L).containsEntry("recovery_fell_back", true);
            assertThat((String) again.status().get("recovery")).contains("fell back")
                    .contains("container 0 (header at offset 0): no header")
                    .contains("whether it was newer than seq 2 cannot be told");
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
