package io.fdpblock.adapter;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.L2Adapter;
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
