package io.fdpblock.core;

import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import org.junit.jupiter.api.Test;

/**
 * {@code verify_payload}: "always" computes the CRC32C of every loaded payload, "recovery" only on the first
 * load of a slot written before the open; a load reads a slot's header too only when its CRC is not known,
 * and a load of many keys is one submission either way.
 */
@Tag("host")
class VerifyPayloadTest {
    private static final int SIZE = 5000;
    private static final RawBlockCoreConfig.VerifyPayload ALWAYS = RawBlockCoreConfig.VerifyPayload.ALWAYS;
    private static final RawBlockCoreConfig.VerifyPayload RECOVERY = RawBlockCoreConfig.VerifyPayload.RECOVERY;

    @TempDir(factory = CrashRecoveryTest.DiskTempDir.class)
    Path dir;

    /** Stores keys 0..n-1 (closed again) and returns each one's slot offset on the device. */
    private static long[] store(CoreFixture f, int n) throws Exception {
        RawBlockCore core = f.open();
        List<PutRequest> reqs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            reqs.add(PutRequest.of(CoreFixture.key(i), f.payload(CoreFixture.key(i), SIZE)));
        }
        assertThat(core.put(reqs)).containsOnly(true);
        long[] slotOffsets = new long[n];
        for (int i = 0; i < n; i++) {
            slotOffsets[i] = core.slotOffset(core.index.get(new StoreKey(CoreFixture.key(i))).slot());
        }
        core.close();
        return slotOffsets;
    }

    private static RawBlockCore open(CoreFixture f, RawBlockCoreConfig.VerifyPayload v) throws Exception {
        return f.open(f.config().verifyPayload(v).build());
    }

    private static boolean load(CoreFixture f, RawBlockCore core, int key, MemorySegment into) throws Exception {
        into.fill((byte) 0);
        return core.load(List.of(new LoadRequest(CoreFixture.key(key), into)))[0];
    }

    @ParameterizedTest
    @EnumSource(value = RawBlockCoreConfig.MetaFormat.class)
    void aCorruptedPayloadByteIsRefusedUnderAlwaysAndUnderRecoveryOnlyWhenItPredatesTheOpen(
            RawBlockCoreConfig.MetaFormat format) throws Exception {
        try (CoreFixture f = new CoreFixture(IoEngine.IO_URING, dir, 8, format)) {
            long[] slot = store(f, 2);
            long at = slot[1] + RawBlockCoreConfig.DEFAULT_HEADER_BYTES + 1234;
            CoreFixture.patch(f.device, at, 1, s -> s.set(ValueLayout.JAVA_BYTE, 0,
                    (byte) (s.get(ValueLayout.JAVA_BYTE, 0) ^ 0x5A)));
            MemorySegment buf = f.buffer(8192);

            RawBlockCore always = open(f, ALWAYS);
            assertThat(load(f, always, 0, buf)).as("an intact key").isTrue();
            assertThat(load(f, always, 1, buf)).as("always: the damaged payload fails its CRC32C").isFalse();
            assertThat(always.status()).containsEntry("crc_mismatches", 1L);
            always.close();

            RawBlockCore recovery = open(f, RECOVERY);
            assertThat(load(f, recovery, 1, buf)).as("recovery: the first load of a slot written before the open"
                    + " checks its CRC32C (a power loss may have torn it under its header)").isFalse();
            assertThat(recovery.status()).containsEntry("crc_mismatches", 1L);
            assertThat(load(f, recovery, 0, buf)).as("an intact key, verified by its first load").isTrue();
            // damage key 0's payload now: verified in this open, its loads no longer compute the CRC32C
            CoreFixture.patch(f.device, slot[0] + RawBlockCoreConfig.DEFAULT_HEADER_BYTES + 1234, 1,
                    s -> s.set(ValueLayout.JAVA_BYTE, 0, (byte) (s.get(ValueLayout.JAVA_BYTE, 0) ^ 0x5A)));
            MemorySegment want = f.payload(CoreFixture.key(0), SIZE);
            assertThat(load(f, recovery, 0, buf)).as("recovery: no CRC32C on a verified slot").isTrue();
            MemorySegment got = buf.asSlice(0, SIZE);
            assertThat(got.mismatch(want)).as("the one damaged byte, served as stored").isEqualTo(1234);
            assertThat(got.get(ValueLayout.JAVA_BYTE, 1234))
                    .isEqualTo((byte) (want.get(ValueLayout.JAVA_BYTE, 1234) ^ 0x5A));
            assertThat(got.asSlice(1235).mismatch(want.asSlice(1235))).isEqualTo(-1);
            assertThat(recovery.status()).containsEntry("crc_mismatches", 1L);
            recovery.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = RawBlockCoreConfig.MetaFormat.class)
    void anotherKeysSlotIsRefusedUnderBoth(RawBlockCoreConfig.MetaFormat format) throws Exception {
        try (CoreFixture f = new CoreFixture(IoEngine.IO_URING, dir, 8, format)) {
            long[] slot = store(f, 2);
            // key 1's whole slot (its header, naming key 1, and its payload, same length) over key 0's
            byte[] other = new byte[RawBlockCoreConfig.DEFAULT_HEADER_BYTES + SIZE];
            CoreFixture.patch(f.device, slot[1], other.length, s -> MemorySegment.copy(s, ValueLayout.JAVA_BYTE, 0,
                    other, 0, other.length));
            CoreFixture.patch(f.device, slot[0], other.length, s -> MemorySegment.copy(other, 0, s,
                    ValueLayout.JAVA_BYTE, 0, other.length));
            MemorySegment buf = f.buffer(8192);
            // lmcache_v1 checks slot headers at open (meta_verify_on_load): off, so that the load path meets it
            RawBlockCoreConfig.Builder base = f.config().metaVerifyOnLoad(false);

            RawBlockCore always = f.open(base.verifyPayload(ALWAYS).build());
            assertThat(load(f, always, 0, buf)).as("always: key 1's bytes in key 0's slot").isFalse();
            assertThat(load(f, always, 1, buf)).isTrue();
            always.close();

            RawBlockCore recovery = f.open(base.verifyPayload(RECOVERY).build());
            assertThat(load(f, recovery, 0, buf)).as("recovery: key 1's bytes in key 0's slot, written before the open")
                    .isFalse();
            // lmcache_v1 without the checks at open knows no CRC: the header, read with the payload, names key 1;
            // fdpblock_v2's log holds key 0's CRC, which key 1's payload fails
            long mismatches = format == RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2 ? 1 : 0;
            assertThat(recovery.status()).as("refused by the CRC when known, else by the header")
                    .containsEntry("crc_mismatches", mismatches);
            assertThat(load(f, recovery, 1, buf)).isTrue();
            assertThat(buf.asSlice(0, SIZE).mismatch(f.payload(CoreFixture.key(1), SIZE))).isEqualTo(-1);
            recovery.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = RawBlockCoreConfig.VerifyPayload.class)
    void aLoadOfManyKeysServesExactlyTheIntactOnesStraightOrThroughABounceBuffer(
            RawBlockCoreConfig.VerifyPayload v) throws Exception {
        try (CoreFixture f = new CoreFixture(IoEngine.IO_URING, dir, 8, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)) {
            long[] slot = store(f, 6);
            CoreFixture.patch(f.device, slot[3] + RawBlockCoreConfig.DEFAULT_HEADER_BYTES + 77, 1,
                    s -> s.set(ValueLayout.JAVA_BYTE, 0, (byte) (s.get(ValueLayout.JAVA_BYTE, 0) ^ 0x11)));
            RawBlockCore core = open(f, v); // every slot predates the open: checked under either setting
            List<LoadRequest> loads = new ArrayList<>();
            List<MemorySegment> into = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                // half straight into aligned native buffers, half through a bounce buffer into heap memory
                MemorySegment m = i % 2 == 0 ? f.buffer(8192) : MemorySegment.ofArray(new byte[SIZE]);
                into.add(m);
                loads.add(new LoadRequest(CoreFixture.key(i), m));
            }
            assertThat(core.load(loads)).containsExactly(true, true, true, false, true, true);
            assertThat(core.status()).containsEntry("crc_mismatches", 1L);
            for (int i = 0; i < 6; i++) {
                if (i != 3) {
                    assertThat(into.get(i).asSlice(0, SIZE).mismatch(f.payload(CoreFixture.key(i), SIZE)))
                            .as("key %d's bytes, exactly", i).isEqualTo(-1);
                }
            }
            core.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = RawBlockCoreConfig.VerifyPayload.class)
    void aLoadOfManyKeysIsOneSubmissionWithEveryReadInIt(RawBlockCoreConfig.VerifyPayload v) throws Exception {
        try (CoreFixture f = new CoreFixture(IoEngine.IO_URING, dir, 8, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)) {
            long[] slot = store(f, 6);
            RawBlockCore core = open(f, v);
            List<LoadRequest> loads = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                loads.add(new LoadRequest(CoreFixture.key(i), f.buffer(8192)));
            }
            f.device.clearSubmissions();
            assertThat(core.load(loads)).containsOnly(true);
            List<FaultInjectingDevice.Submission> subs = f.device.submissions();
            assertThat(subs).as("one submission for the whole load").hasSize(1);
            List<Long> payloads = new ArrayList<>();
            for (long s : slot) {
                payloads.add(s + RawBlockCoreConfig.DEFAULT_HEADER_BYTES);
            }
            // the log holds every CRC from the puts: payloads only, under either setting
            assertThat(subs.get(0).offsets()).containsExactlyInAnyOrderElementsOf(payloads);
            core.close();
            // lmcache_v1 opened without its checks at open knows no CRC: each header is read with its payload
            // (under "recovery" too, for a slot written before the open)
            try (CoreFixture g = new CoreFixture(IoEngine.IO_URING, Files.createDirectories(dir.resolve("v1")), 8,
                    RawBlockCoreConfig.MetaFormat.LMCACHE_V1)) {
                long[] v1Slots = store(g, 6);
                RawBlockCore v1 = g.open(g.config().metaVerifyOnLoad(false).verifyPayload(v).build());
                List<LoadRequest> v1Loads = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    v1Loads.add(new LoadRequest(CoreFixture.key(i), g.buffer(8192)));
                }
                g.device.clearSubmissions();
                assertThat(v1.load(v1Loads)).containsOnly(true);
                List<Long> both = new ArrayList<>();
                for (long s : v1Slots) {
                    both.add(s);
                    both.add(s + RawBlockCoreConfig.DEFAULT_HEADER_BYTES);
                }
                assertThat(g.device.submissions()).hasSize(1);
                assertThat(g.device.submissions().get(0).offsets()).containsExactlyInAnyOrderElementsOf(both);
                v1.close();
            }
        }
    }

    @Test
    void theSettingIsReadFromJsonAndABadValueIsRefusedNamingIt() {
        String base = "{\"device_path\":\"/tmp/x.img\",\"slot_bytes\":1048576";
        assertThat(RawBlockCoreConfig.fromJson(base + "}").verifyPayload()).isEqualTo(ALWAYS);
        assertThat(RawBlockCoreConfig.fromJson(base + ",\"verify_payload\":\"recovery\"}").verifyPayload())
                .isEqualTo(RECOVERY);
        assertThat(RawBlockCoreConfig.fromJson(base + ",\"verify_payload\":\"always\"}").toBuilder().build()
                .verifyPayload()).isEqualTo(ALWAYS);
        assertThat(RawBlockCoreConfig.fromJson(base + ",\"verify_payload\":\"recovery\"}").toBuilder().build()
                .verifyPayload()).as("kept by toBuilder").isEqualTo(RECOVERY);
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + ",\"verify_payload\":\"never\"}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("verify_payload = never is unknown: use always");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson(base + ",\"verify_payload\":false}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("verify_payload = false must be a string");
    }
}
