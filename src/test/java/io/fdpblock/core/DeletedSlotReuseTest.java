package io.fdpblock.core;

import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.PowerLossDevice;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * fdpblock_v2 reuses a deleted key's slot at once, before the delete's record is durable: a full
 * device's puts wait for no commit. A power loss may then leave the deleted key's entry over the new
 * key's bytes, whole or torn under the old header; no load serves them, under either
 * {@code verify_payload}.
 */
@Tag("unit")
class DeletedSlotReuseTest {
    private static final long SLOT = 16 << 10;
    /** Far beyond any test: nothing is committed but what the test asks for. */
    private static final int INTERVAL_MS = 600_000;

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        arena.close();
    }

    private static RawBlockCoreConfig config(int slots, RawBlockCoreConfig.VerifyPayload verify) {
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, slots);
        return RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(meta + slots * SLOT).metaTotalBytes(meta)
                .metaEnablePeriodic(false).metaSyncIntervalMs(INTERVAL_MS).ioEngine(IoEngine.MEMORY)
                .verifyPayload(verify).build();
    }

    private List<PutRequest> puts(int from, int count) {
        List<PutRequest> l = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            l.add(PutRequest.of("m@0x00000000@" + i, arena.allocate(4096, 4096).fill((byte) i)));
        }
        return l;
    }

    private static long stat(RawBlockCore core, String key) {
        return ((Number) core.status().get(key)).longValue();
    }

    private MemorySegment read(PowerLossDevice device, long offset) throws IOException {
        MemorySegment block = arena.allocate(4096, 4096);
        IoBatch b = new IoBatch(1);
        b.read(offset, block);
        device.execute(b);
        return block;
    }

    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.VerifyPayload.class)
    void aSlotReusedBeforeItsDeleteIsDurableNeverServesAnotherKeysBytes(RawBlockCoreConfig.VerifyPayload verify)
            throws Exception {
        RawBlockCoreConfig cfg = config(2, verify);
        PowerLossDevice device = new PowerLossDevice(cfg.capacityBytes(), 4096, false, 7);
        List<PutRequest> two = puts(0, 2);
        PutRequest third = puts(2, 1).get(0);
        try {
            RawBlockCore core = RawBlockCore.open(cfg, device);
            assertThat(core.put(two)).containsOnly(true); // the device is full
            core.checkpointNow(); // both keys durable
            int slot0 = core.index.get(new StoreKey(two.get(0).key())).slot();
            MemorySegment oldHeader = read(device, core.slotOffset(slot0));
            long commits = stat(core, "log_commits");
            assertThat(core.delete(List.of(two.get(0).key()), false)).containsOnly(true); // its record waits
            CompletableFuture<PutOutcome[]> put = new CompletableFuture<>();
            core.putOutcomesAsync(List.of(third), put::complete);
            assertThat(put.get(10, TimeUnit.SECONDS)).containsOnly(PutOutcome.STORED);
            assertThat(core.index.get(new StoreKey(third.key())).slot()).as("the deleted key's slot").isEqualTo(slot0);
            assertThat(stat(core, "slot_waits")).isZero();
            assertThat(stat(core, "log_commits")).as("no commit was needed for the slot").isEqualTo(commits);
            long slot0Offset = core.slotOffset(slot0);
            device.flush(); // the new key's bytes are durable; the delete's record and its PUT are not
            device.powerLoss();
            try {
                core.close();
            } catch (IOException | RuntimeException e) {
                // its final commit fails: the power is gone
            }
            PowerLossDevice back = device.afterPowerLoss(8);
            try {
                for (boolean tornUnderOldHeader : new boolean[] {false, true}) {
                    if (tornUnderOldHeader) { // as if only the payload of the new key's write had landed
                        IoBatch b = new IoBatch(1);
                        b.write(slot0Offset, oldHeader);
                        back.execute(b);
                    }
                    try (RawBlockCore reopened = RawBlockCore.open(cfg, back)) {
                        // the delete was lost: the deleted key is back, its entry over the new key's bytes
                        assertThat(reopened.exists(List.of(two.get(0).key(), two.get(1).key(), third.key()), false))
                                .containsExactly(true, true, false);
                        MemorySegment into = arena.allocate(4096, 4096);
                        assertThat(reopened.load(List.of(new LoadRequest(two.get(0).key(), into))))
                                .as("another key's bytes (old header: %s) are a miss", tornUnderOldHeader)
                                .containsExactly(false);
                        // the CRC32C, known from the log, tells the new key's bytes apart under both settings
                        // ("recovery" checks it on the first load of a slot whose bytes predate the open), and
                        // an intact old header over them hides nothing: the header is not what is checked
                        assertThat(stat(reopened, "crc_mismatches")).isEqualTo(1);
                        assertThat(reopened.load(List.of(new LoadRequest(two.get(1).key(), into))))
                                .containsExactly(true);
                        assertThat(into.mismatch(two.get(1).payload())).isEqualTo(-1);
                    }
                }
            } finally {
                back.release();
            }
        } finally {
            device.release();
        }
    }
}
