package io.fdpblock.device;

import io.fdpblock.nvme.NvmeCommand;
import io.fdpblock.nvme.NvmeCompletion;
import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import io.fdpblock.uring.Uring;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * NVMe passthru ({@code IORING_OP_URING_CMD}, {@code NVME_URING_CMD_IO}) on a generic character device
 * {@code /dev/ngXnY}, on the same reactor as the io_uring engine. Reads and writes are split by the
 * namespace's max transfer; buffers inside a registered region use {@code IORING_URING_CMD_FIXED};
 * a write's placement id becomes DTYPE 2 / DSPEC; completions decode 0 = success, > 0 = NVMe status,
 * < 0 = errno.
 */
final class UringCmdBlockDevice extends IoUringBlockDevice {
    /** One DSM range list per ring slot: 256 ranges of 16 bytes. */
    private static final int DSM_BUFFER_BYTES = NvmeCommand.MAX_DSM_RANGES * NvmeCommand.DSM_RANGE_BYTES;

    private final NvmeNamespace ns;
    private final int nsid;
    private final int lbaSize;
    private final long split;
    private final int slotCount;
    /** The kernel reads a DSM's ranges while it runs: shared, freed only with the device. */
    private final Arena dsmArena = Arena.ofShared();
    /** Made at the first deallocation (by whichever reactor), see {@link #dsmRanges()}. */
    private MemorySegment dsmRanges;

    private UringCmdBlockDevice(NvmeNamespace ns, long size, DeviceOptions options) throws IOException {
        super(ns.path().toString(), ns.fd(), ns, size, ns.lbaSize(), 1 << 30, options);
        this.ns = ns;
        this.nsid = ns.nsid();
        this.lbaSize = ns.lbaSize();
        this.split = ns.maxTransferBytes();
        this.slotCount = options.queueDepth() * options.ioRings(); // slots are numbered across the reactors
    }

    static UringCmdBlockDevice open(String path, DeviceOptions options) throws IOException {
        if (!Uring.isBigEntriesAvailable()) {
            throw new IOException("the uring_cmd engine needs io_uring with SQE128/CQE32 (Linux >= 5.19): "
                    + Uring.bigEntriesUnavailabilityCause().getMessage(), Uring.bigEntriesUnavailabilityCause());
        }
        NvmeNamespace ns = NvmeNamespace.open(path, options.exclusive());
        try {
            return start(new UringCmdBlockDevice(ns, ns.sizeBytes(), options));
        } catch (IOException | RuntimeException e) {
            ns.close();
            throw e;
        }
    }

    /** The namespace underneath: identify, FDP logs, RUH status and update. */
    NvmeNamespace namespace() {
        return ns;
    }

    @Override
    public IoEngine engine() {
        return IoEngine.URING_CMD;
    }

    @Override
    public boolean supportsPlacement() {
        return true;
    }

    @Override
    public List<Integer> placementIds() throws IOException {
        return ns.ruhStatus().placementIds();
    }

    @Override
    public long reclaimUnitBytes() throws IOException {
        return ns.activeFdpConfiguration().reclaimUnitBytes();
    }

    @Override
    public boolean supportsDeallocate() {
        return true;
    }

    @Override
    RingOptions ringOptions() {
        return super.ringOptions().withBigEntries(true);
    }

    @Override
    long splitBytes() {
        return split;
    }

    @Override
    long prepareReadWrite(Ring ring, boolean read, MemorySegment part, long deviceOffset, int region, int placementId,
            int slot) {
        long sqe = ring.prepUringCmd(fileIndex(), NvmeNamespace.URING_CMD_IO, slot);
        if (sqe < 0) {
            return -1;
        }
        NvmeCommand.encodeReadWrite(ring.sqeArea(), sqe + Ring.SQE_CMD_OFFSET, !read, nsid, part.address(),
                (int) part.byteSize(), deviceOffset / lbaSize, (int) (part.byteSize() / lbaSize), placementId);
        if (region >= 0) {
            ring.setUringCmdFixed(sqe, region);
        }
        if (sqeFileFlags() != 0) {
            ring.addSqeFlags(sqe, sqeFileFlags());
        }
        return sqe;
    }

    @Override
    long prepareFlush(Ring ring, int slot) {
        long sqe = ring.prepUringCmd(fileIndex(), NvmeNamespace.URING_CMD_IO, slot);
        if (sqe >= 0) {
            NvmeCommand.flush(nsid).encodeUring(ring.sqeArea(), sqe + Ring.SQE_CMD_OFFSET);
            if (sqeFileFlags() != 0) {
                ring.addSqeFlags(sqe, sqeFileFlags());
            }
        }
        return sqe;
    }

    @Override
    boolean completePart(IoBatch b, int op, int res, long partLength) {
        if (res == 0) {
            return b.completePart(op, partLength); // passthru answers 0 for success, not a byte count
        }
        return b.failPart(op, NvmeCompletion.failure(b.describe(op), res));
    }

    /**
     * One Dataset Management command for up to {@value NvmeCommand#MAX_DSM_RANGES} consecutive
     * deallocations of the batch, its ranges in this slot's own 4 KiB of {@link #dsmRanges}.
     */
    @Override
    int prepareDeallocate(Ring ring, IoBatch b, int first, int slot) {
        long sqe = ring.prepUringCmd(fileIndex(), NvmeNamespace.URING_CMD_IO, slot);
        if (sqe < 0) {
            return -1;
        }
        MemorySegment ranges = dsmRanges().asSlice((long) slot * DSM_BUFFER_BYTES, DSM_BUFFER_BYTES);
        int count = 0;
        for (int i = first; i < b.size() && count < NvmeCommand.MAX_DSM_RANGES && b.kind(i) == IoBatch.DEALLOCATE; i++) {
            NvmeCommand.putDsmRange(ranges, count++, b.offset(i) / lbaSize, (int) (b.length(i) / lbaSize));
        }
        NvmeCommand.encodeDeallocate(ring.sqeArea(), sqe + Ring.SQE_CMD_OFFSET, nsid, ranges.address(), count);
        if (sqeFileFlags() != 0) {
            ring.addSqeFlags(sqe, sqeFileFlags());
        }
        return count;
    }

    /** Made at the first deallocation of any reactor. */
    private synchronized MemorySegment dsmRanges() {
        if (dsmRanges == null) {
            dsmRanges = dsmArena.allocate((long) slotCount * DSM_BUFFER_BYTES, 4096);
        }
        return dsmRanges;
    }

    @Override
    void validateDeallocate(IoBatch b, int i) throws IOException {
        if (b.length(i) / lbaSize > 0xFFFF_FFFFL) {
            throw new IOException(b.describe(i) + ": more than 2^32 - 1 LBAs in one range; split it");
        }
    }

    @Override
    void releaseMemory() {
        dsmArena.close();
    }
}
