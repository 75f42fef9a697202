package io.fdpblock.sim;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.ForwardingBlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.util.List;

/**
 * A device that presents itself as an FDP namespace: it reports placement ids and a reclaim unit size and
 * takes placement ids and deallocations, so that a store over it groups its slots by reclaim unit, tags its
 * writes and deallocates freed slots, exactly as on an FDP SSD. The device underneath (a file, memory)
 * ignores both; wrapped in a {@link TracingBlockDevice} the trace then carries what an FDP SSD would have
 * been sent, for {@link FdpSsdModel}. Everything else is the wrapped device's.
 */
public final class PlacementEmulatingDevice extends ForwardingBlockDevice {
    private final List<Integer> placementIds;
    private final long reclaimUnitBytes;

    /**
     * Wraps {@code inner} (owned: closing this closes it).
     *
     * @param placementIds the ids RUH Status would list, e.g. 0..7 (the emulated device's 8 handles)
     * @param reclaimUnitBytes RUNS, a positive multiple of the logical block size
     * @throws IllegalArgumentException for an empty or invalid id list or a bad reclaim unit size
     */
    public PlacementEmulatingDevice(BlockDevice inner, List<Integer> placementIds, long reclaimUnitBytes) {
        if (placementIds == null || placementIds.isEmpty()) {
            throw new IllegalArgumentException("an emulated FDP device needs at least one placement id");
        }
        for (int id : placementIds) {
            PlacementId.check("emulated FDP placement id", id);
        }
        if (reclaimUnitBytes <= 0 || reclaimUnitBytes % inner.logicalBlockSize() != 0) {
            throw new IllegalArgumentException("emulated reclaim unit of " + reclaimUnitBytes + " bytes must be a positive"
                    + " multiple of " + inner.path() + "'s block size (" + inner.logicalBlockSize() + " bytes)");
        }
        super(inner);
        this.placementIds = List.copyOf(placementIds);
        this.reclaimUnitBytes = reclaimUnitBytes;
    }

    @Override public boolean supportsPlacement() { return true; }
    @Override public List<Integer> placementIds() { return placementIds; }
    @Override public long reclaimUnitBytes() { return reclaimUnitBytes; }
    /** The wrapped device may do nothing with a deallocation; an FDP SSD would drop the data. */
    @Override public boolean supportsDeallocate() { return true; }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        inner.submit(batch, callback);
    }

    @Override public void flush() throws IOException { inner.flush(); }
    @Override public void close() { inner.close(); }

    @Override
    public String toString() {
        return "fdp-emulated(" + inner + ", ids " + placementIds + ", reclaim unit " + reclaimUnitBytes + " B)";
    }
}
