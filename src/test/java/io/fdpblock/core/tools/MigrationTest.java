package io.fdpblock.core.tools;

import io.fdpblock.core.CoreFixture;
import io.fdpblock.core.LoadRequest;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.StoreLayout;
import io.fdpblock.core.tools.Inspector;
import io.fdpblock.core.tools.Migration;
import io.fdpblock.core.tools.MigrationRefusedException;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;
import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import io.fdpblock.device.IoBatch;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@link Migration} on a real file through io_uring: a round trip lmcache_v1 -> fdpblock_v2 -> lmcache_v1
 * keeps every key's exact bytes in the slot it had, and every refusal leaves every byte of the device as
 * it was.
 */
@Tag("host")
class MigrationTest {
    static final RawBlockCoreConfig.MetaFormat V1 = RawBlockCoreConfig.MetaFormat.LMCACHE_V1;
    static final RawBlockCoreConfig.MetaFormat V2 = RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2;
    static final long SLOT = 64 << 10;
    static final long META = 1 << 20;
    static final int SLOTS = 16;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    static {
        Logger.getLogger("io.fdpblock.core").setLevel(Level.WARNING);
    }

    private Path file;

    private RawBlockCoreConfig.Builder config(RawBlockCoreConfig.MetaFormat format, long meta) {
        return RawBlockCoreConfig.builder(file.toString(), SLOT).capacityBytes(meta + SLOTS * SLOT).metaTotalBytes(meta)
                .metaFormat(format).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
    }

    static String key(int i, String salt) {
        return KeyCodec.encode("org/model", 3, new byte[] {7, (byte) i}, salt, 0);
    }

    /** The bytes of a key: from its name, so any copy can be checked. */
    static byte[] payload(String key, int size) {
        byte[] b = new byte[size];
        new SplittableRandom(key.hashCode()).nextBytes(b);
        return b;
    }

    static void put(RawBlockCore core, Map<String, byte[]> data, ObjectMeta meta) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            List<PutRequest> reqs = new ArrayList<>();
            for (Map.Entry<String, byte[]> e : data.entrySet()) {
                MemorySegment seg = arena.allocate(e.getValue().length, 4096);
                seg.copyFrom(MemorySegment.ofArray(e.getValue()));
                reqs.add(meta == null ? PutRequest.of(e.getKey(), seg) : PutRequest.of(e.getKey(), seg).withMeta(meta));
            }
            assertThat(core.put(reqs)).containsOnly(true);
        }
    }

    /** Exactly these keys, each loading exactly its bytes. */
    static void assertHolds(RawBlockCore core, Map<String, byte[]> expected) throws IOException {
        Map<String, Integer> sizes = new LinkedHashMap<>();
        expected.forEach((k, v) -> sizes.put(k, v.length));
        assertThat(core.keySizes()).as("the keys the store lists").containsExactlyInAnyOrderEntriesOf(sizes);
        assertThat(core.keyCount()).isEqualTo(expected.size());
        try (Arena arena = Arena.ofShared()) {
            for (Map.Entry<String, byte[]> e : expected.entrySet()) {
                MemorySegment dest = arena.allocate(SLOT, 4096);
                assertThat(core.load(List.of(new LoadRequest(e.getKey(), dest)))).as(e.getKey()).containsExactly(true);
                assertThat(dest.asSlice(0, e.getValue().length).mismatch(MemorySegment.ofArray(e.getValue())))
                        .as("bytes of %s", e.getKey()).isEqualTo(-1);
            }
        }
    }

    /** Makes a slot header look as LMCache writes it: magic, identity, length, then zeros (no key, no CRC). */
    static void asLmcacheWroteIt(Path file, long slotOffset) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(slotOffset + 24);
            f.write(new byte[4096 - 24]);
        }
    }

    private byte[] image() throws IOException {
        return Files.readAllBytes(file);
    }

    private static byte[] slice(byte[] b, long from, long len) {
        return Arrays.copyOfRange(b, (int) from, (int) (from + len));
    }

    @Test
    void aRoundTripV1ToV2ToV1KeepsEveryKeyAndItsBytesInItsSlot() throws Exception {
        file = dir.resolve("store.img");
        Map<String, byte[]> expected = new LinkedHashMap<>();
        ObjectMeta meta = new ObjectMeta(List.of(2, 16), "bfloat16", "KV_2LTD", null);
        try (RawBlockCore core = RawBlockCore.open(config(V1, META).build())) {
            Map<String, byte[]> plain = new LinkedHashMap<>();
            Map<String, byte[]> withMeta = new LinkedHashMap<>();
            for (int i = 0; i < 12; i++) {
                String k = key(i, i % 3 == 0 ? "" : "rag:t" + (i % 2));
                (i < 4 ? withMeta : plain).put(k, payload(k, 1 + (int) ((i * 7919L) % (SLOT - 4096))));
            }
            // seq 1 in container 0 is the new store's empty checkpoint
            put(core, withMeta, meta);
            core.checkpointNow(); // seq 2 in container 1
            put(core, plain, null);
            expected.putAll(withMeta);
            expected.putAll(plain);
            core.checkpointNow(); // seq 3 in container 0: every key
            String gone = key(5, "rag:t1");
            assertThat(core.delete(List.of(gone), false)).containsExactly(true);
            expected.remove(gone);
        } // seq 4 in container 1: the newest
        long dataBase = META;
        // three slots as LMCache wrote them: no key and no CRC32C in their header
        List<Long> lmcacheSlots = List.of(dataBase, dataBase + 2 * SLOT, dataBase + 7 * SLOT);
        for (long off : lmcacheSlots) {
            asLmcacheWroteIt(file, off);
        }
        byte[] before = image();

        Migration.Result toV2 = Migration.migrate(file, Migration.Options.to(V2));
        assertThat(toV2.from()).isEqualTo(V1);
        assertThat(toV2.to()).isEqualTo(V2);
        assertThat(toV2.keys()).isEqualTo(expected.size());
        assertThat(toV2.payloadBytes()).isEqualTo(expected.values().stream().mapToLong(b -> b.length).sum());
        assertThat(toV2.metaTotalBytes()).isEqualTo(META);
        assertThat(toV2.slotHeadersCompleted()).isEqualTo(3);
        assertThat(toV2.objectMetaDropped()).isEqualTo(4);
        assertThat(toV2.steps()).anyMatch(s -> s.contains("committed"));
        assertThat(toV2.oldMetadata()).contains("lmcache_v1 checkpoint seq 4 in container 1");
        assertThat(toV2.steps()).noneMatch(s -> s.contains("into lmcache_v1 container 1")); // it held them already

        byte[] afterV2 = image();
        // the data area is untouched but for the completed headers, whose first 24 bytes (LMCache's) are as they were
        for (int s = 0; s < SLOTS; s++) {
            long off = dataBase + s * SLOT;
            if (lmcacheSlots.contains(off)) {
                assertThat(slice(afterV2, off, 24)).isEqualTo(slice(before, off, 24));
                assertThat(slice(afterV2, off + 4096, SLOT - 4096)).isEqualTo(slice(before, off + 4096, SLOT - 4096));
            } else {
                assertThat(slice(afterV2, off, SLOT)).as("slot %d", s).isEqualTo(slice(before, off, SLOT));
            }
        }
        assertThat(new String(afterV2, 0, 8, StandardCharsets.US_ASCII)).isEqualTo("FDPBSB02");

        try (BlockDevice ro = BlockDevices.openReadOnly(file)) {
            Inspector.V2Report r = Inspector.inspectV2(ro, 4096, true);
            assertThat(r).isNotNull();
            assertThat(r.keys()).isEqualTo(expected.size());
            assertThat(r.badSlots()).isEmpty();
            assertThat(r.snapshots().get(0).applied()).isTrue();
            assertThat(r.snapshots().get(0).entries()).isEqualTo(expected.size());
            assertThat(r.log().records()).isZero();
            assertThat(Inspector.inspect(ro, 4096, META, false).winner()).as("no v1 checkpoint left behind").isNull();
        }

        // in fdpblock_v2: every key, its bytes, listed from its slot header; then it changes: the log has records
        try (RawBlockCore core = RawBlockCore.open(config(V1, META).build())) {
            assertThat(core.status()).containsEntry("meta_format", "fdpblock_v2");
            assertHolds(core, expected);
            Map<String, byte[]> more = new LinkedHashMap<>();
            for (int i = 20; i < 22; i++) {
                String k = key(i, "rag:t9");
                more.put(k, payload(k, 5000 + i));
            }
            put(core, more, null);
            expected.putAll(more);
            String gone = key(1, "rag:t1");
            assertThat(core.delete(List.of(gone), false)).containsExactly(true);
            expected.remove(gone);
        }
        byte[] beforeBack = image();

        Migration.Result toV1 = Migration.migrate(file, Migration.Options.to(V1));
        assertThat(toV1.from()).isEqualTo(V2);
        assertThat(toV1.keys()).isEqualTo(expected.size());
        assertThat(toV1.oldMetadata()).contains("bytes of log after it");
        assertThat(toV1.oldMetadataBytes()).isPositive();
        byte[] afterV1 = image();
        assertThat(slice(afterV1, dataBase, SLOTS * SLOT)).as("the data area").isEqualTo(slice(beforeBack, dataBase,
                SLOTS * SLOT));

        try (BlockDevice ro = BlockDevices.openReadOnly(file)) {
            assertThat(Inspector.inspectV2(ro, 4096, false)).isNull();
            Inspector.Report r = Inspector.inspect(ro, 4096, META, true);
            assertThat(r.containers()).allMatch(Inspector.Container::valid);
            assertThat(r.containers().get(0).seq()).isEqualTo(3);
            assertThat(r.containers().get(1).seq()).isEqualTo(2);
            assertThat(r.keys()).isEqualTo(expected.size());
            assertThat(r.badSlots()).isEmpty();
            assertThat(r.layout()).containsEntry("meta_total_bytes", META).containsEntry("data_base_offset", META);
        }
        try (RawBlockCore core = RawBlockCore.open(config(V2, META).build())) {
            assertThat(core.status()).containsEntry("meta_format", "lmcache_v1").containsEntry("checkpoint_seq", 3L);
            assertHolds(core, expected);
        }
    }

    // ---------------------------------------------------------------- refusals: nothing changes

    private Map<String, byte[]> storeSome(RawBlockCoreConfig config) throws IOException {
        Map<String, byte[]> data = new LinkedHashMap<>();
        for (int i = 0; i < 4; i++) {
            String k = key(i, "");
            data.put(k, payload(k, 3000 + i));
        }
        try (RawBlockCore core = RawBlockCore.open(config)) {
            put(core, data, null);
        }
        return data;
    }

    private void assertRefused(Migration.Options options, MigrationRefusedException.Reason reason,
            Consumer<String> message) throws IOException {
        byte[] before = image();
        assertThatThrownBy(() -> Migration.migrate(file, options)).isInstanceOf(MigrationRefusedException.class)
                .satisfies(e -> assertThat(((MigrationRefusedException) e).reason()).isEqualTo(reason))
                .satisfies(e -> message.accept(e.getMessage()));
        assertThat(image()).as("every byte of the device after a refused migration").isEqualTo(before);
    }

    @Test
    void aDeviceAStoreHasOpenIsRefused() throws Exception {
        file = dir.resolve("busy.img");
        storeSome(config(V1, META).build());
        try (RawBlockCore core = RawBlockCore.open(config(V1, META).build())) {
            assertRefused(Migration.Options.to(V2), MigrationRefusedException.Reason.IN_USE,
                    m -> assertThat(m).contains(file.toString()).contains("is in use").contains("Nothing was changed"));
            assertThat(core.keyCount()).isEqualTo(4);
        }
    }

    @Test
    void theFormatTheDeviceAlreadyHasIsRefused() throws Exception {
        file = dir.resolve("same.img");
        storeSome(config(V1, META).build());
        assertRefused(Migration.Options.to(V1), MigrationRefusedException.Reason.SAME_FORMAT,
                m -> assertThat(m).contains("already holds an lmcache_v1 store").contains("--to fdpblock_v2"));
        Files.delete(file);
        storeSome(config(V2, RawBlockCoreConfig.v2MetaBytesFor(4096, SLOTS)).build());
        assertRefused(Migration.Options.to(V2), MigrationRefusedException.Reason.SAME_FORMAT,
                m -> assertThat(m).contains("already holds an fdpblock_v2 store"));
    }

    @Test
    void damagedOrMissingStoresAreRefused() throws Exception {
        file = dir.resolve("damaged.img");
        Map<String, byte[]> data = storeSome(config(V1, META).build());
        // a slot header naming another key: the checkpoint points at bytes that are not the key's
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(META + SLOT + 8);
            int b = f.read();
            f.seek(META + SLOT + 8);
            f.write(b ^ 1);
        }
        String second = new ArrayList<>(data.keySet()).get(1);
        assertRefused(Migration.Options.to(V2), MigrationRefusedException.Reason.DAMAGED,
                m -> assertThat(m).contains("1 of 4 entries disagree with their slot header").contains(second)
                        .contains("identity differs").contains("Nothing was changed"));

        // both checkpoints' payloads (the new store's empty seq 1 and seq 2 with the keys) fail their CRC
        Files.delete(file);
        storeSome(config(V1, META).build());
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            for (long container : new long[] {0, META / 2 / 4096 * 4096}) {
                f.seek(container + 4096 + 3);
                f.write('#');
            }
        }
        assertRefused(Migration.Options.to(V2), MigrationRefusedException.Reason.NEEDS_OPTION,
                m -> assertThat(m).contains("container 0 is unreadable (payload fails its CRC-32)")
                        .contains("--meta-total-bytes"));
        assertRefused(Migration.Options.to(V2).withLayout(new StoreLayout.Given(null, null, null, META, null)),
                MigrationRefusedException.Reason.UNREADABLE,
                m -> assertThat(m).contains("no readable lmcache_v1 checkpoint").contains("payload fails its CRC-32"));

        // both fdpblock_v2 superblocks damaged
        Files.delete(file);
        storeSome(config(V2, RawBlockCoreConfig.v2MetaBytesFor(4096, SLOTS)).build());
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            for (long off : new long[] {40, 4096 + 40}) {
                f.seek(off);
                f.write(0x55);
            }
        }
        assertRefused(Migration.Options.to(V1), MigrationRefusedException.Reason.UNREADABLE,
                m -> assertThat(m).contains("both fdpblock_v2 superblocks are damaged"));

        // nothing at all
        Files.delete(file);
        BlockDevices.createFile(file, META + SLOTS * SLOT);
        assertRefused(Migration.Options.to(V2), MigrationRefusedException.Reason.NO_STORE,
                m -> assertThat(m).contains("holds no store"));
    }

    @Test
    void optionsThatDifferFromTheStoresLayoutAreRefusedNamingTheField() throws Exception {
        file = dir.resolve("layout.img");
        storeSome(config(V1, META).build());
        assertRefused(Migration.Options.to(V2).withLayout(new StoreLayout.Given(null, null, 2 * SLOT, null, null)),
                MigrationRefusedException.Reason.LAYOUT_MISMATCH,
                m -> assertThat(m).contains("slot_bytes is " + SLOT + " on the device but " + 2 * SLOT));
    }

    @Test
    void aV1StoreWhoseMetadataAreaCannotHoldFdpblockV2IsRefusedNamingBothSizes() throws Exception {
        file = dir.resolve("small.img");
        long slot = 8192;
        int slots = 400; // fdpblock_v2 needs more than 1 MiB of metadata for them; the data starts at 1 MiB
        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder(file.toString(), slot).capacityBytes(META + slots * slot)
                .metaTotalBytes(META).metaFormat(V1).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build();
        try (RawBlockCore core = RawBlockCore.open(cfg)) {
            String k = key(1, "");
            put(core, Map.of(k, payload(k, 100)), null);
        }
        long needed = V2Layout.requiredMetaBytes(4096, slots, 4096);
        assertThat(needed).isGreaterThan(META);
        assertRefused(Migration.Options.to(V2), MigrationRefusedException.Reason.TARGET_TOO_SMALL,
                m -> assertThat(m).contains("needs " + needed + " bytes").contains("the metadata area is " + META)
                        .contains("never moves"));
    }

    @Test
    void aV2StoreWhoseKeysDoNotFitAV1ContainerIsRefusedNamingBothSizes() throws Exception {
        // A superblock as another writer could make it: small snapshot areas and log, so that a container of
        // the metadata area holds less JSON than the keys take (fdpblock's own sizing leaves more room).
        int ba = 4096;
        long slot = 8192;
        long meta = 2L * ba + 2 * 16384 + 262144;
        int slots = 160;
        V2Layout l = new V2Layout(ba, 4096, slot, meta + slots * slot, meta, 16384, 2L * ba + 2 * 16384, 262144, slots,
                0x1234L);
        try (BlockDevice device = BlockDevices.memory(meta + slots * slot, 4096); Arena arena = Arena.ofShared()) {
            MemorySegment sb = arena.allocate(ba, 4096);
            l.write(sb);
            for (long off : new long[] {0, ba}) {
                CoreFixture.patch(device, off, ba, s -> s.copyFrom(sb));
            }
            RawBlockCoreConfig cfg = RawBlockCoreConfig.builder("memory", slot).capacityBytes(meta + slots * slot)
                    .metaTotalBytes(meta).ioEngine(IoEngine.MEMORY).metaEnablePeriodic(false).build();
            Map<String, byte[]> data = new LinkedHashMap<>();
            String model = "org/" + "m".repeat(900);
            for (int i = 0; i < 150; i++) {
                String k = KeyCodec.encode(model, 0, new byte[] {(byte) i, (byte) (i >> 8)}, "", 0);
                data.put(k, payload(k, 100));
            }
            try (RawBlockCore core = RawBlockCore.open(cfg, device)) {
                put(core, data, null);
            }
            byte[] before = image(device, meta + slots * slot);
            long room = meta / 2 / ba * ba - ba;
            assertThatThrownBy(() -> Migration.migrate(device, "memory", Migration.Options.to(V1)))
                    .isInstanceOf(MigrationRefusedException.class)
                    .satisfies(e -> assertThat(((MigrationRefusedException) e).reason())
                            .isEqualTo(MigrationRefusedException.Reason.TARGET_TOO_SMALL))
                    .hasMessageContaining("the checkpoint of its 150 keys takes")
                    .hasMessageContaining("holds " + room).hasMessageContaining("Nothing was changed");
            assertThat(image(device, meta + slots * slot)).isEqualTo(before);
            try (RawBlockCore core = RawBlockCore.open(cfg, device)) {
                assertHolds(core, data);
            }
        }
    }

    private static byte[] image(BlockDevice device, long size) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(size, 4096);
            IoBatch b = new IoBatch(1);
            b.read(0, buf);
            device.execute(b);
            return buf.toArray(ValueLayout.JAVA_BYTE);
        }
    }
}
