package io.fdpblock.l2;

import io.fdpblock.adapter.RawBlockL2Adapter;
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
import java.util.stream.IntStream;

import static io.fdpblock.l2.L2AdapterContractTest.awaitLoad;
import static io.fdpblock.l2.L2AdapterContractTest.awaitLookup;
import static io.fdpblock.l2.L2AdapterContractTest.awaitStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** fault_inject: which load positions fail, that nothing else changes, and that the locks still balance. */
@Tag("host")
class FaultInjectL2AdapterTest {
    @TempDir
    Path dir;
    private final Arena arena = Arena.ofShared();
    private final List<L2Adapter> opened = new ArrayList<>();

    @AfterEach
    void tearDown() {
        opened.forEach(L2Adapter::close);
        arena.close();
    }

    private <A extends L2Adapter> A track(A a) {
        opened.add(a);
        return a;
    }

    /** The keys of the cross-check against LMCache's selection: chunk hash {1, 2, i, i >> 8}. */
    private static ObjectKey key(int i) {
        return ObjectKey.of("org/model", 0x01000000, new byte[] {1, 2, (byte) i, (byte) (i >> 8)});
    }

    private static List<ObjectKey> keys(int n) {
        return IntStream.range(0, n).mapToObj(FaultInjectL2AdapterTest::key).toList();
    }

    private MemoryObj data(ObjectKey k, int size) {
        MemorySegment s = arena.allocate(size, 4096);
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (k.hashCode() * 17 + i));
        }
        return MemoryObj.of(s);
    }

    private List<MemoryObj> buffers(int n, int size) {
        List<MemoryObj> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            MemorySegment s = arena.allocate(size, 4096);
            s.fill((byte) 0);
            out.add(MemoryObj.of(s));
        }
        return out;
    }

    private void storeAll(L2Adapter a, List<ObjectKey> keys) throws Exception {
        List<MemoryObj> objs = keys.stream().map(k -> data(k, 2000)).toList();
        assertThat(awaitStore(a, a.submitStoreTask(keys, objs)).success()).isTrue();
    }

    private static String drops(FaultInjectL2Adapter f, List<ObjectKey> keys) {
        return Arrays.toString(f.dropPositions(keys));
    }

    @Test
    void aDroppedChunkHashIsFoundAtLookupFailsInEveryLoadAndTheCallersUnlockReleasesIt() throws Exception {
        MockL2Adapter mock = new MockL2Adapter();
        FaultInjectL2Adapter f = track(FaultInjectL2Adapter.builder().dropChunkHashes(key(1).chunkHash()).wrap(mock));
        List<ObjectKey> ks = keys(4);
        storeAll(f, ks);
        assertThat(awaitLookup(f, f.submitLookupAndLockTask(ks)).toString()).as("found at lookup").isEqualTo("1111");
        assertThat(awaitLoad(f, f.submitLoadTask(ks, buffers(4, 4096))).toString()).isEqualTo("1011");
        assertThat(mock.lockCount(key(1))).as("the wrapper unlocks nothing").isEqualTo(1);
        List<ObjectKey> reordered = List.of(key(3), key(1));
        assertThat(awaitLoad(f, f.submitLoadTask(reordered, buffers(2, 4096))).toString())
                .as("the same chunk fails wherever it is").isEqualTo("10");
        f.submitUnlock(ks); // the caller unlocks what it planned to load, loaded or not
        for (ObjectKey k : ks) {
            assertThat(mock.lockCount(k)).isZero();
        }
        assertThat(f.usage()).isEqualTo(mock.usage());
        @SuppressWarnings("unchecked")
        Map<String, Object> fault = (Map<String, Object>) f.reportStatus().get("fault_inject");
        assertThat(fault).containsEntry("dropped_keys", 2L).containsEntry("faulted_loads", 2L)
                .containsEntry("drop_chunk_hashes", List.of("01020100")).containsEntry("pending_loads_with_drops", 0);
        assertThat(f.reportStatus()).containsEntry("type", "mock");
    }

    @Test
    void gapIndicesCountFromTheHeadAndTailRatiosFromTheTailRoundingHalfToEven() throws Exception {
        FaultInjectL2Adapter head = track(FaultInjectL2Adapter.builder().gapIndices(0, 2, 9).wrap(new MockL2Adapter()));
        assertThat(drops(head, keys(4))).isEqualTo("[0, 2]");
        assertThat(drops(head, keys(1))).isEqualTo("[0]");

        FaultInjectL2Adapter tail = track(FaultInjectL2Adapter.builder().gapTailRatios(0.5).wrap(new MockL2Adapter()));
        assertThat(drops(tail, keys(5))).as("the middle of 5").isEqualTo("[2]");
        assertThat(drops(tail, keys(4))).as("1.5 rounds to 2").isEqualTo("[2]");
        assertThat(drops(tail, keys(6))).as("2.5 rounds to 2, as Python's round does").isEqualTo("[2]");
        assertThat(drops(tail, keys(1))).isEqualTo("[0]");
        FaultInjectL2Adapter ends = track(FaultInjectL2Adapter.builder().gapTailRatios(0.0, 1.0).wrap(new MockL2Adapter()));
        assertThat(drops(ends, keys(7))).as("0 = the last key, 1 = the first").isEqualTo("[0, 6]");

        storeAll(tail, keys(5));
        assertThat(awaitLoad(tail, tail.submitLoadTask(keys(5), buffers(5, 4096))).toString()).isEqualTo("11011");
        tail.submitUnlock(keys(5));
    }

    @Test
    void aSeededRateDropsTheSameKeysEveryTimeAndTheKeysLmcacheDropsForThatSeed() throws Exception {
        // expected: LMCache's selection (BLAKE2b-64 of "seed:hash:model:rank:group:salt", big-endian, mod 10^6)
        List<ObjectKey> ks = keys(32);
        FaultInjectL2Adapter seven = track(FaultInjectL2Adapter.builder().rate(0.25).seed(7).wrap(new MockL2Adapter()));
        FaultInjectL2Adapter sevenAgain = track(FaultInjectL2Adapter.builder().rate(0.25).seed(7).wrap(new MockL2Adapter()));
        FaultInjectL2Adapter eight = track(FaultInjectL2Adapter.builder().rate(0.25).seed(8).wrap(new MockL2Adapter()));
        assertThat(drops(seven, ks)).isEqualTo("[0, 2, 4, 5, 8, 14, 15, 16, 18, 22, 25, 28, 30]");
        assertThat(drops(sevenAgain, ks)).isEqualTo(drops(seven, ks));
        assertThat(drops(eight, ks)).isEqualTo("[2, 3, 11, 13, 16, 18, 20, 24, 25, 26]");
        List<ObjectKey> salted = ks.stream().map(k -> k.withCacheSalt("tenant-a")).toList();
        assertThat(drops(seven, salted)).as("the salt is part of the key").isEqualTo("[0, 2, 3, 7, 9, 17, 19, 22, 29, 30, 31]");
        // a kv rank above 2^31 (world size 200) is printed unsigned, as Python prints it
        FaultInjectL2Adapter odd = track(FaultInjectL2Adapter.builder().rate(0.5).seed(-3).wrap(new MockL2Adapter()));
        List<ObjectKey> wide = IntStream.range(0, 32).mapToObj(i -> ObjectKey.of("m", (200 << 24) | 5,
                new byte[] {1, 2, (byte) i, (byte) (i >> 8)}).withObjectGroupId(3).withCacheSalt("s")).toList();
        assertThat(drops(odd, wide)).isEqualTo("[1, 5, 6, 7, 8, 9, 13, 15, 16, 18, 24, 25, 26, 28, 29, 30, 31]");

        FaultInjectL2Adapter all = track(FaultInjectL2Adapter.builder().rate(1.0).wrap(new MockL2Adapter()));
        assertThat(all.dropPositions(ks)).hasSize(32);
        FaultInjectL2Adapter none = track(FaultInjectL2Adapter.builder().seed(7).wrap(new MockL2Adapter()));
        assertThat(none.dropPositions(ks)).isEmpty();

        List<ObjectKey> first8 = ks.subList(0, 8);
        storeAll(seven, first8);
        assertThat(awaitLoad(seven, seven.submitLoadTask(first8, buffers(8, 4096))).toString()).isEqualTo("01010011");
    }

    @Test
    void storesLookupsTaskIdsAndEventFdsAreTheInnerAdapters() throws Exception {
        MockL2Adapter mock = new MockL2Adapter();
        FaultInjectL2Adapter f = track(FaultInjectL2Adapter.builder().gapIndices(0).wrap(mock));
        assertThat(List.of(f.storeEventFd(), f.lookupAndLockEventFd(), f.loadEventFd()))
                .containsExactly(mock.storeEventFd(), mock.lookupAndLockEventFd(), mock.loadEventFd());
        storeAll(f, keys(2));
        long lookup = f.submitLookupAndLockTask(keys(2));
        assertThat(mock.queryLookupAndLockResult(lookup)).as("the inner adapter's id").isNotNull();
        f.submitUnlock(keys(2));
        assertThat(f.inner()).isSameAs(mock);
        assertThat(f).hasToString("fault_inject adapter over mock L2 adapter");
    }

    @Test
    void theJsonNamesTheInnerAdapterAndTheFaults() throws Exception {
        FaultInjectL2Adapter f = track((FaultInjectL2Adapter) L2Adapters.create("""
                {"type": "fault_inject", "inner": {"type": "mock", "capacity_bytes": 4096},
                 "drop_chunk_hashes": ["01020300", "ABCD"], "gap_indices": [7], "gap_tail_ratios": [1.0],
                 "rate": 0.0, "seed": 42}"""));
        assertThat(f.inner()).isInstanceOf(MockL2Adapter.class);
        assertThat(f.usage().totalCapacityBytes()).isEqualTo(4096);
        assertThat(drops(f, keys(8))).isEqualTo("[0, 3, 7]");
        assertThat(f.inner().reportStatus()).as("the identity is forwarded").containsEntry("backend", "fault_inject");
        @SuppressWarnings("unchecked")
        Map<String, Object> fault = (Map<String, Object>) f.reportStatus().get("fault_inject");
        assertThat(fault).containsEntry("seed", 42L).containsEntry("rate", 0.0).containsEntry("gap_indices", List.of(7))
                .containsEntry("gap_tail_ratios", List.of(1.0)).containsEntry("drop_chunk_hashes", List.of("01020300", "abcd"));

        String mock = "\"inner\":{\"type\":\"mock\"}";
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"fault_inject\"," + mock + ",\"rate\":1.5}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rate 1.5").hasMessageContaining("[0, 1]");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"fault_inject\"," + mock + ",\"gap_indices\":[-1]}"))
                .hasMessageContaining("gap index -1");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"fault_inject\"," + mock + ",\"gap_indices\":3}"))
                .hasMessageContaining("must be a JSON list");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"fault_inject\"," + mock + ",\"drop_chunk_hashes\":[\"xyz\"]}"))
                .hasMessageContaining("'xyz' is not hex");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"fault_inject\"," + mock + ",\"seed\":1.5}"))
                .hasMessageContaining("seed = 1.5");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"fault_inject\"," + mock + ",\"drop_keys\":[]}"))
                .hasMessageContaining("unknown key 'drop_keys'").hasMessageContaining("drop_chunk_hashes");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"fault_inject\",\"inner\":\"mock\"}"))
                .hasMessageContaining("\"inner\" must be");
    }

    @Test
    void overTheRawBlockAdapterADroppedKeyIsAMissAndItsLockIsReleasedByTheCallersUnlock() throws Exception {
        RawBlockL2Adapter raw = WrapperContractTest.rawBlock(dir);
        FaultInjectL2Adapter f = track(FaultInjectL2Adapter.builder().gapIndices(1).wrap(raw));
        List<ObjectKey> ks = keys(3);
        storeAll(f, ks);
        assertThat(awaitLookup(f, f.submitLookupAndLockTask(ks)).toString()).isEqualTo("111");
        List<MemoryObj> into = buffers(3, 4096);
        assertThat(awaitLoad(f, f.submitLoadTask(ks, into)).toString()).isEqualTo("101");
        for (int i : new int[] {0, 2}) {
            assertThat(into.get(i).segment().asSlice(0, 2000).mismatch(data(ks.get(i), 2000).segment())).isEqualTo(-1);
        }
        for (ObjectKey k : ks) {
            assertThat(raw.core().lockCount(k.encoded())).as("locked until the caller unlocks").isEqualTo(1);
        }
        f.submitUnlock(ks);
        for (ObjectKey k : ks) {
            assertThat(raw.core().lockCount(k.encoded())).isZero();
        }
        f.delete(ks);
        assertThat(f.usage().totalBytesUsed()).isZero();
    }
}
