package io.fdpblock.core;

import io.fdpblock.device.AlignedBufferPool;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.StripedBlockDevice;

import java.io.IOException;
import java.util.BitSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Opens a store on a device: placement discovered, the format probed (a new device starts empty, a store
 * of either format recovers, anything else is refused with nothing written), the layout fixed, the
 * index and metadata writer recovered, and the header buffers registered. Kept apart from the store so
 * that the order of these steps reads in one place.
 */
final class StoreOpening {
    private StoreOpening() {}

    static StoreParts open(RawBlockCoreConfig config, BlockDevice device) throws IOException {
        int headerBytes = config.headerBytes();
        long slotBytes = config.slotBytes();
        if (device instanceof StripedBlockDevice striped) {
            StripeMembers.checkUnlabelled(config, striped); // a caller's own striped device: only as before labels
        }
        FdpPlacement placement = FdpPlacement.discover(config, device);
        // a data area may start on a reclaim unit, so that slot groups fill whole ones
        ProbeContext probe = new ProbeContext(config, device, StoreGeometry.capacity(config, device),
                Math.max(1 << 20, placement.reclaimUnitBytes()), placement.metadata());
        StoreFormat.Opening format = StoreFormats.open(probe);
        probe.checkMetadataFits(format.metaTotalBytes(), 0); // before the layout is checked
        StoreGeometry geometry = StoreGeometry.of(config, device, format.metaTotalBytes());
        SlotLayout layout = new SlotLayout(geometry.capacityBytes(), geometry.dataBase(), slotBytes, headerBytes);
        if (device instanceof StripedBlockDevice striped) {
            striped.startDataAt(layout.dataBase()); // device_paths: slots striped from here, the metadata on the first
        }
        long maxSlots = geometry.maxSlots();
        long ru = placement.reclaimUnitBytes();
        int groupSlots = ru > slotBytes ? (int) Math.min(ru / slotBytes, maxSlots) : 1;
        ReentrantLock lock = new ReentrantLock();
        OpCounter ops = new OpCounter();
        SaltTable salts = new SaltTable();
        SlotAllocator slots = new SlotAllocator((int) maxSlots, config.fdpSlotAffinityEnabled(), groupSlots);
        SlotReleaser releaser = new SlotReleaser(device, lock, slots, layout.dataBase(), slotBytes, ops);
        StoreFormat.Recovered r = format.recover(new StoreContext(config, device, lock, slots, salts,
                placement.metadata(), layout.capacityBytes(), layout.dataBase(), slotBytes, headerBytes));
        BitSet unverifiedSlots = null;
        if (config.verifyPayload() == RawBlockCoreConfig.VerifyPayload.RECOVERY) {
            unverifiedSlots = new BitSet((int) maxSlots);
            unverifiedSlots.set(0, (int) maxSlots);
        }
        AlignedBufferPool headerPool = new AlignedBufferPool(headerBytes, 4 * config.maxBatchKeys(),
                Math.max(config.blockAlign(), device.bufferAlignment()));
        try {
            device.registerBuffers(headerPool.region());
        } catch (IOException | RuntimeException e) {
            // e.g. RLIMIT_MEMLOCK too low: headers then take the non-fixed path, which works
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "slot header buffers not registered with "
                    + device.path() + " (their writes copy instead of using fixed buffers): " + e.getMessage());
        }
        return new StoreParts(config, device, layout, lock, new StoreGate(lock, config.devicePath()), r.index(),
                new InFlight(), salts, slots, ops, releaser, r.meta(), placement,
                new HeaderBuffers(headerPool, headerBytes, config.blockAlign()), new Quarantine(device),
                new StoreCounters(), r.result(), unverifiedSlots);
    }
}
