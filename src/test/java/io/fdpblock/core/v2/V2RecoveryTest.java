package io.fdpblock.core.v2;

import io.fdpblock.core.CoreFixture;
import io.fdpblock.core.LoadRequest;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.StoreRefusedException;
import io.fdpblock.core.tools.Inspector;
import io.fdpblock.core.v2.LogReader;
import io.fdpblock.core.v2.V2Layout;
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
 * fdpblock_v2 recovery on damage: a newest snapshot that fails its CRC gives way to the older one and
 * the log after it; a torn chunk at the log's end is ignored with what follows; a superblock whose
 * layout differs from the configuration refuses the open naming the field, and nothing is written.
 */
@Tag("host")
class V2RecoveryTest {
    @TempDir
    Path dir;

    static V2Layout layout(BlockDevice device) throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment block = arena.allocate(4096, 4096);
            IoBatch b = new IoBatch(1);
            b.read(0, block);
            device.execute(b);
            return V2Layout.read(block);
        }
    }

    private static void flip(BlockDevice device, long offset) throws Exception {
        CoreFixture.patch(device, offset, 1, s -> s.set(ValueLayout.JAVA_BYTE, 0,
                (byte) (s.get(ValueLayout.JAVA_BYTE, 0) ^ 0x5a)));
    }

    private static void zeroBlock(BlockDevice device, long offset) throws Exception {
        CoreFixture.patch(device, offset, 4096, s -> s.fill((byte) 0));
    }

    private static void put(CoreFixture f, RawBlockCore core, String key) throws Exception {
        assertThat(core.put(List.of(PutRequest.of(key, f.payload(key, 3000))))).containsExactly(true);
    }

    private static void assertLoads(CoreFixture f, RawBlockCore core, String key) {
        MemorySegment dest = f.buffer(4096);
        assertThat(core.load(List.of(new LoadRequest(key, dest)))).as(key).containsExactly(true);
        assertThat(dest.asSlice(0, 3000).mismatch(f.payload(key, 3000))).isEqualTo(-1);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aDamagedNewestSnapshotFallsBackToTheOlderOneAndTheLogAfterIt(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCoreConfig cfg = f.config().metaSyncIntervalMs(0).build();
            RawBlockCore core = f.open(cfg);
            String k1 = CoreFixture.key(1);
            String k2 = CoreFixture.key(2);
            String k3 = CoreFixture.key(3);
            put(f, core, k1);
            core.checkpointNow(); // snapshot seq 1, area 0: k1
            put(f, core, k2);
            core.checkpointNow(); // snapshot seq 2, area 1: k1, k2
            put(f, core, k3); // in the log only
            core.close();
            V2Layout l = layout(f.device);
            flip(f.device, l.snapshotOffset(1) + l.blockAlign() + 4); // a byte of seq 2's body

            RawBlockCore again = f.open(cfg);
            assertThat(again.status()).containsEntry("recovery_fell_back", true).containsEntry("checkpoint_seq", 1L)
                    .containsEntry("keys", 3);
            assertThat((String) again.status().get("recovery")).contains("fell back: snapshot seq 2")
                    .contains("snapshot seq 2 in area 1 fails its CRC");
            for (String k : List.of(k1, k2, k3)) {
                assertLoads(f, again, k);
            }
            // the next snapshot goes over the damaged one, and the store is whole again
            again.checkpointNow();
            again.close();
            RawBlockCore third = f.open(cfg);
            assertThat(third.status()).containsEntry("recovery_fell_back", false).containsEntry("keys", 3);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void snapshotsThatAllFailTheirCrcAreRefusedAndNothingIsWritten(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open();
            put(f, core, CoreFixture.key(1));
            core.checkpointNow();
            put(f, core, CoreFixture.key(2));
            core.checkpointNow();
            core.close();
            V2Layout l = layout(f.device);
            flip(f.device, l.snapshotOffset(0) + l.blockAlign() + 4);
            flip(f.device, l.snapshotOffset(1) + l.blockAlign() + 4);
            byte[] before = image(f);
            assertThatThrownBy(f::open).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("every fdpblock_v2 snapshot is unreadable")
                    .hasMessageContaining("snapshot seq 2 in area 1 fails its CRC")
                    .hasMessageContaining("snapshot seq 1 in area 0 fails its CRC")
                    .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                            .isEqualTo(StoreRefusedException.Reason.UNREADABLE));
            assertThat(image(f)).isEqualTo(before);
            Inspector.V2Report r = Inspector.inspectV2(f.device, 4096, true);
            assertThat(r.keys()).isNull();
            assertThat(r.healthy()).isFalse();
            assertThat(r.snapshots()).extracting(Inspector.Snapshot::bodyCrcOk).containsExactly(false, false);
            assertThat(r.notes()).contains("every snapshot fails its CRC: recovery would refuse the store");
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aTornChunkAtTheEndOfTheLogIsIgnoredWithWhatFollows(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCoreConfig cfg = f.config().metaSyncIntervalMs(0).build();
            RawBlockCore core = f.open(cfg);
            String k1 = CoreFixture.key(1);
            String k2 = CoreFixture.key(2);
            put(f, core, k1); // durable before put returns: one chunk
            long second = ((Number) core.status().get("log_next_lsn")).longValue();
            put(f, core, k2); // the next chunk
            long closeMarker = ((Number) core.status().get("log_next_lsn")).longValue();
            assertThat(closeMarker).isGreaterThan(second);
            core.close();
            V2Layout l = layout(f.device);
            // as a crash during k2's commit leaves it: no close marker, k2's chunk torn
            zeroBlock(f.device, l.logOffset() + closeMarker);
            flip(f.device, l.logOffset() + second + LogFormat.CHUNK_HEADER + 3); // its body, as a torn write leaves it

            RawBlockCore again = f.open(cfg);
            assertThat(again.exists(List.of(k1, k2), false)).containsExactly(true, false);
            assertThat((String) again.status().get("recovery")).contains("1 log records up to LSN " + second)
                    .contains("torn chunk at LSN " + second + ": its body fails its CRC32C");
            assertLoads(f, again, k1);
            // the log goes on where the torn chunk was
            String k3 = CoreFixture.key(3);
            put(f, again, k3);
            again.close();
            RawBlockCore third = f.open(cfg);
            assertThat(third.exists(List.of(k1, k2, k3), false)).containsExactly(true, false, true);
            assertLoads(f, third, k3);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aSuperblockOfAnotherLayoutIsRefusedNamingTheFieldAndNothingIsWritten(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open();
            String key = CoreFixture.key(1);
            put(f, core, key);
            core.close();
            byte[] before = image(f);
            record Case(String field, String stored, RawBlockCoreConfig config) {}
            for (Case c : List.of(
                    new Case("slot_bytes", "" + CoreFixture.SLOT, f.config().slotBytes(2 * CoreFixture.SLOT).build()),
                    new Case("header_bytes", "4096", f.config().headerBytes(8192).build()),
                    new Case("capacity_bytes", "" + f.capacity, f.config().capacityBytes(f.capacity - CoreFixture.SLOT)
                            .build()),
                    new Case("meta_total_bytes", "" + f.meta, f.config().metaTotalBytes(f.meta + 4096).build()))) {
                assertThatThrownBy(() -> f.open(c.config())).isInstanceOf(StoreRefusedException.class)
                        .hasMessageContaining("fdpblock_v2 store was created with another layout")
                        .hasMessageContaining(c.field() + " is " + c.stored() + " on the device but")
                        .hasMessageContaining("Nothing was changed")
                        .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                                .isEqualTo(StoreRefusedException.Reason.LAYOUT_MISMATCH));
                assertThat(image(f)).as("the device after a refused open with another %s", c.field()).isEqualTo(before);
            }
            RawBlockCore same = f.open();
            assertLoads(f, same, key);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aDamagedSuperblockAOpensThroughCopyB(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open();
            String key = CoreFixture.key(1);
            put(f, core, key);
            core.close();
            flip(f.device, 40); // meta_total_bytes of copy A: its CRC fails
            RawBlockCore again = f.open();
            assertThat(again.status()).containsEntry("meta_format", "fdpblock_v2").containsEntry("keys", 1);
            assertLoads(f, again, key);
        }
    }

    /** The metadata area and the first slots. */
    private static byte[] image(CoreFixture f) throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(f.meta + 4 * CoreFixture.SLOT, 4096);
            IoBatch b = new IoBatch(1);
            b.read(0, buf);
            f.device.execute(b);
            return buf.toArray(ValueLayout.JAVA_BYTE);
        }
    }
}
