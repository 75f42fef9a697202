package io.fdpblock.device;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A device that wraps another (tracing, counting, emulating placement) and passes on what describes it:
 * path, engine, geometry, placement, deallocation support, buffers and their registration. What it does
 * with I/O is its own: {@link #submit}, {@link #flush} and {@link #close} are not forwarded here, and
 * {@link #execute} stays the interface's (through this device's {@code submit}).
 */
public abstract class ForwardingBlockDevice implements BlockDevice {
    protected final BlockDevice inner;

    protected ForwardingBlockDevice(BlockDevice inner) {
        this.inner = inner;
    }

    @Override public String path() { return inner.path(); }
    @Override public IoEngine engine() { return inner.engine(); }
    @Override public long sizeBytes() { return inner.sizeBytes(); }
    @Override public int logicalBlockSize() { return inner.logicalBlockSize(); }
    @Override public int maxTransferBytes() { return inner.maxTransferBytes(); }
    @Override public int bufferAlignment() { return inner.bufferAlignment(); }
    @Override public boolean supportsPlacement() { return inner.supportsPlacement(); }
    @Override public List<Integer> placementIds() throws IOException { return inner.placementIds(); }
    @Override public long reclaimUnitBytes() throws IOException { return inner.reclaimUnitBytes(); }
    @Override public boolean supportsDeallocate() { return inner.supportsDeallocate(); }
    @Override public AlignedBufferPool buffers() { return inner.buffers(); }
    @Override public boolean registerBuffers(MemorySegment region) throws IOException {
        return inner.registerBuffers(region);
    }
    @Override public void unregisterBuffers(MemorySegment region) throws IOException {
        inner.unregisterBuffers(region);
    }
}
