package io.fdpblock.core;

import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The store's rules (RawBlockCore's class comment), on memory and on a file through io_uring. */
@Tag("host")
class RawBlockCoreTest {
    @TempDir
    Path dir;

    private static List<String> keys(String... k) {
        return List.of(k);
    }

    private boolean[] put(RawBlockCore core, CoreFixture f, String key, long size) throws Exception {
        return core.put(List.of(PutRequest.of(key, f.payload(key, size))));
    }

    private void assertLoads(RawBlockCore core, CoreFixture f, String key, long size) throws Exception {
        MemorySegment dest = f.buffer(CoreFixture.SLOT);
        assertThat(core.load(List.of(new LoadRequest(key, dest)))).containsExactly(true);
        assertThat(dest.asSlice(0, size).mismatch(f.payload(key, size))).as("bytes of %s", key).isEqualTo(-1);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void roundTripOfThreeKeysOfDifferentSizes(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 16)) {
            RawBlockCore core = f.open();
            long[] sizes = {17, 4096, 60 * 1024 - 3};
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                reqs.add(f.put(i, sizes[i]));
            }
            assertThat(core.put(reqs)).containsExactly(true, true, true);
            for (int i = 0; i < 3; i++) {
                assertLoads(core, f, CoreFixture.key(i), sizes[i]);
            }
            MemorySegment untouched = f.buffer(4096);
            untouched.fill((byte) 0x5A);
            assertThat(core.load(List.of(new LoadRequest("missing@0x00000000@00", untouched)))).containsExactly(false);
            for (long i = 0; i < 4096; i++) {
                assertThat(untouched.get(ValueLayout.JAVA_BYTE, i)).isEqualTo((byte) 0x5A);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void duplicatePutKeepsTheOriginalBytes(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 16)) {
            RawBlockCore core = f.open();
            String k = CoreFixture.key(1);
            assertThat(put(core, f, k, 5000)).containsExactly(true);
            MemorySegment other = f.buffer(5000);
            other.fill((byte) 7);
            f.device.clearSubmissions();
            assertThat(core.put(List.of(PutRequest.of(k, other)))).containsExactly(true);
            assertThat(f.device.submissions()).as("nothing rewritten").isEmpty();
            assertLoads(core, f, k, 5000);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void deleteExistingAndMissingAndLocks(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 16)) {
            RawBlockCore core = f.open();
            String a = CoreFixture.key(1);
            String b = CoreFixture.key(2);
            put(core, f, a, 100);
            put(core, f, b, 100);
            assertThat(core.delete(keys(a, "nope"), false)).containsExactly(true, false);
            assertThat(core.exists(keys(a, b), false)).containsExactly(false, true);

            assertThat(core.exists(keys(b), true)).containsExactly(true);
            assertThat(core.lockCount(b)).isEqualTo(1);
            assertThat(core.delete(keys(b), false)).containsExactly(false);
            assertThat(core.exists(keys(b), false)).containsExactly(true);
            core.unlock(keys(b));
            core.unlock(keys(b, "unknown")); // below zero and unknown: no-ops
            assertThat(core.lockCount(b)).isZero();
            assertThat(core.delete(keys(b), false)).containsExactly(true);
            assertThat(core.exists(keys(b), false)).containsExactly(false);

            put(core, f, a, 100);
            core.exists(keys(a), true);
            assertThat(core.delete(keys(a), true)).as("force removes a locked key").containsExactly(true);
            core.checkpointNow(); // fdpblock_v2 reuses a slot once its delete is durable
            assertThat(core.freeSlots()).isEqualTo(core.maxSlots());
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void batchOfTenKeysIsTheirPayloadsThenTheirHeadersWithTheirPlacement(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 32)) {
            RawBlockCore core = f.open();
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                reqs.add(f.put(i, 8192).withPlacement(1 + i));
            }
            f.device.clearSubmissions();
            assertThat(core.put(reqs)).containsOnly(true);
            assertThat(f.device.submissions()).as("the payloads, then the headers").hasSize(2);
            FaultInjectingDevice.Submission payloads = f.device.submissions().get(0);
            FaultInjectingDevice.Submission headers = f.device.submissions().get(1);
            assertThat(payloads.writes()).isEqualTo(10);
            assertThat(headers.writes()).isEqualTo(10);
            List<Integer> expected = new ArrayList<>();
            for (int i = 0; i < 10; i++) { // header and payload of a slot carry the key's id
                expected.add(1 + i);
                assertThat(payloads.offsets().get(i)).as("key %d's payload follows its header", i)
                        .isEqualTo(headers.offsets().get(i) + RawBlockCoreConfig.DEFAULT_HEADER_BYTES);
            }
            assertThat(payloads.placementIds()).containsExactlyElementsOf(expected);
            assertThat(headers.placementIds()).containsExactlyElementsOf(expected);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void seventyKeysAndADuplicateSplitIntoBoundedSubmissions(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 100)) {
            RawBlockCore core = f.open();
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 70; i++) {
                reqs.add(f.put(i, 4096));
            }
            reqs.add(PutRequest.of(CoreFixture.key(3), f.payload(CoreFixture.key(3), 4096)));
            f.device.clearSubmissions();
            f.device.failNextSubmit(); // the first submission (64 keys' payloads) fails: the duplicate shares key 3's result
            boolean[] r = core.put(reqs);
            assertThat(f.device.submissions()).as("64 payloads refused; 6 payloads, then their headers")
                    .extracting(FaultInjectingDevice.Submission::writes).containsExactly(64, 6, 6);
            for (int i = 0; i < 64; i++) {
                assertThat(r[i]).isFalse();
            }
            for (int i = 64; i < 70; i++) {
                assertThat(r[i]).isTrue();
            }
            assertThat(r[70]).isEqualTo(r[3]).isFalse();
            assertThat(core.keyCount()).isEqualTo(6);
            assertThat(core.freeSlots()).isEqualTo(core.maxSlots() - 6);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void threeSlotsFivePuts(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 3)) {
            RawBlockCore core = f.open();
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                reqs.add(f.put(i, 1000));
            }
            assertThat(core.put(reqs)).containsExactly(true, true, true, false, false);
            assertThat(core.status()).containsEntry("device_full_rejects", 2L).containsEntry("free_slots", 0);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void oversizeKeyInABatchFailsAlone(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open();
            long max = core.maxPayloadBytes();
            List<PutRequest> reqs = List.of(
                    PutRequest.of(CoreFixture.key(0), f.payload(CoreFixture.key(0), 100)),
                    PutRequest.of(CoreFixture.key(1), f.payload(CoreFixture.key(1), max + 1)),
                    PutRequest.of(CoreFixture.key(2), f.payload(CoreFixture.key(2), max)));
            assertThat(core.put(reqs)).containsExactly(true, false, true);
            assertLoads(core, f, CoreFixture.key(2), max);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void injectedSubmissionAndCompletionFailuresRollBackTheWholeBatch(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 16)) {
            RawBlockCore core = f.open();
            int free = core.freeSlots();
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                reqs.add(f.put(i, 3000));
            }
            f.device.failNextSubmit();
            assertThat(core.put(reqs)).containsOnly(false);
            assertThat(core.keyCount()).isZero();
            assertThat(core.freeSlots()).isEqualTo(free);

            f.device.failNextCompletion(); // the writes happen, but one op reports failure
            assertThat(core.put(reqs)).containsOnly(false);
            assertThat(core.keyCount()).isZero();
            assertThat(core.freeSlots()).as("no slot lost").isEqualTo(free);
            assertThat(core.exists(reqs.stream().map(PutRequest::key).toList(), false)).containsOnly(false);
            assertThat((Long) core.status().get("rolled_back_keys")).isEqualTo(10L);

            assertThat(core.put(reqs)).as("the keys can be stored afterwards").containsOnly(true);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void aLoadWhoseSubmissionFailsAnswersMissesAndHoldsNoSlot(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 16)) {
            RawBlockCore core = f.open();
            int free = core.freeSlots();
            List<PutRequest> reqs = new ArrayList<>();
            List<LoadRequest> loads = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                reqs.add(f.put(i, 3000 + i));
                loads.add(new LoadRequest(CoreFixture.key(i), f.buffer(CoreFixture.SLOT)));
            }
            assertThat(core.put(reqs)).containsOnly(true);
            f.device.failNextSubmit();
            assertThat(core.load(loads)).as("not read: every key a miss").containsOnly(false);
            assertThat(core.load(loads)).as("every key loads afterwards").containsOnly(true);
            for (int i = 0; i < 5; i++) {
                assertThat(loads.get(i).destination().asSlice(0, 3000 + i).mismatch(f.payload(CoreFixture.key(i), 3000 + i)))
                        .as("bytes of key %d", i).isEqualTo(-1);
            }
            assertThat(core.delete(reqs.stream().map(PutRequest::key).toList(), false)).containsOnly(true);
            assertThat(core.freeSlots()).as("every slot released: no read left open").isEqualTo(free);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void keyDeletedWhileItsWriteIsInFlightIsGoneAndItsSlotReusable(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 1)) {
            RawBlockCore core = f.open();
            String k = CoreFixture.key(1);
            f.device.hold();
            AtomicReference<boolean[]> result = new AtomicReference<>();
            CountDownLatch done = new CountDownLatch(1);
            core.putAsync(List.of(PutRequest.of(k, f.payload(k, 2000))), r -> {
                result.set(r);
                done.countDown();
            });
            assertThat(f.device.heldCount()).as("its payload, then its header").isEqualTo(2);
            assertThat(core.exists(keys(k), false)).as("in flight is invisible").containsExactly(false);
            assertThat(core.put(List.of(PutRequest.of(k, f.payload(k, 2000))))).as("concurrent put of a key in flight")
                    .containsExactly(false);
            assertThat(core.delete(keys(k), false)).containsExactly(true);
            f.device.release();
            assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(result.get()).containsExactly(false);
            assertThat(core.exists(keys(k), false)).containsExactly(false);
            assertThat(core.freeSlots()).isEqualTo(1);
            String other = CoreFixture.key(2);
            assertThat(put(core, f, other, 3000)).as("the only slot is reusable").containsExactly(true);
            assertLoads(core, f, other, 3000);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void closeAndReopenRecoversEveryKeyWithIdenticalBytes(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 64)) {
            RawBlockCore core = f.open();
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                ObjectMeta meta = new ObjectMeta(List.of(2, 32, 16, 8), "bfloat16", "KV_2LTD", i % 2 == 0 ? null : List.of(i));
                reqs.add(f.put(i, 1000 + i * 997).withMeta(meta));
            }
            core.put(reqs);
            core.delete(keys(CoreFixture.key(5)), false);
            core.close();

            RawBlockCore again = f.open();
            assertThat(again.keyCount()).isEqualTo(39);
            assertThat(again.status()).containsEntry("recovered_keys", 39).containsEntry("verify_dropped_keys", 0);
            for (int i = 0; i < 40; i++) {
                if (i != 5) {
                    assertLoads(again, f, CoreFixture.key(i), 1000 + i * 997);
                }
            }
            assertThat(again.exists(keys(CoreFixture.key(5)), false)).containsExactly(false);
            assertThat(again.freeSlots()).isEqualTo(again.maxSlots() - 39);
            assertThat(again.put(List.of(PutRequest.of(CoreFixture.key(100), f.payload(CoreFixture.key(100), 10)))))
                    .containsExactly(true);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void placementIdsOutOfRangeAreRejectedBeforeAnyIo(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open();
            f.device.clearSubmissions();
            for (int bad : new int[] {-1, 65536}) {
                assertThatThrownBy(() -> core.put(List.of(
                        PutRequest.of(CoreFixture.key(1), f.payload(CoreFixture.key(1), 10)),
                        PutRequest.of(CoreFixture.key(2), f.payload(CoreFixture.key(2), 10)).withPlacement(bad))))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining(String.valueOf(bad)).hasMessageContaining("0..65535");
            }
            assertThat(f.device.submissions()).isEmpty();
            assertThat(core.keyCount()).isZero();
            assertThat(core.freeSlots()).isEqualTo(core.maxSlots());
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void slotAffinityReusesAFreedSlotForTheSamePlacementId(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open(f.config().fdpSlotAffinityEnabled(true).build());
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                reqs.add(f.put(i, 100).withPlacement(i < 2 ? 3 : 9));
            }
            core.put(reqs);
            // free one slot of id 3 and one of id 9; the slot of id 9 is freed last (top of a shared stack)
            core.delete(keys(CoreFixture.key(0)), false);
            core.delete(keys(CoreFixture.key(2)), false);
            core.checkpointNow(); // fdpblock_v2 reuses a slot once its delete is durable
            f.device.clearSubmissions();
            core.put(List.of(PutRequest.of(CoreFixture.key(10), f.payload(CoreFixture.key(10), 100)).withPlacement(3)));
            long headerOffset = f.device.submissions().get(1).offsets().get(0); // after its payload's
            long slotOfKey0 = f.meta; // key 0 went to slot 0, the first after the metadata area
            assertThat(headerOffset).as("id 3 gets the slot id 3 freed").isEqualTo(slotOfKey0);
            assertThat(core.status()).containsEntry("slot_affinity_hits", 1L);
            core.put(List.of(PutRequest.of(CoreFixture.key(11), f.payload(CoreFixture.key(11), 100)).withPlacement(5)));
            assertThat((Long) core.status().get("slot_affinity_fallbacks")).isGreaterThanOrEqualTo(1L);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void tooSmallDestinationIsAClearErrorAndLoadsNothing(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open();
            put(core, f, CoreFixture.key(1), 9000);
            MemorySegment small = f.buffer(4096);
            assertThatThrownBy(() -> core.load(List.of(new LoadRequest(CoreFixture.key(1), small))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("4096 bytes is smaller than the stored payload of 9000");
            assertThat(core.delete(keys(CoreFixture.key(1)), false)).containsExactly(true);
            core.checkpointNow(); // fdpblock_v2 reuses a slot once its delete is durable
            assertThat(core.freeSlots()).as("no reader left behind").isEqualTo(core.maxSlots());
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void unalignedAndHeapBuffersAreCopiedThroughBounceBuffers(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open();
            String k = CoreFixture.key(1);
            byte[] heap = f.payload(k, 5001).toArray(ValueLayout.JAVA_BYTE);
            assertThat(core.put(List.of(PutRequest.of(k, MemorySegment.ofArray(heap))))).containsExactly(true);
            MemorySegment odd = f.buffer(8192).asSlice(3, 5001);
            assertThat(core.load(List.of(new LoadRequest(k, odd)))).containsExactly(true);
            assertThat(odd.mismatch(MemorySegment.ofArray(heap))).isEqualTo(-1);
        }
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void callsAfterCloseFailClearly(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 8)) {
            RawBlockCore core = f.open();
            core.close();
            core.close();
            assertThatThrownBy(() -> core.exists(keys("a"), false)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
        }
    }
}
