package io.fdpblock.adapter;

import io.fdpblock.device.BlockDevices;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2Adapters;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static io.fdpblock.l2.L2AdapterContractTest.awaitLoad;
import static io.fdpblock.l2.L2AdapterContractTest.awaitStore;
import static org.assertj.core.api.Assertions.assertThat;

/** The raw_block adapter over device_paths works as over one device, across a reopen. */
@Tag("host")
class StripedAdapterTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void tearDown() {
        arena.close();
    }

    private MemoryObj data(ObjectKey k, int size) {
        MemorySegment s = arena.allocate(size, 4096);
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (k.hashCode() * 31 + i));
        }
        return MemoryObj.of(s).withMeta(List.of(size), "uint8", "BINARY", null);
    }

    @Test
    void storesAndLoadsExactBytesOverTwoFilesAndAfterAReopen() throws Exception {
        Path a = BlockDevices.createFile(dir.resolve("a.img"), 4 << 20);
        Path b = BlockDevices.createFile(dir.resolve("b.img"), 4 << 20);
        String json = "{\"type\":\"raw_block\",\"device_paths\":[\"" + a + "\",\"" + b + "\"],\"slot_bytes\":65536,"
                + "\"io_engine\":\"io_uring\",\"meta_enable_periodic\":false}";
        List<ObjectKey> keys = new ArrayList<>();
        List<MemoryObj> objs = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            ObjectKey k = ObjectKey.of("org/model", 0, new byte[] {(byte) i});
            keys.add(k);
            objs.add(data(k, 20_000 + 1000 * i));
        }
        try (L2Adapter ad = L2Adapters.create(json)) {
            assertThat(ad).isInstanceOf(RawBlockL2Adapter.class);
            assertThat(awaitStore(ad, ad.submitStoreTask(keys, objs)).success()).isTrue();
        }
        try (L2Adapter ad = L2Adapters.create(json)) {
            List<MemoryObj> bufs = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                bufs.add(MemoryObj.of(arena.allocate(65536, 4096)));
            }
            assertThat(awaitLoad(ad, ad.submitLoadTask(keys, bufs)).toString()).isEqualTo("111111");
            for (int i = 0; i < keys.size(); i++) {
                long size = objs.get(i).segment().byteSize();
                assertThat(bufs.get(i).segment().asSlice(0, size).mismatch(objs.get(i).segment())).isEqualTo(-1);
            }
        }
    }
}
