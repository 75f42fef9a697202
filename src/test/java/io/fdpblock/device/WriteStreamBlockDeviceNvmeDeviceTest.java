package io.fdpblock.device;

import io.fdpblock.devicetier.DeviceGuest;
import io.fdpblock.linux.Errno;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.nvme.FdpRecords;
import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.nvme.WriteStreams;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The io_uring engine on the namespace's block device {@code /dev/nvmeXnY} with the kernel's write streams
 * (Linux >= 6.16), checked at the device: discovery from sysfs against RUH Status and the FDP
 * configuration, each placement id's writes lowering exactly its own handle's RUAMW (FDP statistics
 * counting every byte), the kernel refusing a stream above its maximum, our engine refusing an id no
 * stream reaches before any I/O, and why the engine is O_DIRECT only. Skips where the kernel has no write
 * streams; fails in the streams guest if they are missing.
 */
@Tag("device")
@Tag(DeviceGuest.WRITE_STREAMS_TAG)
class WriteStreamBlockDeviceNvmeDeviceTest {
    /** Raw writes of this class go here and above (outside every store, apart from other raw tests). */
    private static final long BASE = DeviceGuest.RAW_BASE + (128L << 20);

    private DeviceGuest.WriteStreams sysfs;
    private Path generic;
    private Path block;

    @BeforeEach
    void needsWriteStreams() throws IOException {
        sysfs = DeviceGuest.requireWriteStreams();
        generic = DeviceGuest.device();
        block = Path.of("/dev", sysfs.blockName());
    }

    private BlockDevice open() throws IOException {
        return BlockDevices.open(block, DeviceOptions.of(IoEngine.IO_URING).withQueueDepth(32).withBuffers(1 << 20, 4));
    }

    private static Map<Integer, Long> ruamw(NvmeNamespace ns) throws IOException {
        Map<Integer, Long> m = new TreeMap<>();
        for (FdpRecords.RuhStatusEntry e : ns.ruhStatus().entries()) {
            m.put(e.placementId(), e.availableMediaWritesLbas());
        }
        return m;
    }

    /** Every handle on a fresh reclaim unit, so that no write of a test fills one (and switches it). */
    private static void freshReclaimUnits(NvmeNamespace ns) throws IOException {
        ns.ruhUpdate(ns.ruhStatus().placementIds().stream().mapToInt(Integer::intValue).toArray());
    }

    @Test
    void discoveryFromSysfsMatchesRuhStatusAndTheFdpConfiguration() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(generic.toString()); BlockDevice dev = open()) {
            List<Integer> ruh = ns.ruhStatus().placementIds();
            WriteStreams.Probe p = WriteStreams.probe(block);
            System.out.println("write streams: " + p.describe());
            assertThat(p.available()).as(p.describe()).isTrue();
            assertThat(p.blockName()).isEqualTo(sysfs.blockName());
            assertThat(p.maxStreams()).isEqualTo(sysfs.maxStreams()).isEqualTo(ruh.size());
            assertThat(p.granularityBytes()).isEqualTo(sysfs.granularityBytes())
                    .isEqualTo(ns.activeFdpConfiguration().reclaimUnitBytes());

            WriteStreams ws = WriteStreams.open(block);
            System.out.println("stream map: " + ws.describeMap());
            assertThat(ws.genericDevice()).isEqualTo(generic);
            assertThat(ws.placementIds()).as("stream N = the N-th id of RUH Status").isEqualTo(ruh);

            assertThat(dev).isInstanceOf(WriteStreamBlockDevice.class);
            assertThat(dev.engine()).isEqualTo(IoEngine.IO_URING);
            assertThat(dev.supportsPlacement()).as(String.valueOf(dev.placementUnsupportedReason())).isTrue();
            assertThat(dev.placementIds()).isEqualTo(ruh);
            assertThat(dev.reclaimUnitBytes()).isEqualTo(sysfs.granularityBytes());
        }
    }

    @Test
    void eachPlacementIdsWritesLowerExactlyItsHandlesRuamwAndHbmwCountsEveryByte() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(generic.toString()); BlockDevice dev = open();
                Arena arena = Arena.ofShared()) {
            int lba = dev.logicalBlockSize();
            List<Integer> ids = dev.placementIds();
            freshReclaimUnits(ns);
            Map<Integer, Long> before = ruamw(ns);
            FdpRecords.FdpStatistics statsBefore = ns.fdpStatistics();

            // id i (in stream order) gets i + 1 LBAs, one write each; then 3 LBAs without a placement id
            Map<Integer, Long> expected = new LinkedHashMap<>();
            IoBatch b = new IoBatch();
            long offset = BASE;
            long bytes = 0;
            for (int i = 0; i < ids.size(); i++) {
                MemorySegment data = arena.allocate((long) (i + 1) * lba, 4096);
                Patterns.fill(data, i);
                b.write(offset, data, PlacementId.of(ids.get(i)));
                expected.merge(ids.get(i), (long) (i + 1), Long::sum);
                offset += data.byteSize();
                bytes += data.byteSize();
            }
            MemorySegment unplaced = arena.allocate(3L * lba, 4096);
            b.write(offset, unplaced);
            bytes += unplaced.byteSize();
            // stream 0 = no directive: the namespace's default handle, the first of RUH Status
            expected.merge(ns.ruhStatus().placementIds().get(0), 3L, Long::sum);
            dev.execute(b);

            Map<Integer, Long> after = ruamw(ns);
            FdpRecords.FdpStatistics statsAfter = ns.fdpStatistics();
            for (int id : before.keySet()) {
                assertThat(before.get(id) - after.get(id)).as("RUAMW drop of placement id %d (LBAs written with it)", id)
                        .isEqualTo(expected.getOrDefault(id, 0L));
            }
            assertThat(statsAfter.hostBytesWritten().subtract(statsBefore.hostBytesWritten()))
                    .as("FDP statistics: host bytes written").isEqualTo(BigInteger.valueOf(bytes));

            // and the bytes are where they were written
            MemorySegment back = arena.allocate(ids.size() * (long) lba, 4096);
            IoBatch r = new IoBatch();
            r.read(BASE + (ids.size() - 1L) * ids.size() / 2 * lba, back);
            dev.execute(r);
            assertThat(Patterns.mismatch(back, ids.size() - 1)).as("the last id's bytes read back").isEqualTo(-1);
        }
    }

    @Test
    void theKernelRefusesAStreamAboveItsMaximumWithEinvalAndPlacesTheLastOne() throws Exception {
        // Straight through a ring, without the engine: the kernel's own rule.
        try (NvmeNamespace ns = NvmeNamespace.open(generic.toString());
                NativeFile f = NativeFile.open(block, true, false, true);
                Ring ring = Ring.open(RingOptions.of(8)); Arena arena = Arena.ofConfined()) {
            int lba = f.logicalBlockSize();
            MemorySegment data = arena.allocate(2L * lba, 4096);
            Patterns.fill(data, 77);
            freshReclaimUnits(ns);
            List<Integer> ids = ns.ruhStatus().placementIds();
            Map<Integer, Long> before = ruamw(ns);

            long tooHigh = ring.prepWrite(f.fd(), data, BASE + (4L << 20), 1);
            ring.setWriteStream(tooHigh, sysfs.maxStreams() + 1);
            long last = ring.prepWrite(f.fd(), data, BASE + (5L << 20), 2);
            ring.setWriteStream(last, sysfs.maxStreams());
            ring.submitAndWait(2);
            Map<Long, Integer> res = new TreeMap<>();
            while (res.size() < 2) {
                ring.reap((userData, r, flags, extra) -> res.put(userData, r));
                if (res.size() < 2) {
                    ring.submitAndWait(1);
                }
            }
            assertThat(res.get(1L)).as("stream %d of %d", sysfs.maxStreams() + 1, sysfs.maxStreams())
                    .isEqualTo(-Errno.EINVAL);
            assertThat(res.get(2L)).as("stream %d", sysfs.maxStreams()).isEqualTo(2 * lba);

            Map<Integer, Long> after = ruamw(ns);
            int lastId = ids.get(sysfs.maxStreams() - 1);
            for (int id : before.keySet()) {
                assertThat(before.get(id) - after.get(id)).as("RUAMW drop of placement id %d", id)
                        .isEqualTo(id == lastId ? 2 : 0);
            }
        }
    }

    @Test
    void anIdNoStreamReachesIsRefusedByTheEngineBeforeAnyIo() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(generic.toString()); BlockDevice dev = open();
                Arena arena = Arena.ofShared()) {
            int unknown = 0;
            while (dev.placementIds().contains(unknown)) {
                unknown++;
            }
            Map<Integer, Long> before = ruamw(ns);
            FdpRecords.FdpStatistics statsBefore = ns.fdpStatistics();
            MemorySegment data = arena.allocate(dev.logicalBlockSize(), 4096);
            IoBatch b = new IoBatch();
            b.write(BASE + (6L << 20), data, PlacementId.of(dev.placementIds().get(1)));
            b.write(BASE + (6L << 20) + dev.logicalBlockSize(), data, PlacementId.of(unknown));
            int id = unknown;
            assertThatThrownBy(() -> dev.execute(b)).isInstanceOf(IOException.class)
                    .hasMessageContaining("placement id " + id + " is not reached by any of its write streams")
                    .hasMessageContaining("nothing of the batch was submitted");
            assertThat(ruamw(ns)).as("no handle saw a write").isEqualTo(before);
            assertThat(ns.fdpStatistics().hostBytesWritten()).isEqualTo(statsBefore.hostBytesWritten());
        }
    }

    @Test
    void aBufferedWriteLosesItsStreamWhichIsWhyTheEngineIsODirectOnly() throws Exception {
        try (NvmeNamespace ns = NvmeNamespace.open(generic.toString());
                NativeFile f = NativeFile.open(block, true, false, false); // no O_DIRECT: through the page cache
                Ring ring = Ring.open(RingOptions.of(8)); Arena arena = Arena.ofConfined()) {
            int lba = f.logicalBlockSize();
            MemorySegment data = arena.allocate(lba, 4096);
            Patterns.fill(data, 5);
            freshReclaimUnits(ns);
            List<Integer> ids = ns.ruhStatus().placementIds();
            Map<Integer, Long> before = ruamw(ns);
            long sqe = ring.prepWrite(f.fd(), data, BASE + (7L << 20), 1);
            ring.setWriteStream(sqe, 2);
            ring.submitAndWait(1);
            int[] res = new int[1];
            ring.reap((u, r, fl, x) -> res[0] = r);
            assertThat(res[0]).as("the buffered write itself succeeds").isEqualTo(lba);
            f.fdatasync(); // write the page back now
            Map<Integer, Long> after = ruamw(ns);
            assertThat(before.get(ids.get(1)) - after.get(ids.get(1))).as("stream 2's handle (placement id %d)",
                    ids.get(1)).isZero();
            assertThat(before.get(ids.get(0)) - after.get(ids.get(0))).as("the default handle got it").isEqualTo(1);
        }
    }

    @Test
    void everyRingOfTheDevicePlacesItsWritesAndLetsGoOfTheDeviceAtClose() throws Exception {
        // io_rings 2: two submitting threads, one per reactor, and the caller's own ring of a blocking execute.
        // Each writes with a placement id of its own: a ring that left SQE byte 44 unset would put its LBAs on
        // the default handle (the first of RUH Status), and its id's RUAMW would not drop.
        for (int round = 0; round < 2; round++) {
            try (NvmeNamespace ns = NvmeNamespace.open(generic.toString());
                    BlockDevice dev = BlockDevices.open(block, DeviceOptions.of(IoEngine.IO_URING).withQueueDepth(32)
                            .withBuffers(1 << 20, 8).withIoRings(2));
                    Arena arena = Arena.ofShared()) {
                List<Integer> ids = dev.placementIds();
                assertThat(ids).hasSizeGreaterThanOrEqualTo(4);
                int lba = dev.logicalBlockSize();
                freshReclaimUnits(ns);
                Map<Integer, Long> before = ruamw(ns);
                // lane i writes i + 1 LBAs with id i + 1 (ids 1, 2: the reactors; 3: the caller's ring)
                Thread[] lanes = new Thread[2];
                Throwable[] failed = new Throwable[2];
                for (int i = 0; i < lanes.length; i++) {
                    int lane = i;
                    lanes[i] = Thread.ofPlatform().start(() -> {
                        try {
                            MemorySegment data = arena.allocate((long) (lane + 1) * lba, 4096);
                            Patterns.fill(data, lane);
                            IoBatch b = new IoBatch();
                            b.write(BASE + (16L << 20) + lane * (1L << 20), data, PlacementId.of(ids.get(lane + 1)));
                            CompletableFuture<IoBatch> done = new CompletableFuture<>();
                            dev.submit(b, done::complete);
                            done.join().throwIfFailed();
                        } catch (Throwable t) {
                            failed[lane] = t;
                        }
                    });
                }
                for (Thread t : lanes) {
                    t.join();
                }
                assertThat(failed).containsOnlyNulls();
                MemorySegment data = arena.allocate(3L * lba, 4096);
                Patterns.fill(data, 3);
                IoBatch b = new IoBatch();
                b.write(BASE + (18L << 20), data, PlacementId.of(ids.get(3)));
                dev.execute(b);
                assertThat(dev.ioStats().rings()).as("2 reactors and this thread's ring").isEqualTo(3);
                assertThat(dev.ioStats().callerRunBatches()).as("the execute ran on the caller's ring").isEqualTo(1);

                Map<Integer, Long> after = ruamw(ns);
                for (int id : before.keySet()) {
                    int k = ids.indexOf(id);
                    long want = k >= 1 && k <= 3 ? k : 0;
                    assertThat(before.get(id) - after.get(id)).as("RUAMW drop of placement id %d", id).isEqualTo(want);
                }
            } // closed: every ring unregistered the device before its teardown, so the next round opens it again
        }
    }
}
