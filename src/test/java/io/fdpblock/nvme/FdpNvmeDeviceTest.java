package io.fdpblock.nvme;

import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.devicetier.DeviceGuest;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.linux.EventFd;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * On a real NVMe namespace with FDP: the emulated one of the device tier (QEMU, in the guest), or a real
 * FDP SSD named by {@code FDPBLOCK_NVME_DEVICE=/dev/ngXnY} (opt-in; its data is overwritten).
 *
 * <p>Layout on the namespace: the store uses the first 256 MiB; raw command tests use LBAs from 384 MiB.
 */
@Tag("device")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FdpNvmeDeviceTest {
    static final String DEVICE = System.getenv("FDPBLOCK_NVME_DEVICE");
    static final long STORE_BYTES = DeviceGuest.STORE_BYTES;
    static final long RAW_BASE = 384L << 20;

    @BeforeAll
    static void needsADevice() {
        assumeTrue(DEVICE != null && Files.exists(Path.of(DEVICE)),
                "FDPBLOCK_NVME_DEVICE is not set to an NVMe generic device: the device tier runs in the emulated"
                        + " FDP guest (make test) or against a real FDP SSD");
    }

    private static void fill(MemorySegment s, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG, i, r.nextLong());
        }
    }

    @Test
    @Order(1)
    void fdpIsDiscovered() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(DEVICE)) {
            assertThat(ns.identifyController().fdpSupported()).as("CTRATT bit 19").isTrue();
            assertThat(ns.adminTransport()).as("admin commands over the ring").startsWith("uring_cmd");
            assertThat(ns.isFdpEnabled()).isTrue();
            FdpRecords.FdpConfiguration c = ns.activeFdpConfiguration();
            assertThat(c.valid()).isTrue();
            assertThat(c.reclaimUnitHandles()).isGreaterThanOrEqualTo(2);
            assertThat(c.reclaimUnitBytes()).isGreaterThan(0);
            assertThat(c.rgif()).isBetween(0, 15);
            FdpRecords.RuhStatus rs = ns.ruhStatus();
            assertThat(rs.entries()).hasSize(c.reclaimUnitHandles());
            assertThat(rs.placementIds()).doesNotHaveDuplicates();
            assertThat(ns.ruhUsage().attributes()).hasSize(c.reclaimUnitHandles());
            System.out.println("FDP: " + c + "\nRUH status: " + rs);
        }
    }

    @Test
    @Order(2)
    void passthruRoundTripsAtSeveralLbasAndSizesUpToAndBeyondTheMaxTransfer() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(DEVICE)) {
            int max = ns.maxTransferBytes();
            int lba = ns.lbaSize();
            long[] sizes = {lba, 8L * lba, max, max + lba, 3L * max + 5L * lba};
            try (BlockDevice dev = BlockDevices.open(Path.of(DEVICE), DeviceOptions.of(IoEngine.URING_CMD)
                    .withQueueDepth(32).withBuffers(1 << 20, 4)); Arena arena = Arena.ofShared()) {
                assertThat(dev.engine()).isEqualTo(IoEngine.URING_CMD);
                long offset = RAW_BASE;
                IoBatch w = new IoBatch();
                List<MemorySegment> written = new ArrayList<>();
                List<Long> offsets = new ArrayList<>();
                for (int i = 0; i < sizes.length; i++) {
                    MemorySegment buf = i == 1 ? dev.buffers().acquire().asSlice(0, sizes[i]) // a fixed buffer
                            : arena.allocate(sizes[i], 4096);
                    fill(buf, 100 + i);
                    w.write(offset, buf);
                    written.add(buf);
                    offsets.add(offset);
                    offset += (sizes[i] + (1 << 20)) / (1 << 20) * (1 << 20);
                }
                dev.execute(w);
                IoBatch r = new IoBatch();
                List<MemorySegment> back = new ArrayList<>();
                for (int i = 0; i < sizes.length; i++) {
                    MemorySegment b = arena.allocate(sizes[i], 4096);
                    back.add(b);
                    r.read(offsets.get(i), b);
                }
                dev.execute(r);
                for (int i = 0; i < sizes.length; i++) {
                    assertThat(back.get(i).mismatch(written.get(i))).as("%d bytes at %d", sizes[i], offsets.get(i))
                            .isEqualTo(-1);
                }
                IoBatch dealloc = new IoBatch(1);
                dealloc.deallocate(offsets.get(0), lba);
                dev.execute(dealloc); // a Dataset Management command the device accepts
                dev.flush();
            }
        }
    }

    @Test
    @Order(3)
    void aWriteWithPlacementIdPLowersOnlyPsAvailableMediaWritesAndHbmwGrowsByTheBytesWritten() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(DEVICE); Arena arena = Arena.ofConfined()) {
            List<Integer> ids = ns.ruhStatus().placementIds();
            int p = ids.get(ids.size() - 1);
            ns.ruhUpdate(ids.stream().mapToInt(Integer::intValue).toArray()); // every handle on a fresh reclaim unit
            FdpRecords.RuhStatus before = ns.ruhStatus();
            FdpRecords.FdpStatistics statsBefore = ns.fdpStatistics();
            int blocks = 4;
            MemorySegment data = arena.allocate((long) blocks * ns.lbaSize(), 4096);
            fill(data, 7);
            ns.write((RAW_BASE + (64L << 20)) / ns.lbaSize(), data, p);
            FdpRecords.RuhStatus after = ns.ruhStatus();
            FdpRecords.FdpStatistics statsAfter = ns.fdpStatistics();
            for (FdpRecords.RuhStatusEntry e : before.entries()) {
                long delta = e.availableMediaWritesLbas() - after.forPlacementId(e.placementId()).availableMediaWritesLbas();
                assertThat(delta).as("RUAMW change of placement id %d", e.placementId())
                        .isEqualTo(e.placementId() == p ? blocks : 0);
            }
            assertThat(statsAfter.hostBytesWritten().subtract(statsBefore.hostBytesWritten()))
                    .isEqualTo(BigInteger.valueOf((long) blocks * ns.lbaSize()));
        }
    }

    @Test
    @Order(4)
    void ruhUpdateMovesAHandleToANewReclaimUnit() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(DEVICE); Arena arena = Arena.ofConfined()) {
            int p = ns.ruhStatus().placementIds().get(1);
            long full = ns.activeFdpConfiguration().reclaimUnitBytes() / ns.lbaSize();
            ns.ruhUpdate(p);
            MemorySegment data = arena.allocate(ns.lbaSize() * 2L, 4096);
            ns.write((RAW_BASE + (65L << 20)) / ns.lbaSize(), data, p);
            assertThat(ns.ruhStatus().forPlacementId(p).availableMediaWritesLbas()).isEqualTo(full - 2);
            ns.ruhUpdate(p);
            assertThat(ns.ruhStatus().forPlacementId(p).availableMediaWritesLbas()).as("a fresh reclaim unit")
                    .isEqualTo(full);
        }
    }

    @Test
    @Order(5)
    void anInvalidPlacementIdIsRefusedByTheStoreAndAtTheRawLayerBehavesAsTheDeviceDocuments() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(DEVICE); Arena arena = Arena.ofConfined()) {
            List<Integer> ids = ns.ruhStatus().placementIds();
            int invalid = 0x0FFF;
            assertThat(ids).doesNotContain(invalid);
            ns.ruhUpdate(ids.stream().mapToInt(Integer::intValue).toArray());
            FdpRecords.RuhStatus before = ns.ruhStatus();
            MemorySegment data = arena.allocate(ns.lbaSize(), 4096);
            // QEMU (docs/fdp.md section 2): an invalid placement id is written to placement id 0, no error, no event.
            // A real SSD may answer "Invalid Placement Handle List" instead: both are its documented behaviour.
            try {
                ns.write((RAW_BASE + (66L << 20)) / ns.lbaSize(), data, invalid);
                FdpRecords.RuhStatus after = ns.ruhStatus();
                int first = ids.get(0);
                assertThat(before.forPlacementId(first).availableMediaWritesLbas()
                        - after.forPlacementId(first).availableMediaWritesLbas()).isEqualTo(1);
            } catch (NvmeStatusException e) {
                assertThat(e.status().sc()).isEqualTo(0x2A);
            }
        }
        RawBlockCoreConfig cfg = storeConfig().build();
        DeviceGuest.wipeStore(cfg); // the raw writes above leave the metadata area neither a store nor zeros
        try (RawBlockL2Adapter a = RawBlockL2Adapter.open(cfg); Arena arena = Arena.ofShared()) {
            MemorySegment p = arena.allocate(4096, 4096);
            assertThatThrownBy(() -> a.core().put(List.of(PutRequest.of("m@0x00000000@ff", p).withPlacement(0x0FFF))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not reported");
        }
    }

    static RawBlockCoreConfig.Builder storeConfig() {
        return DeviceGuest.storeConfig(DEVICE);
    }

    private static Bitmap await(L2Adapter a, long id, boolean load) throws Exception {
        for (int i = 0; i < 600; i++) {
            Bitmap b = load ? a.queryLoadResult(id) : a.queryLookupAndLockResult(id);
            if (b != null) {
                return b;
            }
            EventFd.await(load ? a.loadEventFd() : a.lookupAndLockEventFd(), Duration.ofMillis(100));
        }
        throw new AssertionError("task " + id + " did not complete");
    }

    @Test
    @Order(6)
    void theStoreEndToEndOnTheNamespaceSpreadsDataByCacheSaltAndCheckpointsWithTheMetadataId() throws Exception {
        List<ObjectKey> keys = new ArrayList<>();
        String[] salts = {"rag:a", "chat:b", "rag:c", "chat:d", "nobucket", "rag:e"};
        for (int i = 0; i < salts.length; i++) {
            keys.add(ObjectKey.of("org/model", 0, new byte[] {9, (byte) i}).withCacheSalt(salts[i]));
        }
        int size = 600 * 1024; // more than the default 512 KiB max transfer: split into two commands
        Map<Integer, Long> ruamwBefore;
        DeviceGuest.wipeStore(storeConfig().build()); // whatever earlier tests wrote: a new store
        try (NvmeNamespace ns = NvmeNamespace.open(DEVICE)) {
            ns.ruhUpdate(ns.ruhStatus().placementIds().stream().mapToInt(Integer::intValue).toArray());
            ruamwBefore = ruamw(ns);
        }
        try (Arena arena = Arena.ofShared()) {
            List<MemoryObj> objs = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                MemorySegment s = arena.allocate(size, 4096);
                fill(s, 1000 + i);
                objs.add(MemoryObj.of(s));
            }
            try (RawBlockL2Adapter a = RawBlockL2Adapter.open(storeConfig().build())) {
                a.core().delete(keys.stream().map(ObjectKey::encoded).toList(), true); // a rerun starts clean
                long id = a.submitStoreTask(keys, objs);
                boolean done = false;
                for (int i = 0; i < 600 && !done; i++) {
                    EventFd.await(a.storeEventFd(), Duration.ofMillis(100));
                    var r = a.popCompletedStoreTasks().get(id);
                    if (r != null) {
                        assertThat(r.success()).isTrue();
                        done = true;
                    }
                }
                assertThat(done).isTrue();
                @SuppressWarnings("unchecked")
                Map<String, Integer> buckets = (Map<String, Integer>) a.reportStatus().get("fdp_buckets");
                assertThat(buckets).containsOnlyKeys("rag", "chat");
                assertThat(buckets.get("rag")).isNotEqualTo(buckets.get("chat")).isNotEqualTo(1);
            } // close: the final checkpoint goes to the metadata id
            Map<Integer, Long> ruamwAfter;
            try (NvmeNamespace ns = NvmeNamespace.open(DEVICE)) {
                ruamwAfter = ruamw(ns);
            }
            try (RawBlockL2Adapter b = RawBlockL2Adapter.open(storeConfig().build())) {
                @SuppressWarnings("unchecked")
                Map<String, Integer> none = (Map<String, Integer>) b.reportStatus().get("fdp_buckets");
                assertThat(none).isEmpty();
                Bitmap hits = await(b, b.submitLookupAndLockTask(keys), false);
                assertThat(hits.cardinality()).isEqualTo(keys.size());
                List<MemoryObj> bufs = new ArrayList<>();
                for (int i = 0; i < keys.size(); i++) {
                    bufs.add(MemoryObj.of(arena.allocate(1 << 20, 4096)));
                }
                assertThat(await(b, b.submitLoadTask(keys, bufs), true).cardinality()).isEqualTo(keys.size());
                for (int i = 0; i < keys.size(); i++) {
                    assertThat(bufs.get(i).segment().asSlice(0, size).mismatch(objs.get(i).segment())).isEqualTo(-1);
                }
                b.submitUnlock(keys);
                List<Integer> data = b.core().dataPlacementIds();
                // the first two data ids went to rag and chat (first come): both wrote, and the metadata id too
                // (a change, not a decrease: filling a reclaim unit moves the handle to a fresh one)
                assertThat(ruamwAfter.get(1)).as("checkpoints on the metadata id").isNotEqualTo(ruamwBefore.get(1));
                assertThat(ruamwAfter.get(data.get(0))).isNotEqualTo(ruamwBefore.get(data.get(0)));
                assertThat(ruamwAfter.get(data.get(1))).isNotEqualTo(ruamwBefore.get(data.get(1)));
                for (int unused : data.subList(2, data.size())) {
                    assertThat(ruamwAfter.get(unused)).as("id %d got no data", unused).isEqualTo(ruamwBefore.get(unused));
                }
            }
        }
    }

    private static Map<Integer, Long> ruamw(NvmeNamespace ns) throws Exception {
        Map<Integer, Long> m = new HashMap<>();
        for (FdpRecords.RuhStatusEntry e : ns.ruhStatus().entries()) {
            m.put(e.placementId(), e.availableMediaWritesLbas());
        }
        return m;
    }
}
