package io.fdpblock.device;

import io.fdpblock.core.LoadRequest;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.devicetier.DeviceGuest;
import io.fdpblock.l2.ObjectKey;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * On a real NVMe namespace: the uring_cmd engine's passthru reads and writes from registered buffers
 * really take the fixed-buffer path ({@code IORING_URING_CMD_FIXED}), counted by the engine per command,
 * and their bytes arrive; other memory takes the plain path. Then the store on that engine: its puts and
 * loads from registered buffers take no plain path at all.
 */
@Tag("device")
class UringCmdFixedBuffersNvmeDeviceTest {
    private static final int BUFFER = 1 << 20;

    private static UringCmdBlockDevice open(Path device) throws Exception {
        return (UringCmdBlockDevice) BlockDevices.open(device,
                DeviceOptions.of(IoEngine.URING_CMD).withQueueDepth(16).withBuffers(BUFFER, 8));
    }

    @Test
    void passthruFromRegisteredBuffersTakesTheFixedPathOnePerCommandAndTheBytesArrive() throws Exception {
        Path device = DeviceGuest.device();
        try (UringCmdBlockDevice dev = open(device); Arena arena = Arena.ofShared()) {
            int max = dev.namespace().maxTransferBytes();
            long commands = (BUFFER + max - 1) / max; // one buffer is split by the max transfer
            long offset = DeviceGuest.RAW_BASE;

            MemorySegment pooled = dev.buffers().acquire();
            Patterns.fill(pooled, 41);
            long fixed0 = dev.fixedOps();
            long plain0 = dev.plainOps();
            IoBatch b = new IoBatch();
            b.write(offset, pooled);
            dev.execute(b);
            assertThat(dev.fixedOps() - fixed0).as("fixed passthru writes of %d bytes, max transfer %d", BUFFER, max)
                    .isEqualTo(commands);
            assertThat(dev.plainOps() - plain0).as("plain passthru commands").isZero();

            MemorySegment own = arena.allocate(BUFFER, 4096); // not registered: the plain path
            b.reset();
            b.read(offset, own);
            dev.execute(b);
            assertThat(dev.plainOps() - plain0).isEqualTo(commands);
            assertThat(dev.fixedOps() - fixed0).isEqualTo(commands);
            assertThat(Patterns.mismatch(own, 41)).as("bytes read back on the plain path").isEqualTo(-1);

            assertThat(dev.registerBuffers(own)).as("registering a caller's region").isTrue();
            own.fill((byte) 0);
            b.reset();
            b.read(offset, own);
            dev.execute(b);
            assertThat(dev.fixedOps() - fixed0).as("fixed commands once the region is registered")
                    .isEqualTo(2 * commands);
            assertThat(dev.plainOps() - plain0).isEqualTo(commands);
            assertThat(Patterns.mismatch(own, 41)).as("bytes read back on the fixed path").isEqualTo(-1);
            dev.unregisterBuffers(own);
            dev.buffers().release(pooled);
        }
    }

    @Test
    void theStoresPutsAndLoadsFromRegisteredBuffersTakeOnlyTheFixedPath() throws Exception {
        Path device = DeviceGuest.device();
        int keys = 4;
        int size = 256 * 1024;
        try (UringCmdBlockDevice dev = open(device);
                RawBlockCore core = RawBlockCore.open(DeviceGuest.storeConfig(device.toString()).build(), dev)) {
            List<String> names = new ArrayList<>();
            List<PutRequest> puts = new ArrayList<>();
            List<MemorySegment> sources = new ArrayList<>();
            for (int i = 0; i < keys; i++) {
                String k = ObjectKey.of("org/model", 0, new byte[] {42, (byte) i}).withCacheSalt("fixed:path").encoded();
                MemorySegment p = dev.buffers().acquire().asSlice(0, size); // inside the device's registered pool
                Patterns.fill(p, 500 + i);
                names.add(k);
                sources.add(p);
                puts.add(PutRequest.of(k, p).withPlacement(core.dataPlacementIds().get(0)));
            }
            core.delete(names, true); // a rerun starts clean
            long fixed0 = dev.fixedOps();
            long plain0 = dev.plainOps();
            assertThat(core.put(puts)).containsOnly(true);
            long fixedPuts = dev.fixedOps() - fixed0;
            assertThat(dev.plainOps() - plain0).as("plain commands of the put (headers and payloads)").isZero();
            assertThat(fixedPuts).as("fixed commands of the put of %d keys", keys).isGreaterThanOrEqualTo(keys);

            List<LoadRequest> loads = new ArrayList<>();
            List<MemorySegment> into = new ArrayList<>();
            for (int i = 0; i < keys; i++) {
                MemorySegment d = dev.buffers().acquire();
                d.fill((byte) 0);
                into.add(d);
                loads.add(new LoadRequest(names.get(i), d));
            }
            assertThat(core.load(loads)).containsOnly(true);
            assertThat(dev.plainOps() - plain0).as("plain commands of the load").isZero();
            assertThat(dev.fixedOps() - fixed0 - fixedPuts).as("fixed commands of the load of %d keys", keys)
                    .isGreaterThanOrEqualTo(keys);
            for (int i = 0; i < keys; i++) {
                assertThat(into.get(i).asSlice(0, size).mismatch(sources.get(i))).as("bytes of %s", names.get(i))
                        .isEqualTo(-1);
            }
            core.delete(names, true);
        }
    }
}
