package io.fdpblock.adapter;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.AdapterUsage;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;
import io.fdpblock.l2.L2DeleteResult;
import io.fdpblock.l2.L2Adapters;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static io.fdpblock.l2.L2AdapterContractTest.awaitLoad;
import static io.fdpblock.l2.L2AdapterContractTest.awaitLookup;
import static io.fdpblock.l2.L2AdapterContractTest.awaitStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What only the raw-block adapter promises: a device that fills up, and recovery. */
@Tag("host")
class RawBlockL2AdapterTest {
    private static final long SLOT = 16 << 10;

    @TempDir
    Path dir;
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void tearDown() {
        arena.close();
    }

    private RawBlockCoreConfig config(int slots) {
        return RawBlockCoreConfig.builder(dir.resolve("dev.img").toString(), SLOT)
                .capacityBytes(RawBlockCoreConfig.v2MetaBytesFor(4096, slots) + slots * SLOT).ioEngine(IoEngine.IO_URING)
                .metaEnablePeriodic(false).build();
    }

    private MemoryObj data(ObjectKey k, int size) {
        MemorySegment s = arena.allocate(size, 4096);
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (k.hashCode() + i));
        }
        return MemoryObj.of(s).withMeta(List.of(size), "uint8", "BINARY", null);
    }

    private static ObjectKey key(int i, String salt) {
        return ObjectKey.of("org/model", 0, new byte[] {(byte) i}).withCacheSalt(salt);
    }

    /** Records listener events as text, in order. */
    private static final class Recorder implements L2AdapterListener {
        final List<String> events = new CopyOnWriteArrayList<>();

        @Override
        public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
            events.add("stored " + keys.size() + " " + sizes);
        }

        @Override
        public void onKeysDeleted(List<ObjectKey> keys) {
            events.add("deleted " + keys.size());
        }
    }

    @Test
    void aFullDeviceFailsTheStoreAndDeleteMakesRoom() throws Exception {
        try (RawBlockL2Adapter a = RawBlockL2Adapter.open(config(3))) {
            Recorder r = new Recorder();
            a.registerListener(r);
            List<ObjectKey> three = List.of(key(1, "a"), key(2, "a"), key(3, "b"));
            List<MemoryObj> objs = new ArrayList<>();
            for (ObjectKey k : three) {
                objs.add(data(k, 1000));
            }
            assertThat(awaitStore(a, a.submitStoreTask(three, objs))).isEqualTo(new L2StoreResult(true, 3 * SLOT));
            assertThat(a.usage()).isEqualTo(new AdapterUsage(3 * SLOT, 3 * SLOT, Map.of("a", 2 * SLOT, "b", SLOT)));
            assertThat(a.usage().usageFraction()).isEqualTo(1.0);

            ObjectKey fourth = key(4, "b");
            assertThat(awaitStore(a, a.submitStoreTask(List.of(fourth), List.of(data(fourth, 10)))))
                    .isEqualTo(L2StoreResult.failed());
            // listeners hear of the space each key occupies, a whole slot, as usage counts it (LMCache's rule)
            assertThat(r.events).containsExactly("stored 3 [16384, 16384, 16384]");

            a.delete(List.of(key(1, "a")));
            assertThat(a.usage().bytesByCacheSalt()).isEqualTo(Map.of("a", SLOT, "b", SLOT));
            assertThat(awaitStore(a, a.submitStoreTask(List.of(fourth), List.of(data(fourth, 10)))))
                    .isEqualTo(new L2StoreResult(true, SLOT));
            assertThat(r.events).containsExactly("stored 3 [16384, 16384, 16384]", "deleted 1", "stored 1 [16384]");
            assertThat(a.usage().bytesByCacheSalt()).isEqualTo(Map.of("a", SLOT, "b", 2 * SLOT));
        }
    }

    /** The store reads a call's keys from the caller's list: a null among them is refused before any is touched. */
    @Test
    void aNullKeyInAnUnlockDeleteOrGroupQueryIsRefusedBeforeAnyKeyIsTouched() throws Exception {
        try (RawBlockL2Adapter a = RawBlockL2Adapter.open(config(3))) {
            ObjectKey k = key(1, "a");
            assertThat(awaitStore(a, a.submitStoreTask(List.of(k), List.of(data(k, 1000)))).success()).isTrue();
            List<ObjectKey> withNull = new ArrayList<>(Arrays.asList(k, null));
            assertThat(awaitLookup(a, a.submitLookupAndLockTask(List.of(k))).cardinality()).isEqualTo(1);
            assertThatThrownBy(() -> a.submitUnlock(withNull)).hasMessageContaining("keys[1] is null");
            assertThat(a.core().lockCount(k.encoded())).as("still locked").isEqualTo(1);
            assertThatThrownBy(() -> a.deleteReporting(withNull, true)).hasMessageContaining("keys[1] is null");
            assertThatThrownBy(() -> a.groupsOf(withNull)).hasMessageContaining("keys[1] is null");
            assertThat(a.core().keyCount()).as("not deleted").isEqualTo(1);
            a.submitUnlock(List.of(k));
            assertThat(a.deleteReporting(List.of(k), false)).containsExactly(L2DeleteResult.REMOVED);
        }
    }

    @Test
    void recoveryAfterCloseAndReopenKeepsKeysBytesUsageAndReplaysToListeners() throws Exception {
        List<ObjectKey> keys = List.of(key(1, ""), key(2, "rag:app1"), key(3, "rag:app1"));
        try (RawBlockL2Adapter a = RawBlockL2Adapter.open(config(8))) {
            List<MemoryObj> objs = new ArrayList<>();
            for (ObjectKey k : keys) {
                objs.add(data(k, 5000));
            }
            assertThat(awaitStore(a, a.submitStoreTask(keys, objs)).success()).isTrue();
        }
        try (RawBlockL2Adapter b = RawBlockL2Adapter.open(config(8))) {
            assertThat(b.usage().bytesByCacheSalt()).isEqualTo(Map.of("", SLOT, "rag:app1", 2 * SLOT));
            Recorder r = new Recorder();
            b.registerListener(r);
            assertThat(r.events).as("keys replayed at registration are charged like new ones")
                    .containsExactly("stored 3 [16384, 16384, 16384]");
            List<MemoryObj> bufs = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                bufs.add(MemoryObj.of(arena.allocate(8192, 4096)));
            }
            assertThat(awaitLoad(b, b.submitLoadTask(keys, bufs)).toString()).isEqualTo("111");
            for (int i = 0; i < 3; i++) {
                assertThat(bufs.get(i).segment().asSlice(0, 5000).mismatch(data(keys.get(i), 5000).segment()))
                        .isEqualTo(-1);
            }
            assertThat(b.reportStatus()).containsEntry("type", "RawBlockL2Adapter").containsEntry("recovered_keys", 3)
                    .containsEntry("is_healthy", true);
        }
    }

    @Test
    void theRegistryCreatesAdaptersByTypeAndNamesTheKnownOnes() throws Exception {
        assertThat(L2Adapters.types()).contains("raw_block", "mock");
        try (L2Adapter a = L2Adapters.create("{\"type\":\"raw_block\",\"device_path\":\""
                + dir.resolve("reg.img") + "\",\"slot_bytes\":65536,\"capacity_bytes\":4194304,"
                + "\"meta_total_bytes\":1048576,\"io_engine\":\"io_uring\",\"meta_enable_periodic\":false}")) {
            assertThat(a).isInstanceOf(RawBlockL2Adapter.class);
            assertThat(a.reportStatus()).as("named by its registered type").containsEntry("backend", "raw_block")
                    .containsEntry("backend_shared", false);
        }
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"s3\"}")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown L2 adapter type 's3'").hasMessageContaining("mock")
                .hasMessageContaining("raw_block");
        assertThatThrownBy(() -> L2Adapters.create("{}")).hasMessageContaining("needs a \"type\"");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"mock\",\"capacity\":1}"))
                .hasMessageContaining("unknown key 'capacity'");
    }
}
