package io.fdpblock.adapter;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.linux.EventFd;
import io.fdpblock.l2.L2AdapterContractTest;
import io.fdpblock.l2.L2Adapters;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.fdpblock.l2.L2AdapterContractTest.awaitStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Where the raw-block adapter answers as LMCache's raw_block adapter does (docs/contract.md sections 2
 * and 6): what a configuration that cannot work is refused as, the bytes a store task reports, and the
 * shape of the status map.
 */
@Tag("host")
class LmcacheRawBlockParityTest {
    private static final long SLOT = 64 << 10;

    @TempDir
    Path dir;
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void tearDown() {
        arena.close();
    }

    private static ObjectKey key(int i) {
        return ObjectKey.of("org/model", 0, new byte[] {(byte) i});
    }

    private MemoryObj payload(int size, byte fill) {
        MemorySegment s = arena.allocate(size, 4096);
        s.fill(fill);
        return MemoryObj.of(s);
    }

    /** A file of 8 MiB with a known first block, as LMCache's test makes one. */
    private Path regularFile(String name) throws IOException {
        Path file = dir.resolve(name);
        byte[] first = new byte[4096];
        first[0] = 42;
        Files.write(file, first);
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(8 << 20);
        }
        return file;
    }

    private RawBlockCoreConfig fileConfig(int slots) {
        return RawBlockCoreConfig.builder(dir.resolve("store.img").toString(), SLOT)
                .capacityBytes(RawBlockCoreConfig.v2MetaBytesFor(4096, slots) + slots * SLOT)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build();
    }

    @Test
    void aStoreTaskReportsTheSlotOfEachNewlyStoredKey() throws Exception {
        try (RawBlockL2Adapter a = RawBlockL2Adapter.open(fileConfig(4))) {
            List<ObjectKey> two = List.of(key(1), key(2));
            assertThat(awaitStore(a, a.submitStoreTask(two, List.of(payload(4096, (byte) 1), payload(4096, (byte) 2)))))
                    .as("two 4 KiB payloads in 64 KiB slots").isEqualTo(new L2StoreResult(true, 2 * SLOT));
            List<ObjectKey> again = List.of(key(1), key(2), key(3));
            assertThat(awaitStore(a, a.submitStoreTask(again, List.of(payload(4096, (byte) 1), payload(4096, (byte) 2),
                    payload(100, (byte) 3))))).as("keys already held count nothing").isEqualTo(new L2StoreResult(true, SLOT));
            @SuppressWarnings("unchecked")
            Map<String, Object> store = (Map<String, Object>) a.reportStatus().get("store");
            assertThat(store).containsEntry("bytes", 3 * SLOT);
        }
    }

    @Test
    void statusHasLmcachesShapeWithTheSlotSpaceAsUsableCapacityBesideOurFlatKeys() throws Exception {
        try (RawBlockL2Adapter a = RawBlockL2Adapter.open(fileConfig(1))) {
            a.submitStoreTask(List.of(key(1)), List.of(payload(4096, (byte) 1)));
            assertThat(EventFd.await(a.storeEventFd(), L2AdapterContractTest.WAIT)).isTrue(); // recorded, not popped
            Map<String, Object> s = a.reportStatus();
            assertThat(s).containsEntry("type", "RawBlockL2Adapter").containsEntry("is_healthy", true)
                    .containsEntry("store_inflight_task_count", 0L).containsEntry("lookup_inflight_task_count", 0L)
                    .containsEntry("load_inflight_task_count", 0L).containsEntry("completed_store_task_count", 1)
                    .containsEntry("completed_lookup_task_count", 0).containsEntry("completed_load_task_count", 0);
            // our flat keys stay: the configured capacity (metadata area included) and the slots
            assertThat(s).containsEntry("capacity_bytes", RawBlockCoreConfig.v2MetaBytesFor(4096, 1) + SLOT)
                    .containsEntry("max_slots", 1).containsEntry("keys", 1).containsEntry("pending_store_results", 1)
                    .containsKeys("store", "lookup", "load", "recovery", "fdp_enabled");
            @SuppressWarnings("unchecked")
            Map<String, Object> core = (Map<String, Object>) s.get("core");
            assertThat(core.keySet()).containsExactly("is_healthy", "type", "key_namespace", "device_path",
                    "block_align", "header_bytes", "slot_bytes", "meta_total_bytes", "usable_capacity_bytes",
                    "indexed_key_count", "inflight_key_count", "locked_key_count", "free_slot_count", "next_slot",
                    "max_slots", "metadata_seq", "use_odirect", "enable_zero_copy", "io_engine",
                    "iouring_queue_depth", "use_uring_cmd");
            assertThat(core).containsEntry("usable_capacity_bytes", SLOT).containsEntry("type", "RawBlockCore")
                    .containsEntry("key_namespace", "object").containsEntry("device_path", dir.resolve("store.img")
                            .toString())
                    .containsEntry("block_align", 4096).containsEntry("header_bytes", 4096)
                    .containsEntry("slot_bytes", SLOT).containsEntry("meta_total_bytes",
                            RawBlockCoreConfig.v2MetaBytesFor(4096, 1))
                    .containsEntry("indexed_key_count", 1).containsEntry("inflight_key_count", 0)
                    .containsEntry("locked_key_count", 0).containsEntry("free_slot_count", 0L)
                    .containsEntry("next_slot", 1).containsEntry("max_slots", 1)
                    .containsEntry("use_odirect", true).containsEntry("io_engine", "io_uring")
                    .containsEntry("iouring_queue_depth", 256).containsEntry("use_uring_cmd", false)
                    .containsEntry("is_healthy", true);

            a.delete(List.of(key(1)));
            @SuppressWarnings("unchecked")
            Map<String, Object> after = (Map<String, Object>) a.reportStatus().get("core");
            assertThat(after).as("the freed slot is on the free list").containsEntry("free_slot_count", 1L)
                    .containsEntry("indexed_key_count", 0);
        }
    }

    @Test
    void uringCmdOnARegularFileIsAValueErrorBeforeAnythingIsOpened() throws Exception {
        Path file = regularFile("dev.bin");
        byte[] before = Files.readAllBytes(file);
        RawBlockCoreConfig config = RawBlockCoreConfig.builder(file.toString(), SLOT).ioEngine(IoEngine.URING_CMD)
                .metaEnablePeriodic(false).build();
        assertThatThrownBy(() -> RawBlockL2Adapter.open(config)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("raw_block config: io_engine uring_cmd, device_path " + file + " is a regular file: NVMe"
                        + " passthru needs an NVMe namespace character device (/dev/ngXnY); use the io_uring or posix"
                        + " engine for files");
        assertThat(Files.readAllBytes(file)).as("nothing was written").isEqualTo(before);

        String json = "{\"type\":\"raw_block\",\"device_path\":\"" + file + "\",\"slot_bytes\":65536,"
                + "\"io_engine\":\"io_uring\",\"use_uring_cmd\":true}";
        assertThatThrownBy(() -> L2Adapters.create(json)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("NVMe namespace character device");

        Path other = regularFile("dev2.bin");
        assertThatThrownBy(() -> RawBlockL2Adapter.open(RawBlockCoreConfig.builder(List.of(file.toString(),
                other.toString()), SLOT).ioEngine(IoEngine.URING_CMD).build()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("io_engine uring_cmd, device_paths " + file + " is a regular file");
    }

    @Test
    void uringCmdOnACharacterDeviceNotNamedNgIsAValueErrorAndAMissingOneIsNeverCreated() {
        Path devNull = Path.of("/dev/null");
        if (Files.exists(devNull)) {
            assertThatThrownBy(() -> RawBlockL2Adapter.open(RawBlockCoreConfig.builder(devNull.toString(), SLOT)
                    .ioEngine(IoEngine.URING_CMD).build())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("/dev/null is a character device but not named ngXnY");
        }
        Path missing = dir.resolve("ng9n9");
        assertThatThrownBy(() -> RawBlockL2Adapter.open(RawBlockCoreConfig.builder(missing.toString(), SLOT)
                .capacityBytes(8 << 20).ioEngine(IoEngine.URING_CMD).build())).isInstanceOf(IOException.class)
                .hasMessageContaining("does not exist").hasMessageContaining("never creates one");
        assertThat(missing).as("no file is made for a namespace").doesNotExist();
    }
}
