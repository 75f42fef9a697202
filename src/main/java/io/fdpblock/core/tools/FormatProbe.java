package io.fdpblock.core.tools;

import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.v1.ContainerFormat;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Which of the two formats a device holds, for the tools that name them (the store's open asks the
 * formats themselves, through the {@code StoreFormat} services).
 */
public final class FormatProbe {
    private FormatProbe() {}

    /**
     * What the first two blocks of a device say: an lmcache_v1 container header at offset 0 (which wins),
     * else a valid fdpblock_v2 superblock (copy A at 0, else copy B at {@code blockAlign}), else
     * superblock magic with neither copy valid, else nothing of either format.
     */
    record Found(Kind kind, V2Layout layout) {
        enum Kind { LMCACHE_V1, FDPBLOCK_V2, FDPBLOCK_V2_DAMAGED, NONE }
    }

    static Found detect(BlockDevice device, int blockAlign) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment blocks = arena.allocate(2L * blockAlign, 4096);
            read(device, 0, blocks);
            MemorySegment b0 = blocks.asSlice(0, blockAlign);
            MemorySegment b1 = blocks.asSlice(blockAlign, blockAlign);
            if (OnDiskFormat.hasMagic(b0, ContainerFormat.CONTAINER_MAGIC)) {
                return new Found(Found.Kind.LMCACHE_V1, null);
            }
            V2Layout l = V2Layout.read(b0);
            l = l != null ? l : V2Layout.read(b1);
            if (l != null) {
                return new Found(Found.Kind.FDPBLOCK_V2, l);
            }
            if (V2Layout.hasMagic(b0) || V2Layout.hasMagic(b1)) {
                return new Found(Found.Kind.FDPBLOCK_V2_DAMAGED, null);
            }
            return new Found(Found.Kind.NONE, null);
        }
    }

    private static void read(BlockDevice device, long offset, MemorySegment into) throws IOException {
        IoBatch b = new IoBatch(1);
        b.read(offset, into);
        device.execute(b);
    }
}
