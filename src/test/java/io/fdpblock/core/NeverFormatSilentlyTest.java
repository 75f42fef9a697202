package io.fdpblock.core;

import io.fdpblock.core.v1.ContainerFormat;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import java.nio.charset.StandardCharsets;

/**
 * Open never formats by itself. A checkpoint of another layout, foreign bytes in the
 * metadata area, unreadable checkpoints, or a request to start empty over a store, refuse the open
 * with an error naming what differs, and leave every byte of the device as it was; only
 * {@code "format": true} discards.
 */
@Tag("host")
class NeverFormatSilentlyTest {
    private static final RawBlockCoreConfig.MetaFormat V1 = RawBlockCoreConfig.MetaFormat.LMCACHE_V1;
    private static final long CONTAINER_1 = CoreFixture.META / 2 / 4096 * 4096;

    @TempDir
    Path dir;

    /** Every byte of the metadata area and the first slots, to prove an open wrote nothing. */
    private static byte[] image(BlockDevice dev) throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(CoreFixture.META + 4 * CoreFixture.SLOT, 4096);
            IoBatch b = new IoBatch(1);
            b.read(0, buf);
            dev.execute(b);
            return buf.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static String storeOne(CoreFixture f) throws Exception {
        RawBlockCore core = f.open();
        String key = CoreFixture.key(1);
        core.put(List.of(PutRequest.of(key, f.payload(key, 100))));
        core.close();
        return key;
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aCheckpointOfAnotherLayoutIsRefusedNamingTheFieldAndBothValuesAndNothingIsWritten(IoEngine engine)
            throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            String key = storeOne(f);
            byte[] before = image(f.device);
            for (RawBlockCoreConfig other : List.of(f.config().headerBytes(8192).build(),
                    f.config().slotBytes(2 * CoreFixture.SLOT).build(),
                    f.config().capacityBytes(f.capacity - CoreFixture.SLOT).build())) {
                String field = other.headerBytes() != 4096 ? "header_bytes"
                        : other.slotBytes() != CoreFixture.SLOT ? "slot_bytes" : "capacity_bytes";
                assertThatThrownBy(() -> f.open(other)).isInstanceOf(StoreRefusedException.class)
                        .hasMessageContaining(field + " is ")
                        .hasMessageContaining("on the device but")
                        .hasMessageContaining("Nothing was changed")
                        .hasMessageContaining("\"format\": true")
                        .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                                .isEqualTo(StoreRefusedException.Reason.LAYOUT_MISMATCH));
                assertThat(image(f.device)).as("the device after a refused open of %s", field).isEqualTo(before);
            }
            RawBlockCore same = f.open();
            assertThat(same.exists(List.of(key), false)).containsExactly(true);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void foreignBytesInTheMetadataAreaAreRefusedUntilFormatIsAsked(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            // e.g. a file system's superblock 1 KiB into the device
            CoreFixture.patch(f.device, 0, 4096, s -> s.asSlice(1024, 4).fill((byte) 0x53));
            byte[] before = image(f.device);
            assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("holds data this store did not write")
                    .hasMessageContaining("offset 1024")
                    .hasMessageContaining("\"format\": true");
            assertThat(image(f.device)).isEqualTo(before);

            RawBlockCore formatted = f.open(f.config().format(true).build());
            assertThat(formatted.keyCount()).isZero();
            assertThat((String) formatted.status().get("recovery")).contains("formatted as asked");
            String key = CoreFixture.key(2);
            formatted.put(List.of(PutRequest.of(key, f.payload(key, 100))));
            formatted.close();
            assertThat(f.open().exists(List.of(key), false)).containsExactly(true);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void checkpointsThatAreAllUnreadableAreRefusedNotOpenedEmpty(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            storeOne(f);
            // break the payloads of both checkpoints (the new store's empty seq 1 and seq 2 with the key)
            for (long container : new long[] {0, CONTAINER_1}) {
                CoreFixture.patch(f.device, container + 4096, 4096, s -> s.set(ValueLayout.JAVA_BYTE, 5, (byte) '#'));
            }
            byte[] before = image(f.device);
            assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("cannot be read").hasMessageContaining("payload fails its CRC-32")
                    .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                            .isEqualTo(StoreRefusedException.Reason.UNREADABLE));
            assertThat(image(f.device)).isEqualTo(before);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void startingEmptyOverAStoreIsRefusedUnlessFormatIsAsked(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            String key = storeOne(f);
            byte[] before = image(f.device);
            assertThatThrownBy(() -> f.open(f.config().loadCheckpointOnInit(false).build()))
                    .isInstanceOf(StoreRefusedException.class).hasMessageContaining("would discard it");
            assertThat(image(f.device)).isEqualTo(before);
            assertThat(f.open().exists(List.of(key), false)).containsExactly(true);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aNewDeviceAndAFirstCheckpointCutOffBeforeItsHeaderOpenAsNewStores(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            RawBlockCore fresh = f.open();
            assertThat((String) fresh.status().get("recovery")).contains("new store");
            assertThat(fresh.status()).containsEntry("checkpoint_seq", 1L); // the empty first checkpoint
            fresh.close();
            // the empty first checkpoint's payload landed, its header did not: nothing was committed yet
            CoreFixture.patch(f.device, 0, 4096, s -> s.fill((byte) 0));
            RawBlockCore again = f.open();
            assertThat((String) again.status().get("recovery")).contains("cut off before its header");
            assertThat(again.keyCount()).isZero();
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aStoreWhoseContainerHeadersWereZeroedIsRefusedNotOpenedAsNew(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            String key = storeOne(f); // seq 1 (container 0, empty), seq 2 (container 1) with the key
            byte[] intact = image(f.device);
            for (long container : new long[] {0, CONTAINER_1}) {
                CoreFixture.patch(f.device, container, 4096, s -> s.fill((byte) 0));
            }
            byte[] before = image(f.device);
            assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("container 1's payload area holds checkpoint JSON without its header")
                    .hasMessageContaining("headers were overwritten or zeroed")
                    .hasMessageContaining("\"format\": true")
                    .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                            .isEqualTo(StoreRefusedException.Reason.UNREADABLE));
            assertThat(image(f.device)).isEqualTo(before);

            // the newest checkpoint in container 0 (seq 3), container 1's payload lost as well
            for (long container : new long[] {0, CONTAINER_1}) {
                CoreFixture.patch(f.device, container, 4096,
                        s -> s.copyFrom(MemorySegment.ofArray(intact).asSlice(container, 4096)));
            }
            RawBlockCore core = f.open();
            assertThat(core.exists(List.of(key), false)).containsExactly(true);
            String second = CoreFixture.key(2);
            core.put(List.of(PutRequest.of(second, f.payload(second, 100))));
            core.close();
            assertThat(f.open().status()).containsEntry("checkpoint_seq", 3L);
            CoreFixture.patch(f.device, 0, 4096, s -> s.fill((byte) 0));
            CoreFixture.patch(f.device, CONTAINER_1, 2 * 4096, s -> s.fill((byte) 0));
            assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("container 0's payload area holds a checkpoint of 2 keys without its header");
        }
    }

    /** Both formats on both engines. */
    static Stream<Arguments> formatsAndEngines() {
        return Stream.of(RawBlockCoreConfig.MetaFormat.values()).flatMap(format -> Stream.of(IoEngine.MEMORY,
                IoEngine.IO_URING).map(engine -> Arguments.of(format, engine)));
    }

    @ParameterizedTest
    @MethodSource("formatsAndEngines")
    void aStoreWhoseWholeMetadataAreaWasZeroedIsRefusedNotOpenedAsNew(RawBlockCoreConfig.MetaFormat format,
            IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 64, format)) {
            RawBlockCore core = f.open();
            String low = CoreFixture.key(1);
            core.put(List.of(PutRequest.of(low, f.payload(low, 100))));
            core.close();
            CoreFixture.patch(f.device, 0, (int) f.meta, s -> s.fill((byte) 0)); // every metadata byte
            byte[] before = image(f.device);
            assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("the metadata area is all zeros but the data area holds data")
                    .hasMessageContaining("offset " + f.meta)
                    .hasMessageContaining("\"format\": true")
                    .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                            .isEqualTo(StoreRefusedException.Reason.FOREIGN_DATA));
            assertThat(image(f.device)).isEqualTo(before);

            RawBlockCore formatted = f.open(f.config().format(true).build());
            assertThat(formatted.keyCount()).isZero();
            formatted.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aChunkInAnySampledSlotIsFoundNotJustTheFirst(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 64)) {
            f.open().close(); // a new store, then its metadata erased: all zeros again, like a new device
            CoreFixture.patch(f.device, 0, (int) f.meta, s -> s.fill((byte) 0));
            long lastSlot = f.meta + 63 * CoreFixture.SLOT; // sampled: up to 256 slots are, and 64 are all
            CoreFixture.patch(f.device, lastSlot, 4096, s -> s.set(ValueLayout.JAVA_BYTE, 17, (byte) 1));
            assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("offset " + (lastSlot + 17));
            CoreFixture.patch(f.device, lastSlot, 4096, s -> s.fill((byte) 0));
            assertThat((String) f.open().status().get("recovery")).contains("new");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void formatLeavesNoOldCheckpointBytesBehind(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8, V1)) {
            String key = storeOne(f);
            RawBlockCore formatted = f.open(f.config().format(true).build());
            assertThat(formatted.keyCount()).isZero();
            formatted.close();
            byte[] after = image(f.device);
            // all of the metadata area is zeros but for the new store's empty checkpoint (seq 1, container 0)
            // and container 1's reserved header, which commits nothing
            assertThat(ForeignData.firstIn(f.device, CONTAINER_1 + 4096, CoreFixture.META,
                    Arena.ofAuto().allocate(ForeignData.SCAN_CHUNK, 4096))).isNull();
            ContainerFormat.ContainerHeader reserved = ContainerFormat.readContainerHeader(MemorySegment.ofArray(after)
                    .asSlice(CONTAINER_1, 4096));
            assertThat(reserved.magicOk()).isFalse();
            assertThat(reserved.seal().reserved()).isTrue();
            String json = new String(after, 4096, 4096, StandardCharsets.US_ASCII);
            assertThat(json).doesNotContain(key).contains("\"entries\":{}");
            // and if its header goes, the device still opens as a new store, not as the old one or a refusal
            CoreFixture.patch(f.device, 0, 4096, s -> s.fill((byte) 0));
            RawBlockCore again = f.open();
            assertThat(again.keyCount()).isZero();
            assertThat((String) again.status().get("recovery")).contains("cut off before its header");
        }
    }
}
