package io.fdpblock.device;

import io.fdpblock.ffi.FdpNative;
import io.fdpblock.nvme.NvmeCommand;
import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import io.fdpblock.uring.Uring;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * NVMe passthru ({@code IORING_OP_URING_CMD}, {@code NVME_URING_CMD_IO}) on a generic character device
 * {@code /dev/ngXnY}, on the same reactor as the io_uring engine. Reads and writes are split by the
 * namespace's max transfer; buffers inside a registered region use {@code IORING_URING_CMD_FIXED};
 * a write's placement id becomes DTYPE 2 / DSPEC; completions decode 0 = success, > 0 = NVMe status,
 * < 0 = errno.
 */
final class UringCmdBlockDevice extends IoUringBlockDevice {
    private static final int CMD_IO = (int) FdpNative.NVME_URING_CMD_IO();

    private final NvmeNamespace ns;
    private final int nsid;
    private final int lbaSize;
    private final long split;

    private UringCmdBlockDevice(NvmeNamespace ns, long size, DeviceOptions options) throws IOException {
        super(ns.path().toString(), ns.fd(), ns, size, ns.lbaSize(), 1 << 30, options);
        this.ns = ns;
        this.nsid = ns.nsid();
        this.lbaSize = ns.lbaSize();
        this.split = ns.maxTransferBytes();
    }

    static UringCmdBlockDevice open(String path, DeviceOptions options) throws IOException {
        if (!Uring.isBigEntriesAvailable()) {
            throw new IOException("the uring_cmd engine needs io_uring with SQE128/CQE32 (Linux >= 5.19): "
                    + Uring.bigEntriesUnavailabilityCause().getMessage(), Uring.bigEntriesUnavailabilityCause());
        }
        NvmeNamespace ns = NvmeNamespace.open(path);
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
    public java.util.List<Integer> placementIds() throws IOException {
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
        long sqe = ring.prepUringCmd(fileIndex(), CMD_IO, slot);
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
        long sqe = ring.prepUringCmd(fileIndex(), CMD_IO, slot);
        if (sqe >= 0) {
            NvmeCommand.flush(nsid).encodeUring(ring.sqeArea(), sqe + Ring.SQE_CMD_OFFSET);
            if (sqeFileFlags() != 0) {
                ring.addSqeFlags(sqe, sqeFileFlags());
            }
        }
        return sqe;
    }

    @Override
    long partResult(int res, long partLength) {
        if (res == 0) {
            return partLength; // passthru answers 0 for success, not a byte count
        }
        return res > 0 ? IoBatch.nvmeFailure(res) : res;
    }

    /** Dataset Management deallocate of whole LBAs in [offset, offset + length). */
    @Override
    public boolean deallocate(long offset, long length) throws IOException {
        enter("deallocate");
        try {
            if (offset % lbaSize != 0 || length % lbaSize != 0 || length <= 0 || offset + length > sizeBytes()) {
                throw new IOException("deallocate(" + path() + ", offset=" + offset + ", length=" + length
                        + "): must be whole LBAs of " + lbaSize + " bytes inside the namespace");
            }
            long blocks = length / lbaSize;
            int ranges = (int) ((blocks + 0xFFFF_FFFFL - 1) / 0xFFFF_FFFFL);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment r = arena.allocate(16L * ranges, 4096);
                long slba = offset / lbaSize;
                for (int i = 0; i < ranges; i++) {
                    int n = (int) Math.min(blocks, 0xFFFF_FFFFL);
                    NvmeCommand.putDsmRange(r, i, slba, n);
                    slba += Integer.toUnsignedLong(n);
                    blocks -= Integer.toUnsignedLong(n);
                }
                ns.io(NvmeCommand.deallocate(nsid, r, ranges));
            }
            return true;
        } finally {
            leave();
        }
    }
}
