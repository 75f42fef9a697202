package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.StripedBlockDevice;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/**
 * What a {@link StoreFormat} is given to detect, open, create or erase a store: the configuration, the
 * device, the capacity the store may use, and the engine's checks that do not belong to a format.
 *
 * @param config the store's configuration
 * @param device the device (striped: its members, seen as one)
 * @param capacity bytes of the device the store uses ({@code capacity_bytes}, or all of it)
 * @param dataAlign what a new data area may be aligned to: a reclaim unit with FDP, 1 MiB at least
 * @param metadata the placement id metadata writes carry
 */
public record ProbeContext(RawBlockCoreConfig config, BlockDevice device, long capacity, long dataAlign,
        PlacementId metadata) {
    /**
     * A probe of all of {@code device} for a tool that has no store configuration (migrate, inspect), to
     * detect a store ({@link StoreFormats#find}) and read its layout ({@link StoreFormat#recordedLayout}),
     * which use of a configuration only {@code block_align} and {@code meta_total_bytes} (where lmcache_v1's
     * second container lies; null: the default). It writes nothing.
     */
    public static ProbeContext ofDevice(BlockDevice device, int blockAlign, Long metaTotalBytes) {
        int headerBytes = Math.max(blockAlign, RawBlockCoreConfig.DEFAULT_HEADER_BYTES);
        RawBlockCoreConfig.Builder b = RawBlockCoreConfig.builder(device.path(), 2L * headerBytes) // required; unread
                .blockAlign(blockAlign).headerBytes(headerBytes);
        if (metaTotalBytes != null) {
            b.metaTotalBytes(metaTotalBytes);
        }
        return new ProbeContext(b.build(), device, device.sizeBytes(), blockAlign, PlacementId.NONE);
    }

    /**
     * A striped store's metadata lies on its first member: refuses (before anything is written) a
     * metadata area of {@code metaBytes} that does not fit it. Nothing for a single device.
     */
    public void checkMetadataFits(long metaBytes, long align) {
        if (device instanceof StripedBlockDevice striped) {
            StripeMembers.checkMetadataFits(config, striped, metaBytes, align);
        }
    }

    /** Reads {@code into.byteSize()} bytes at {@code offset}. */
    public void read(long offset, MemorySegment into) throws IOException {
        IoBatch b = new IoBatch(1);
        b.read(offset, into);
        device.execute(b);
    }

    /** Writes {@code from} at {@code offset} with the metadata's placement id (no flush). */
    public void write(long offset, MemorySegment from) throws IOException {
        IoBatch b = new IoBatch(1);
        b.write(offset, from, metadata);
        device.execute(b);
    }
}
