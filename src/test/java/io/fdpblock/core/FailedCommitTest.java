package io.fdpblock.core;

import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.core.v2.V2Meta;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoEngine;
import io.fdpblock.linux.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A metadata commit (fdpblock_v2's log write or its flush, lmcache_v1's checkpoint) that fails with
 * ENOSPC or EIO: no later put is acknowledged, the status and close() say what was not made durable,
 * durable keys stay readable, and the reopened store holds every acknowledged key not reported lost.
 * A failed data write fails its own put only.
 */
@Tag("unit")
class FailedCommitTest {
    private static final long SLOT = 16 << 10;
    private static final int SLOTS = 64;
    /** No commit by the clock: the test says when ({@link RawBlockCore#checkpointNow}). */
    private static final int NEVER_MS = 3_600_000;

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void freeBuffers() {
        arena.close();
    }

    /** Where a fault hits and with which errno. */
    enum Fault {
        META_WRITE_ENOSPC(Errno.ENOSPC, false),
        META_WRITE_EIO(Errno.EIO, false),
        FLUSH_EIO(Errno.EIO, true),
        FLUSH_ENOSPC(Errno.ENOSPC, true);

        final int errno;
        final boolean flush;

        Fault(int errno, boolean flush) {
            this.errno = errno;
            this.flush = flush;
        }

        String errnoName() {
            return Errno.name(errno);
        }

        /** Arms it: writes to [from, to) fail, or every flush does. */
        void arm(FaultInjectingDevice dev, long from, long to) {
            if (flush) {
                dev.failFlushes(errno);
            } else {
                dev.failWrites(from, to, errno);
            }
        }
    }

    private static long v2Meta() {
        return RawBlockCoreConfig.v2MetaBytesFor(4096, SLOTS);
    }

    private static RawBlockCoreConfig v2(int syncMs) {
        return RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(v2Meta() + SLOTS * SLOT).metaTotalBytes(v2Meta())
                .metaSyncIntervalMs(syncMs).metaEnablePeriodic(false).ioEngine(IoEngine.MEMORY).build();
    }

    private static final long V1_META = 1 << 20;

    private static RawBlockCoreConfig v1() {
        return RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(V1_META + SLOTS * SLOT).metaTotalBytes(V1_META)
                .metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1).metaEnablePeriodic(false)
                .ioEngine(IoEngine.MEMORY).build();
    }

    private static String key(int i) {
        return "m@0x00000000@" + String.format("%04x", i);
    }

    private MemorySegment data(int i) {
        return arena.allocate(4096, 4096).fill((byte) (i + 1));
    }

    private PutOutcome put(RawBlockCore core, int i) {
        return core.putWithOutcome(List.of(PutRequest.of(key(i), data(i))))[0];
    }

    private void assertHolds(RawBlockCore core, int i) {
        assertThat(core.exists(List.of(key(i)), false)).as("%s is held", key(i)).containsExactly(true);
        MemorySegment into = arena.allocate(4096, 4096);
        assertThat(core.load(List.of(new LoadRequest(key(i), into)))).as("%s loads", key(i)).containsExactly(true);
        assertThat(into.mismatch(data(i))).as("%s has its bytes", key(i)).isEqualTo(-1L);
    }

    private void assertLacks(RawBlockCore core, int i) {
        assertThat(core.exists(List.of(key(i)), false)).as("%s is not held", key(i)).containsExactly(false);
    }

    /** A later put is refused with the cause: the device, the errno and what to do. */
    private void assertRefusesPuts(RawBlockCore core, int i, String errno) {
        assertThat(put(core, i)).isEqualTo(PutOutcome.READ_ONLY);
        assertThatThrownBy(() -> core.put(List.of(PutRequest.of(key(i), data(i)))))
                .isInstanceOf(StoreReadOnlyException.class).hasMessageContaining(errno)
                .hasMessageContaining(core.device().path()).hasMessageContaining("reopen");
        assertThat(core.readOnlyCause()).isInstanceOf(StoreReadOnlyException.class).hasMessageContaining(errno);
        assertLacks(core, i);
    }

    // ------------------------------------------------------------------ fdpblock_v2

    /**
     * {@code meta_sync_interval_ms} > 0: puts are acknowledged before their record is durable. A commit
     * fails: the puts of its batch are counted as acknowledged and not made durable, later puts are
     * refused, durable keys stay readable, close() names the count, the reopen holds the durable keys.
     */
    @ParameterizedTest
    @EnumSource(Fault.class)
    void afterAFailedLogCommitNoPutIsAcknowledgedAndTheLostOnesAreCounted(Fault fault) throws Exception {
        BlockDevice inner = BlockDevices.memory(v2Meta() + SLOTS * SLOT, 4096);
        FaultInjectingDevice dev = new FaultInjectingDevice(inner);
        RawBlockCoreConfig config = v2(NEVER_MS);
        RawBlockCore core = RawBlockCore.open(config, dev);
        for (int i = 0; i < 10; i++) {
            assertThat(put(core, i)).isEqualTo(PutOutcome.STORED);
        }
        core.checkpointNow(); // 0..9 durable
        for (int i = 10; i < 15; i++) {
            assertThat(put(core, i)).as("acknowledged before durable").isEqualTo(PutOutcome.STORED);
        }
        V2Layout layout = ((V2Meta) core.meta).layout();
        fault.arm(dev, layout.logOffset(), layout.logOffset() + layout.logBytes());
        assertThatThrownBy(core::checkpointNow).isInstanceOf(IOException.class).hasMessageContaining(fault.errnoName());
        long writesAtFailure = writeSubmissions(dev);

        assertRefusesPuts(core, 20, fault.errnoName());
        Map<String, Object> s = core.status();
        assertThat(s.get("is_healthy")).isEqualTo(false);
        assertThat(s.get("read_only")).isEqualTo(true);
        assertThat((String) s.get("read_only_reason")).contains(fault.errnoName()).contains(dev.path())
                .contains("reopen");
        assertThat(s.get("acknowledged_not_durable_keys")).as("the batch that failed").isEqualTo(5L);
        dev.clearFaults(); // even once the device would take writes again: a failed flush may have dropped them
        assertRefusesPuts(core, 21, fault.errnoName());
        for (int i = 0; i < 10; i++) {
            assertHolds(core, i); // durable keys keep loading
        }
        assertThat(core.delete(List.of(key(9)), false)).containsExactly(true);
        assertLacks(core, 9);
        assertThat(core.status().get("not_durable_deletes")).as("its record is never written").isEqualTo(1L);
        assertThatThrownBy(core::close).isInstanceOf(IOException.class)
                .hasMessageContaining("5 acknowledged puts were not made durable")
                .hasMessageContaining("1 delete was not made durable").hasMessageContaining(fault.errnoName());
        assertThat(writeSubmissions(dev)).as("nothing was written after the failure, close included")
                .isEqualTo(writesAtFailure);

        try (RawBlockCore again = RawBlockCore.open(config, inner)) {
            for (int i = 0; i < 10; i++) {
                assertHolds(again, i); // 9 too: its delete was reported not durable (and its slot was not reused)
            }
            for (int i = 10; i < 15; i++) {
                if (!fault.flush) {
                    assertLacks(again, i); // their chunk never reached the device: counted as lost, and lost
                }
            }
            assertLacks(again, 20);
            assertLacks(again, 21);
            assertThat(again.status().get("is_healthy")).isEqualTo(true);
            assertThat(put(again, 30)).as("a reopened store takes puts").isEqualTo(PutOutcome.STORED);
        }
    }

    private static long writeSubmissions(FaultInjectingDevice dev) {
        return dev.submissions().stream().filter(x -> x.writes() > 0).count();
    }

    /**
     * {@code meta_sync_interval_ms} 0: a put waits for its record to be durable. The put whose commit
     * fails is not acknowledged and not held; later puts are refused with the cause.
     */
    @ParameterizedTest
    @EnumSource(Fault.class)
    void withAcknowledgementOnDurabilityTheFailedPutIsNotHeldAndLaterPutsAreRefused(Fault fault) throws Exception {
        BlockDevice inner = BlockDevices.memory(v2Meta() + SLOTS * SLOT, 4096);
        FaultInjectingDevice dev = new FaultInjectingDevice(inner);
        RawBlockCoreConfig config = v2(0);
        RawBlockCore core = RawBlockCore.open(config, dev);
        for (int i = 0; i < 5; i++) {
            assertThat(put(core, i)).isEqualTo(PutOutcome.STORED);
        }
        V2Layout layout = ((V2Meta) core.meta).layout();
        int freeBefore = core.freeSlots();
        fault.arm(dev, layout.logOffset(), layout.logOffset() + layout.logBytes());
        assertThat(put(core, 5)).as("its commit failed").isEqualTo(PutOutcome.IO_ERROR);
        assertLacks(core, 5); // not acknowledged: not served either
        Map<String, Object> s = core.status();
        assertThat(s.get("is_healthy")).isEqualTo(false);
        assertThat(s.get("read_only")).isEqualTo(true);
        assertThat(s.get("acknowledged_not_durable_keys")).as("none was acknowledged").isEqualTo(0L);
        assertRefusesPuts(core, 6, fault.errnoName());
        assertThat(core.freeSlots()).as("a refused put takes no slot").isGreaterThanOrEqualTo(freeBefore - 1);
        for (int i = 0; i < 5; i++) {
            assertHolds(core, i);
        }
        assertThatThrownBy(core::close).isInstanceOf(IOException.class)
                .hasMessageContaining("no acknowledged put was lost").hasMessageContaining(fault.errnoName());
        try (RawBlockCore again = RawBlockCore.open(config, inner)) {
            for (int i = 0; i < 5; i++) {
                assertHolds(again, i);
            }
            assertLacks(again, 6);
            if (!fault.flush) {
                assertLacks(again, 5);
            }
        }
    }

    /** A slot write that fails (ENOSPC, EIO) fails that put only: nothing indexed, its slot back, the store healthy. */
    @ParameterizedTest
    @EnumSource(value = Fault.class, names = {"META_WRITE_ENOSPC", "META_WRITE_EIO"})
    void aFailedDataWriteFailsThatPutOnly(Fault fault) throws Exception {
        for (RawBlockCoreConfig config : List.of(v2(NEVER_MS), v2(0), v1())) {
            long meta = config.metaFormat() == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? V1_META : v2Meta();
            BlockDevice inner = BlockDevices.memory(meta + SLOTS * SLOT, 4096);
            FaultInjectingDevice dev = new FaultInjectingDevice(inner);
            try (RawBlockCore core = RawBlockCore.open(config, dev)) {
                assertThat(put(core, 0)).isEqualTo(PutOutcome.STORED);
                int free = core.freeSlots();
                dev.failWrites(core.dataBase, core.dataBase + SLOTS * SLOT, fault.errno);
                assertThat(put(core, 1)).isEqualTo(PutOutcome.IO_ERROR);
                dev.clearFaults();
                assertLacks(core, 1);
                assertThat(core.freeSlots()).as("its slot is back").isEqualTo(free);
                Map<String, Object> s = core.status();
                assertThat(s.get("is_healthy")).as(config.metaFormat() + ": a data write is not a commit").isEqualTo(true);
                assertThat(s.get("read_only")).isEqualTo(false);
                assertThat(core.readOnlyCause()).isNull();
                assertThat(put(core, 2)).isEqualTo(PutOutcome.STORED);
                assertThat(put(core, 1)).as("the failed key can be put again").isEqualTo(PutOutcome.STORED);
            }
            try (RawBlockCore again = RawBlockCore.open(config, inner)) {
                for (int i = 0; i < 3; i++) {
                    assertHolds(again, i);
                }
                assertThat(again.keyCount()).isEqualTo(3);
            }
        }
    }

    // ------------------------------------------------------------------ lmcache_v1

    /**
     * A checkpoint that fails makes the store read-only until one succeeds: the puts since the last
     * durable checkpoint are counted, later puts refused; the next checkpoint that succeeds makes them
     * durable and takes puts again.
     */
    @ParameterizedTest
    @EnumSource(Fault.class)
    void aFailedCheckpointRefusesPutsUntilACheckpointSucceeds(Fault fault) throws Exception {
        BlockDevice inner = BlockDevices.memory(V1_META + SLOTS * SLOT, 4096);
        FaultInjectingDevice dev = new FaultInjectingDevice(inner);
        RawBlockCoreConfig config = v1();
        RawBlockCore core = RawBlockCore.open(config, dev);
        for (int i = 0; i < 4; i++) {
            assertThat(put(core, i)).isEqualTo(PutOutcome.STORED);
        }
        core.checkpointNow();
        for (int i = 4; i < 7; i++) {
            assertThat(put(core, i)).isEqualTo(PutOutcome.STORED);
        }
        fault.arm(dev, 0, V1_META);
        assertThatThrownBy(core::checkpointNow).isInstanceOf(IOException.class).hasMessageContaining(fault.errnoName());
        assertRefusesPuts(core, 20, fault.errnoName());
        Map<String, Object> s = core.status();
        assertThat(s.get("is_healthy")).isEqualTo(false);
        assertThat(s.get("read_only")).isEqualTo(true);
        assertThat((String) s.get("read_only_reason")).contains(fault.errnoName()).contains(dev.path());
        assertThat(s.get("acknowledged_not_durable_keys")).isEqualTo(3L);
        for (int i = 0; i < 7; i++) {
            assertHolds(core, i);
        }

        dev.clearFaults();
        core.checkpointNow(); // succeeds: 4..6 are durable, puts are taken again
        s = core.status();
        assertThat(s.get("is_healthy")).isEqualTo(true);
        assertThat(s.get("read_only")).isEqualTo(false);
        assertThat(s.get("acknowledged_not_durable_keys")).isEqualTo(0L);
        assertThat(put(core, 7)).isEqualTo(PutOutcome.STORED);
        core.close();
        try (RawBlockCore again = RawBlockCore.open(config, inner)) {
            for (int i = 0; i < 8; i++) {
                assertHolds(again, i);
            }
            assertLacks(again, 20);
        }
    }

    /** The final checkpoint fails too: close() names how many acknowledged puts were not made durable. */
    @ParameterizedTest
    @EnumSource(Fault.class)
    void closeAfterAFailedCheckpointSaysHowManyAcknowledgedPutsAreNotDurable(Fault fault) throws Exception {
        BlockDevice inner = BlockDevices.memory(V1_META + SLOTS * SLOT, 4096);
        FaultInjectingDevice dev = new FaultInjectingDevice(inner);
        RawBlockCoreConfig config = v1();
        RawBlockCore core = RawBlockCore.open(config, dev);
        for (int i = 0; i < 4; i++) {
            assertThat(put(core, i)).isEqualTo(PutOutcome.STORED);
        }
        core.checkpointNow();
        for (int i = 4; i < 7; i++) {
            assertThat(put(core, i)).isEqualTo(PutOutcome.STORED);
        }
        fault.arm(dev, 0, V1_META);
        assertThatThrownBy(core::close).isInstanceOf(IOException.class)
                .hasMessageContaining("3 acknowledged puts were not made durable").hasMessageContaining(fault.errnoName());
        try (RawBlockCore again = RawBlockCore.open(config, inner)) {
            for (int i = 0; i < 4; i++) {
                assertHolds(again, i);
            }
            List<Integer> kept = new ArrayList<>();
            for (int i = 4; i < 7; i++) {
                if (again.exists(List.of(key(i)), false)[0]) {
                    kept.add(i);
                }
            }
            assertThat(kept).as("the checkpoint header that would commit them was never written").isEmpty();
        }
    }
}
