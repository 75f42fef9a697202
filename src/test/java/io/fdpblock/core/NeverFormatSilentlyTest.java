package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Issue 9.4: open never formats by itself. A checkpoint of another layout, foreign bytes in the
 * metadata area, unreadable checkpoints, or a request to start empty over a store, refuse the open
 * with an error naming what differs, and leave every byte of the device as it was; only
 * {@code "format": true} discards.
 */
@Tag("host")
class NeverFormatSilentlyTest {
    private static final RawBlockCoreConfig.MetaFormat V1 = RawBlockCoreConfig.MetaFormat.LMCACHE_V1;

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
            RecoveryTest.patch(f.device, 0, 4096, s -> s.asSlice(1024, 4).fill((byte) 0x53));
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
            // break the payload of the only checkpoint (container 0): its CRC-32 no longer matches
            RecoveryTest.patch(f.device, 4096, 4096, s -> s.set(ValueLayout.JAVA_BYTE, 5, (byte) '#'));
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
            fresh.close();
            // the first checkpoint's payload landed, its header did not: nothing was committed yet
            RecoveryTest.patch(f.device, 4096, 4096, s -> s.copyFrom(MemorySegment.ofArray(
                    "{\"version\":1,\"device_path\":\"x\"".getBytes(java.nio.charset.StandardCharsets.US_ASCII))));
            RecoveryTest.patch(f.device, 0, 4096, s -> s.fill((byte) 0));
            RawBlockCore again = f.open();
            assertThat((String) again.status().get("recovery")).contains("cut off before its header");
        }
    }
}
