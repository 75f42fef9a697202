package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.nvme.PlacementId;

import java.util.concurrent.locks.Lock;

/**
 * What a format's index and metadata writer get of the store, and nothing more: where its parts lie,
 * the lock the engine holds while it tells them a change, and the slot and salt tables that recovery
 * rebuilds.
 *
 * @param config the store's configuration
 * @param device the store's device
 * @param lock the engine's index lock (never held across I/O)
 * @param slots the slot allocator, rebuilt by recovery
 * @param salts the cache salts of the keys, rebuilt by recovery
 * @param metadata the placement id of metadata writes
 * @param capacityBytes bytes of the device the store uses
 * @param dataBase where the data area starts
 * @param slotBytes bytes of a slot (header and payload)
 * @param headerBytes bytes of a slot header
 */
public record StoreContext(RawBlockCoreConfig config, BlockDevice device, Lock lock, SlotAllocator slots,
        SaltTable salts, PlacementId metadata, long capacityBytes, long dataBase, long slotBytes, int headerBytes) {
    /** The device offset of a slot. */
    public long slotOffset(int slot) {
        return dataBase + (long) slot * slotBytes;
    }
}
