package io.fdpblock.core;

import io.fdpblock.core.v1.CheckpointCodec;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoEngine;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The smaller edges where data could go astray or a mistake went unexplained. */
@Tag("host")
class TrustEdgesTest {
    private static final long SLOT = 16 << 10;
    private static final long META = 1 << 20;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private final Arena arena = Arena.ofShared();

    /** fdpblock_v2 (the default) with exactly {@code slots} slots. */
    private static RawBlockCoreConfig.Builder config(String path, int slots) {
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, slots);
        return RawBlockCoreConfig.builder(path, SLOT).capacityBytes(meta + slots * SLOT).metaTotalBytes(meta)
                .metaEnablePeriodic(false).ioEngine(IoEngine.MEMORY);
    }

    private static BlockDevice device(int slots) {
        return BlockDevices.memory(RawBlockCoreConfig.v2MetaBytesFor(4096, slots) + slots * SLOT, 4096);
    }

    /**
     * lmcache_v1: a freed slot goes back at once after its deallocation (fdpblock_v2 also waits for its
     * delete record to be durable, which {@code hold()} would hold up too).
     */
    private static RawBlockCoreConfig.Builder v1Config(int slots) {
        return RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(META + slots * SLOT).metaTotalBytes(META)
                .metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1).metaEnablePeriodic(false).ioEngine(IoEngine.MEMORY);
    }

    private static FaultInjectingDevice fdpLike(int slots) {
        return new FaultInjectingDevice(BlockDevices.memory(META + slots * SLOT, 4096)).emulatePlacement(List.of(0, 1, 2), 0);
    }

    private MemorySegment data(int size, int fill) {
        return arena.allocate(size, 4096).fill((byte) fill);
    }

    @Test
    void keysTheCheckpointCouldNotHoldAreRefusedAtPutSayingWhy() throws Exception {
        try (RawBlockCore core = RawBlockCore.open(config("memory", 8).build(), device(8))) {
            String longKey = "m@0x00000000@" + "a".repeat(50_001);
            assertThatThrownBy(() -> PutRequest.of(longKey, data(4096, 1))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("50014 UTF-8 bytes").hasMessageContaining(PutRequest.MAX_KEY_BYTES + "");
            String surrogate = "m@0x00000000@01@salt\uD800x";
            assertThatThrownBy(() -> PutRequest.of(surrogate, data(4096, 1))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("unpaired surrogate").hasMessageContaining("U+D800");
            String paired = "m@0x00000000@01@salt\uD83D\uDE00";
            assertThat(core.put(List.of(PutRequest.of(paired, data(4096, 1))))).containsExactly(true);
            core.checkpointNow();
            assertThat(core.keySizes()).containsOnlyKeys(paired);
        }
    }

    @Test
    void aCheckpointWithAKeyLongerThanJacksonsDefaultLimitStillReads() throws Exception {
        // as LMCache could have written it: one 50,001-character key beside a normal one
        String longKey = "x".repeat(50_001);
        String json = "{\"version\":1,\"capacity_bytes\":" + (META + 8 * SLOT) + ",\"block_align\":4096,\"header_bytes\":4096,"
                + "\"slot_bytes\":" + SLOT + ",\"meta_total_bytes\":" + META + ",\"next_slot\":2,\"entries\":{\""
                + longKey + "\":{\"offset\":" + META + ",\"size\":10},\"m@0x00000000@01\":{\"offset\":" + (META + SLOT)
                + ",\"size\":10}}}";
        CheckpointCodec.Decoded d = CheckpointCodec.decode(json.getBytes(StandardCharsets.UTF_8));
        assertThat(d.entries()).extracting(CheckpointCodec.RawEntry::key).containsExactly(longKey, "m@0x00000000@01");
    }

    @Test
    void anEmptyOrOversizedPayloadFailsThatKeyAndSaysWhy() throws Exception {
        try (RawBlockCore core = RawBlockCore.open(config("memory", 8).build(), device(8))) {
            PutOutcome[] out = core.putWithOutcome(List.of(
                    PutRequest.of("m@0x00000000@01", data(4096, 1)),
                    PutRequest.of("m@0x00000000@02", MemorySegment.NULL),
                    PutRequest.of("m@0x00000000@03", data((int) SLOT, 3))));
            assertThat(out).containsExactly(PutOutcome.STORED, PutOutcome.PAYLOAD_EMPTY, PutOutcome.PAYLOAD_TOO_LARGE);
            assertThat(core.status()).containsEntry("oversize_rejects", 2L);
        }
    }

    @Test
    void deletesReturnAtOnceAndFreedSlotsAreDeallocatedInOneBatchBeforeReuse() throws Exception {
        FaultInjectingDevice dev = fdpLike(8);
        try (RawBlockCore core = RawBlockCore.open(v1Config(8).build(), dev)) {
            List<String> keys = new ArrayList<>();
            List<PutRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                keys.add("m@0x00000000@0" + i);
                reqs.add(PutRequest.of(keys.get(i), data(4096, i)));
            }
            assertThat(core.put(reqs)).containsOnly(true);
            dev.hold(); // the device takes its time with the deallocation
            assertThat(core.delete(List.of(keys.get(1), keys.get(2), keys.get(5)), false)).containsOnly(true);
            assertThat(dev.heldCount()).as("delete returned with its deallocation still queued").isEqualTo(1);
            assertThat(core.freeSlots()).as("no slot is reused before its deallocation completed").isZero();
            CompletableFuture<PutOutcome[]> waiting = new CompletableFuture<>();
            core.putOutcomesAsync(List.of(PutRequest.of("m@0x00000000@99", data(4096, 9))), waiting::complete);
            assertThat(waiting).as("a put finding the device full waits for the slots on their way").isNotDone();
            dev.release();
            assertThat(dev.deallocations()).extracting(r -> r[1]).as("slots 1-2 as one range, 5 as another")
                    .containsExactly(2 * SLOT, SLOT);
            assertThat(waiting.get(10, TimeUnit.SECONDS)).containsExactly(PutOutcome.STORED);
            assertThat(core.freeSlots()).isEqualTo(2);
            assertThat(core.status()).containsEntry("device_full_rejects", 0L);
        }
    }

    @Test
    void aSlotFreedAfterAConcurrentLoadAndACancelledWriteAreDeallocatedToo() throws Exception {
        FaultInjectingDevice dev = fdpLike(8);
        try (RawBlockCore core = RawBlockCore.open(v1Config(8).build(), dev)) {
            String loaded = "m@0x00000000@01";
            assertThat(core.put(List.of(PutRequest.of(loaded, data(4096, 1))))).containsExactly(true);
            dev.hold();
            CompletableFuture<boolean[]> load = new CompletableFuture<>();
            core.loadAsync(List.of(new LoadRequest(loaded, data(4096, 0))), load::complete);
            String cancelled = "m@0x00000000@02";
            CompletableFuture<PutOutcome[]> put = new CompletableFuture<>();
            core.putOutcomesAsync(List.of(PutRequest.of(cancelled, data(4096, 2))), put::complete);
            assertThat(core.delete(List.of(loaded, cancelled), false)).containsExactly(true, true);
            assertThat(dev.deallocations()).as("nothing freed while the load and the write are in flight").isEmpty();
            dev.release();
            assertThat(load.get(10, TimeUnit.SECONDS)).containsExactly(true);
            assertThat(put.get(10, TimeUnit.SECONDS)).containsExactly(PutOutcome.CANCELLED);
            assertThat(dev.deallocations()).hasSize(2);
            assertThat(core.freeSlots()).isEqualTo(8);
        }
    }

    @Test
    void aFailedBufferRegistrationFallsBackToThePlainPathWithAWarning() throws Exception {
        FaultInjectingDevice dev = new FaultInjectingDevice(device(8));
        dev.failRegistration();
        try (RawBlockCore core = RawBlockCore.open(config("memory", 8).build(), dev)) {
            assertThat(core.put(List.of(PutRequest.of("m@0x00000000@01", data(4096, 5))))).containsExactly(true);
            MemorySegment back = data(4096, 0);
            assertThat(core.load(List.of(new LoadRequest("m@0x00000000@01", back)))).containsExactly(true);
            assertThat(back.mismatch(data(4096, 5))).isEqualTo(-1);
        }
    }

    @Test
    void aFileDeviceIsAllocatedWhenCreatedAndTooLittleSpaceIsAClearErrorNotAFileLeftBehind() throws Exception {
        Path file = dir.resolve("big.img");
        long free = Files.getFileStore(dir).getUsableSpace();
        long tooBig = (free + (64L << 30)) / 4096 * 4096;
        assertThatThrownBy(() -> BlockDevices.createFile(file, tooBig)).isInstanceOf(IOException.class)
                .hasMessageContaining("fallocate").hasMessageMatching("(?s).*(ENOSPC|EFBIG).*");
        assertThat(file).doesNotExist();

        Path small = BlockDevices.createFile(dir.resolve("small.img"), 8 << 20);
        assertThat(Files.size(small)).isEqualTo(8 << 20);
        Process stat = new ProcessBuilder("stat", "-c", "%b %B", small.toString()).start();
        String[] blocks = new String(stat.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim().split(" ");
        assertThat(stat.waitFor()).isZero();
        assertThat(Long.parseLong(blocks[0]) * Long.parseLong(blocks[1])).as("blocks reserved, not a sparse file")
                .isGreaterThanOrEqualTo(8 << 20);
    }
}
