package io.fdpblock.core;

import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.fdpblock.l2.KeyCodec;
import io.fdpblock.l2.L2Adapters;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.linux.IoMemory;
import io.fdpblock.testing.LogCapture;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import io.fdpblock.l2.L2Adapter;
import java.nio.ByteBuffer;
import java.nio.file.StandardOpenOption;

/**
 * What the store does where it used to do something silently: a refused open that had created its
 * device file, a put with one cache salt too many, a placement id on a store without FDP, a config
 * with text after its object, a load into a buffer the I/O thread cannot write.
 */
@Tag("host")
class NothingSilentTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private RawBlockCoreConfig.Builder config(Path file) {
        return RawBlockCoreConfig.builder(file.toString(), 64 << 10).capacityBytes(32L << 20).metaTotalBytes(2L << 20)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
    }

    @Test
    void aRefusedOpenRemovesTheDeviceFileItCreatedButNeverOneItFound() throws Exception {
        Path made = dir.resolve("new.img");
        // a file cannot carry placement ids: refused after the file was created
        assertThatThrownBy(() -> RawBlockCore.open(config(made).fdpEnabled(true).build()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fdp_enabled = true");
        assertThat(made).as("the file this open created, fallocated to capacity_bytes").doesNotExist();

        Path found = BlockDevices.createFile(dir.resolve("found.img"), 32L << 20);
        Files.write(found, new byte[] {42}, StandardOpenOption.WRITE);
        assertThatThrownBy(() -> RawBlockCore.open(config(found).fdpEnabled(true).build()))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(found).as("a file the open found").exists().hasSize(32L << 20);
        assertThat(Files.readAllBytes(found)[0]).isEqualTo((byte) 42);
    }

    private static String key(int n, String salt) {
        return KeyCodec.encode("silent/model", 0, ByteBuffer.allocate(8).putLong(n).array(), salt, 0);
    }

    @Test
    void aPutWhoseSaltWouldBeOneTooManyIsRefusedAndNoKeyIsEverCountedUnderAnotherSalt() throws Exception {
        Path file = dir.resolve("salts.img");
        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder(file.toString(), 8192).capacityBytes(96L << 20)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build();
        int named = SaltTable.MAX_IDS - 1; // id 0 is no salt
        try (RawBlockCore core = RawBlockCore.open(cfg); Arena arena = Arena.ofShared();
                LogCapture log = new LogCapture("io.fdpblock.core")) {
            MemorySegment payload = IoMemory.allocate(arena, 4096);
            List<PutRequest> puts = new ArrayList<>();
            for (int i = 0; i < named; i++) {
                puts.add(PutRequest.of(key(i, "tenant" + i), payload));
            }
            puts.add(PutRequest.of(key(named, ""), payload));
            assertThat(core.putWithOutcome(puts)).containsOnly(PutOutcome.STORED);

            PutOutcome[] more = core.putWithOutcome(List.of(PutRequest.of(key(named + 1, "one-too-many"), payload),
                    PutRequest.of(key(named + 2, "tenant7"), payload)));
            assertThat(more).containsExactly(PutOutcome.TOO_MANY_SALTS, PutOutcome.STORED);
            assertThat(log.messagesContaining("salt 'one-too-many'")).hasSize(1).allSatisfy(m -> assertThat(m)
                    .contains("1 keys not stored").contains(String.valueOf(SaltTable.MAX_IDS)).contains("use fewer"));
            assertThat(core.keysBySalt()).hasSize(named + 1).containsEntry("", 1L).containsEntry("tenant7", 2L)
                    .doesNotContainKey("one-too-many");
        }
        try (RawBlockCore again = RawBlockCore.open(cfg)) {
            Map<String, Long> bySalt = again.keysBySalt();
            assertThat(bySalt).as("after the reopen").hasSize(named + 1).containsEntry("", 1L)
                    .containsEntry("tenant7", 2L).containsEntry("tenant" + (named - 1), 1L);
        }
    }

    @Test
    void aPlacementIdOnAStoreWithoutFdpIsIgnoredWithOneWarning() throws Exception {
        try (RawBlockCore core = RawBlockCore.open(config(dir.resolve("nofdp.img")).build());
                Arena arena = Arena.ofShared(); LogCapture log = new LogCapture("io.fdpblock.core")) {
            MemorySegment payload = IoMemory.allocate(arena, 4096);
            assertThat(core.put(List.of(PutRequest.of(key(1, ""), payload).withPlacement(0),
                    PutRequest.of(key(2, ""), payload).withPlacement(3)))).containsExactly(true, true);
            assertThat(core.put(List.of(PutRequest.of(key(3, ""), payload).withPlacement(0)))).containsExactly(true);
            assertThat(log.messagesContaining("is ignored")).as("said once").hasSize(1).allSatisfy(m -> assertThat(m)
                    .contains("placement id 0").contains("no FDP"));
        }
    }

    @Test
    void aConfigWithTextAfterItsObjectIsRefusedNamingThatText() {
        String json = "{\"device_path\":\"/var/tmp/x.img\",\"slot_bytes\":8192} {\"slot_bytes\":4096}";
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(json)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("text after the JSON value: '{\"slot_bytes\":4096}'");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"mock\"} trailing"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'trailing'");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_path\":\"/var/tmp/x.img\"}}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'}'");
    }

    @Test
    void aLoadIntoABufferTheIoThreadCannotWriteIsRefusedAtSubmit() throws Exception {
        String json = "{\"type\":\"raw_block\",\"device_path\":\"" + dir.resolve("load.img") + "\",\"capacity_bytes\":"
                + (32L << 20) + ",\"slot_bytes\":65536,\"meta_enable_periodic\":false}";
        try (L2Adapter a = L2Adapters.create(json); Arena shared = Arena.ofShared();
                Arena confined = Arena.ofConfined()) {
            ObjectKey k = ObjectKey.of("silent/model", 0, new byte[] {1});
            MemorySegment readOnly = IoMemory.allocate(shared, 65536).asReadOnly();
            MemorySegment mine = confined.allocate(65536, 4096);
            assertThatThrownBy(() -> a.submitLoadTask(List.of(k), List.of(MemoryObj.of(readOnly))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("load " + k.encoded())
                    .hasMessageContaining("is read-only").hasMessageContaining("writable from any thread");
            assertThatThrownBy(() -> a.submitLoadTask(List.of(k), List.of(MemoryObj.of(mine))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("confined to one thread");
            assertThat(a.reportStatus().get("pending_load_results")).as("no task was made").isEqualTo(0);
        }
    }
}
