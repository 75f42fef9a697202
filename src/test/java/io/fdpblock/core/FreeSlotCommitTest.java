package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.PowerLossDevice;
import io.fdpblock.nvme.PlacementId;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * fdpblock_v2 with {@code verify_payload} "recovery" reuses a deleted key's slot only once its delete
 * record is durable. When the free slots run short while such slots wait, the put that took the last ones
 * asks for the commit, so that the next puts find slots instead of all waiting for it; with free slots to
 * spare, nothing is committed before the interval. With "always" (every load checks the payload's CRC32C)
 * the slot is reused at once, and a power loss before the delete is durable never serves the new key's
 * bytes as the deleted key's.
 */
@Tag("unit")
class FreeSlotCommitTest {
    private static final long SLOT = 16 << 10;
    /** Far beyond any test: a commit seen here was asked for, not the interval's. */
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

    /** A store whose deleted slots wait for their record ({@code verify_payload} "recovery"). */
    private static RawBlockCore open(int slots) throws Exception {
        RawBlockCoreConfig cfg = config(slots, RawBlockCoreConfig.VerifyPayload.RECOVERY);
        return RawBlockCore.open(cfg, BlockDevices.memory(cfg.capacityBytes(), 4096));
    }

    private List<PutRequest> puts(int from, int count) {
        List<PutRequest> l = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            l.add(PutRequest.of("m@0x00000000@" + i, arena.allocate(4096, 4096).fill((byte) i)));
        }
        return l;
    }

    private static List<String> keys(int from, int count) {
        List<String> l = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            l.add("m@0x00000000@" + i);
        }
        return l;
    }

    private static long stat(RawBlockCore core, String key) {
        return ((Number) core.status().get(key)).longValue();
    }

    @Test
    void aPutTakingTheLastFreeSlotsWhileDeletedOnesWaitAsksForTheCommit() throws Exception {
        try (RawBlockCore core = open(8)) {
            assertThat(core.put(puts(0, 6))).containsOnly(true); // 2 slots left free
            long commits = stat(core, "log_commits");
            assertThat(core.delete(keys(0, 4), false)).containsOnly(true); // 4 slots wait for their record
            assertThat(core.freeSlots()).isEqualTo(2);
            // takes the last 2: no put waits, but the next one would
            assertThat(core.putWithOutcome(puts(10, 2))).containsOnly(PutOutcome.STORED);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (core.freeSlots() < 4 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(core.freeSlots()).as("the deleted slots are back, long before the interval").isEqualTo(4);
            assertThat(stat(core, "log_commits")).isGreaterThan(commits);
            assertThat(stat(core, "slot_waits")).as("no put waited for them").isZero();
            // and the next puts find those slots at once
            assertThat(core.putWithOutcome(puts(20, 4))).containsOnly(PutOutcome.STORED);
            assertThat(stat(core, "slot_waits")).isZero();
        }
    }

    @Test
    void withFreeSlotsToSpareNothingIsCommittedBeforeTheInterval() throws Exception {
        try (RawBlockCore core = open(16)) {
            assertThat(core.put(puts(0, 6))).containsOnly(true);
            long commits = stat(core, "log_commits");
            assertThat(core.delete(keys(0, 4), false)).containsOnly(true);
            assertThat(core.putWithOutcome(puts(10, 2))).containsOnly(PutOutcome.STORED); // 8 of 10 free left
            Thread.sleep(200);
            assertThat(stat(core, "log_commits")).isEqualTo(commits);
            assertThat(core.freeSlots()).as("the deleted slots still wait for their record").isEqualTo(8);
        }
    }

    @Test
    void aCommitAskedForSlotsWaitsForADeleteRecordToCommit() throws Exception {
        V2Layout layout = V2Layout.create(4096, 4096, 8192, RawBlockCoreConfig.v2MetaBytesFor(4096, 64) + 64L * 8192,
                0, 1 << 20, 42);
        try (BlockDevice device = BlockDevices.memory(layout.metaTotalBytes(), 4096)) {
            MetaLog log = new MetaLog(device, layout, 0, 0, 0, INTERVAL_MS, false, PlacementId.NONE, () -> { });
            log.start("slots-request");
            try {
                log.appendPut(1, 2, 0, 512, 7, 0, 0, "m@0x00000000@0".getBytes(StandardCharsets.UTF_8));
                log.requestCommit();
                Thread.sleep(200);
                assertThat(log.commits()).as("puts alone free no slot: no commit (and its flush) before the interval")
                        .isZero();
                long ticket = log.appendDelete(1, 2, 0);
                CompletableFuture<Long> durable = new CompletableFuture<>();
                log.whenDurable(ticket, durable::complete);
                assertThat(durable.get(10, TimeUnit.SECONDS)).as("the request stands: the delete commits at once")
                        .isEqualTo(ticket);
                assertThat(log.commits()).isEqualTo(1);
            } finally {
                log.stop(10_000);
                log.release();
            }
        }
    }

    @Test
    void aPutFindingNoSlotWaitsForTheCommitAndCountsAsASlotWait() throws Exception {
        try (RawBlockCore core = open(8)) {
            assertThat(core.put(puts(0, 8))).containsOnly(true);
            assertThat(core.delete(keys(0, 2), false)).containsOnly(true);
            CompletableFuture<PutOutcome[]> put = new CompletableFuture<>();
            core.putOutcomesAsync(puts(10, 2), put::complete);
            assertThat(put.get(10, TimeUnit.SECONDS)).containsOnly(PutOutcome.STORED);
            assertThat(stat(core, "slot_waits")).isEqualTo(2);
            assertThat(stat(core, "log_commits")).isPositive();
        }
    }

    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.VerifyPayload.class)
    void aSlotReusedBeforeItsDeleteIsDurableNeverServesAnotherKeysBytes(RawBlockCoreConfig.VerifyPayload verify)
            throws Exception {
        boolean always = verify == RawBlockCoreConfig.VerifyPayload.ALWAYS;
        RawBlockCoreConfig cfg = config(2, verify);
        PowerLossDevice device = new PowerLossDevice(cfg.capacityBytes(), 4096, false, 7);
        List<PutRequest> two = puts(0, 2);
        PutRequest third = puts(2, 1).get(0);
        try {
            RawBlockCore core = RawBlockCore.open(cfg, device);
            assertThat(core.put(two)).containsOnly(true); // the device is full
            core.checkpointNow(); // both keys durable
            int slot0 = core.index.get(two.get(0).key()).slot();
            long commits = stat(core, "log_commits");
            assertThat(core.delete(List.of(two.get(0).key()), false)).containsOnly(true); // its record waits
            CompletableFuture<PutOutcome[]> put = new CompletableFuture<>();
            core.putOutcomesAsync(List.of(third), put::complete);
            assertThat(put.get(10, TimeUnit.SECONDS)).containsOnly(PutOutcome.STORED);
            assertThat(core.index.get(third.key()).slot()).as("the deleted key's slot").isEqualTo(slot0);
            assertThat(stat(core, "slot_waits")).isEqualTo(always ? 0 : 1);
            assertThat(stat(core, "log_commits")).as("a commit only where the slot waited for it")
                    .isEqualTo(always ? commits : commits + 1);
            device.flush(); // the new key's bytes are durable; its record and (always) the delete's are not
            device.powerLoss();
            try {
                core.close();
            } catch (java.io.IOException | RuntimeException e) {
                // its final commit fails: the power is gone
            }
            PowerLossDevice back = device.afterPowerLoss(8);
            try (RawBlockCore reopened = RawBlockCore.open(cfg, back)) {
                // always: the delete was lost, so the deleted key is back, pointing at the new key's bytes
                assertThat(reopened.exists(List.of(two.get(0).key(), two.get(1).key(), third.key()), false))
                        .containsExactly(always, true, false);
                MemorySegment into = arena.allocate(4096, 4096);
                assertThat(reopened.load(List.of(new LoadRequest(two.get(0).key(), into))))
                        .as("another key's bytes are a miss").containsExactly(false);
                assertThat(stat(reopened, "crc_mismatches")).isEqualTo(always ? 1 : 0);
                assertThat(reopened.load(List.of(new LoadRequest(two.get(1).key(), into)))).containsExactly(true);
                assertThat(into.mismatch(two.get(1).payload())).isEqualTo(-1);
            } finally {
                back.release();
            }
        } finally {
            device.release();
        }
    }
}
