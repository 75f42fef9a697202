package io.fdpblock.nvme;

import io.fdpblock.ffi.nvme_passthru_cmd64;
import io.fdpblock.ffi.nvme_uring_cmd;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One NVMe command, encoded into {@code struct nvme_uring_cmd} (an SQE's command area) or {@code struct
 * nvme_passthru_cmd64} (ioctl). Factories build the commands fdpblock uses; the encoding follows
 * docs/fdp.md section 1 (DTYPE in CDW12 bits 23:20, DSPEC in CDW13 bits 31:16).
 */
public final class NvmeCommand {
    public static final int OP_FLUSH = 0x00;
    public static final int OP_WRITE = 0x01;
    public static final int OP_READ = 0x02;
    public static final int OP_DSM = 0x09;
    public static final int OP_IO_MGMT_RECV = 0x12;
    public static final int OP_IO_MGMT_SEND = 0x1D;
    public static final int ADMIN_GET_LOG_PAGE = 0x02;
    public static final int ADMIN_IDENTIFY = 0x06;
    public static final int ADMIN_SET_FEATURES = 0x09;
    public static final int ADMIN_GET_FEATURES = 0x0A;
    /** Directive type "data placement" in CDW12 bits 23:20. */
    public static final int DTYPE_DATA_PLACEMENT = 2;

    final String name;
    final int opcode;
    final int nsid;
    final long addr;
    final int dataLen;
    final int cdw10;
    final int cdw11;
    final int cdw12;
    final int cdw13;
    final int cdw14;
    final int cdw15;

    private NvmeCommand(String name, int opcode, int nsid, MemorySegment data, int cdw10, int cdw11, int cdw12,
            int cdw13, int cdw14, int cdw15) {
        if (data != null && data.byteSize() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(name + ": data buffer of " + data.byteSize() + " bytes is too large");
        }
        this.name = name;
        this.opcode = opcode;
        this.nsid = nsid;
        this.addr = data == null ? 0 : data.address();
        this.dataLen = data == null ? 0 : (int) data.byteSize();
        this.cdw10 = cdw10;
        this.cdw11 = cdw11;
        this.cdw12 = cdw12;
        this.cdw13 = cdw13;
        this.cdw14 = cdw14;
        this.cdw15 = cdw15;
    }

    public String name() {
        return name;
    }

    public int opcode() {
        return opcode;
    }

    public int cdw12() {
        return cdw12;
    }

    public int cdw13() {
        return cdw13;
    }

    // ---- I/O commands ----

    /**
     * Write of {@code blocks} LBAs from {@code data}.
     *
     * @param placement {@link PlacementId#NONE} = no directive; else the FDP placement identifier (DTYPE 2, DSPEC = id)
     */
    public static NvmeCommand write(int nsid, long slba, int blocks, MemorySegment data, PlacementId placement,
            boolean fua) {
        int cdw12 = rwCdw12(blocks) | (fua ? 1 << 30 : 0);
        int cdw13 = 0;
        if (!placement.isNone()) {
            cdw12 |= DTYPE_DATA_PLACEMENT << 20;
            cdw13 = placement.value() << 16;
        }
        return new NvmeCommand("write(slba=" + slba + ", blocks=" + blocks
                + (placement.isNone() ? "" : ", pid=" + placement) + ")", OP_WRITE, nsid, data, (int) slba,
                (int) (slba >>> 32), cdw12, cdw13, 0, 0);
    }

    public static NvmeCommand read(int nsid, long slba, int blocks, MemorySegment data) {
        return new NvmeCommand("read(slba=" + slba + ", blocks=" + blocks + ")", OP_READ, nsid, data, (int) slba,
                (int) (slba >>> 32), rwCdw12(blocks), 0, 0, 0);
    }

    private static int rwCdw12(int blocks) {
        if (blocks < 1 || blocks > 0x10000) {
            throw new IllegalArgumentException("block count " + blocks + " is outside 1..65536");
        }
        return blocks - 1;
    }

    public static NvmeCommand flush(int nsid) {
        return new NvmeCommand("flush", OP_FLUSH, nsid, null, 0, 0, 0, 0, 0, 0);
    }

    /**
     * Dataset Management, deallocate: {@code ranges} holds {@code count} 16-byte ranges (context
     * attributes u32, NLB u32, SLBA u64), see {@link #putDsmRange}.
     */
    public static NvmeCommand deallocate(int nsid, MemorySegment ranges, int count) {
        if (count < 1 || count > MAX_DSM_RANGES || ranges.byteSize() < (long) DSM_RANGE_BYTES * count) {
            throw new IllegalArgumentException("deallocate: " + count + " ranges must be 1..256 and fit "
                    + ranges.byteSize() + " bytes");
        }
        return new NvmeCommand("deallocate(" + count + " ranges)", OP_DSM, nsid, ranges, count - 1, 1 << 2, 0, 0, 0, 0);
    }

    /** Ranges one Dataset Management command carries at most (NR is 8 bits, 0-based). */
    public static final int MAX_DSM_RANGES = 256;
    public static final int DSM_RANGE_BYTES = 16;

    /**
     * The hot path's encoder of a deallocate ({@code count} ranges at {@code ranges}) into a zeroed SQE
     * command area at {@code off}.
     */
    public static void encodeDeallocate(MemorySegment sqes, long off, int nsid, long ranges, int count) {
        sqes.set(ValueLayout.JAVA_BYTE, off + URING_CMD.opcode(), (byte) OP_DSM);
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.nsid(), nsid);
        sqes.set(ValueLayout.JAVA_LONG, off + URING_CMD.addr(), ranges);
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.dataLen(), DSM_RANGE_BYTES * count);
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.cdw10(), count - 1);
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.cdw11(), 1 << 2); // AD: deallocate
    }

    public static void putDsmRange(MemorySegment ranges, int index, long slba, int blocks) {
        long o = (long) DSM_RANGE_BYTES * index;
        ranges.set(NvmeLayouts.U32, o, 0);
        ranges.set(NvmeLayouts.U32, o + 4, blocks);
        ranges.set(NvmeLayouts.U64, o + 8, slba);
    }

    /** I/O Management Receive, RUH Status (MO 1) into {@code data}. */
    public static NvmeCommand ruhStatus(int nsid, MemorySegment data) {
        return new NvmeCommand("io-mgmt-recv(RUH status)", OP_IO_MGMT_RECV, nsid, data, 1,
                (int) (data.byteSize() / 4 - 1), 0, 0, 0, 0);
    }

    /** I/O Management Send, RUH Update (MO 1): {@code ids} holds {@code count} u16 placement ids. */
    public static NvmeCommand ruhUpdate(int nsid, MemorySegment ids, int count) {
        return new NvmeCommand("io-mgmt-send(RUH update, " + count + " ids)", OP_IO_MGMT_SEND, nsid, ids,
                1 | ((count - 1) << 16), 0, 0, 0, 0, 0);
    }

    // ---- admin commands ----

    public static NvmeCommand identify(int cns, int nsid, MemorySegment data4k) {
        return new NvmeCommand("identify(cns=" + cns + ")", ADMIN_IDENTIFY, nsid, data4k, cns, 0, 0, 0, 0, 0);
    }

    /**
     * Get Log Page of {@code data.byteSize()} bytes (a multiple of 4).
     *
     * @param lsi log specific identifier (the endurance group for FDP logs)
     */
    public static NvmeCommand getLogPage(int lid, int lsp, int lsi, int nsid, long offset, MemorySegment data) {
        long numd = data.byteSize() / 4 - 1;
        int cdw10 = (lid & 0xFF) | ((lsp & 0x7F) << 8) | (int) ((numd & 0xFFFF) << 16);
        int cdw11 = (int) ((numd >>> 16) & 0xFFFF) | ((lsi & 0xFFFF) << 16);
        return new NvmeCommand("get-log-page(lid=0x" + Integer.toHexString(lid) + ")", ADMIN_GET_LOG_PAGE, nsid, data,
                cdw10, cdw11, (int) offset, (int) (offset >>> 32), 0, 0);
    }

    public static NvmeCommand getFeatures(int fid, int nsid, int cdw11, MemorySegment data) {
        return new NvmeCommand("get-features(fid=0x" + Integer.toHexString(fid) + ")", ADMIN_GET_FEATURES, nsid, data,
                fid & 0xFF, cdw11, 0, 0, 0, 0);
    }

    public static NvmeCommand setFeatures(int fid, int nsid, int cdw11, int cdw12, MemorySegment data) {
        return new NvmeCommand("set-features(fid=0x" + Integer.toHexString(fid) + ")", ADMIN_SET_FEATURES, nsid, data,
                fid & 0xFF, cdw11, cdw12, 0, 0, 0);
    }

    // ---- encodings ----

    /** Where a command struct holds the fields fdpblock sets: the two structs differ only in these. */
    private record Fields(long opcode, long nsid, long addr, long dataLen, long cdw10, long cdw11, long cdw12,
            long cdw13, long cdw14, long cdw15) {
    }

    private static final Fields URING_CMD = new Fields(nvme_uring_cmd.opcode$offset(), nvme_uring_cmd.nsid$offset(),
            nvme_uring_cmd.addr$offset(), nvme_uring_cmd.data_len$offset(), nvme_uring_cmd.cdw10$offset(),
            nvme_uring_cmd.cdw11$offset(), nvme_uring_cmd.cdw12$offset(), nvme_uring_cmd.cdw13$offset(),
            nvme_uring_cmd.cdw14$offset(), nvme_uring_cmd.cdw15$offset());
    private static final Fields PASSTHRU_CMD64 = new Fields(nvme_passthru_cmd64.opcode$offset(),
            nvme_passthru_cmd64.nsid$offset(), nvme_passthru_cmd64.addr$offset(), nvme_passthru_cmd64.data_len$offset(),
            nvme_passthru_cmd64.cdw10$offset(), nvme_passthru_cmd64.cdw11$offset(), nvme_passthru_cmd64.cdw12$offset(),
            nvme_passthru_cmd64.cdw13$offset(), nvme_passthru_cmd64.cdw14$offset(), nvme_passthru_cmd64.cdw15$offset());

    /**
     * The hot path's encoder: a read or write straight into a zeroed SQE command area at {@code off},
     * no objects made.
     *
     * @param placementId the raw id ({@link PlacementId#value()}); {@link PlacementId#NONE_VALUE} = no directive
     */
    public static void encodeReadWrite(MemorySegment sqes, long off, boolean write, int nsid, long address, int length,
            long slba, int blocks, int placementId) {
        sqes.set(ValueLayout.JAVA_BYTE, off + URING_CMD.opcode(), (byte) (write ? OP_WRITE : OP_READ));
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.nsid(), nsid);
        sqes.set(ValueLayout.JAVA_LONG, off + URING_CMD.addr(), address);
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.dataLen(), length);
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.cdw10(), (int) slba);
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.cdw11(), (int) (slba >>> 32));
        int cdw12 = blocks - 1;
        if (write && placementId != PlacementId.NONE_VALUE) {
            cdw12 |= DTYPE_DATA_PLACEMENT << 20;
            sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.cdw13(), placementId << 16);
        }
        sqes.set(ValueLayout.JAVA_INT, off + URING_CMD.cdw12(), cdw12);
    }

    /** Writes this command as {@code struct nvme_uring_cmd} at {@code off} (zeroed first). */
    public void encodeUring(MemorySegment seg, long off) {
        encode(seg.asSlice(off, nvme_uring_cmd.sizeof()), URING_CMD);
    }

    /** Writes this command as {@code struct nvme_passthru_cmd64} (zeroed first). */
    void encodeIoctl(MemorySegment c) {
        encode(c, PASSTHRU_CMD64);
    }

    private void encode(MemorySegment c, Fields f) {
        c.fill((byte) 0);
        c.set(ValueLayout.JAVA_BYTE, f.opcode(), (byte) opcode);
        c.set(ValueLayout.JAVA_INT, f.nsid(), nsid);
        c.set(ValueLayout.JAVA_LONG, f.addr(), addr);
        c.set(ValueLayout.JAVA_INT, f.dataLen(), dataLen);
        c.set(ValueLayout.JAVA_INT, f.cdw10(), cdw10);
        c.set(ValueLayout.JAVA_INT, f.cdw11(), cdw11);
        c.set(ValueLayout.JAVA_INT, f.cdw12(), cdw12);
        c.set(ValueLayout.JAVA_INT, f.cdw13(), cdw13);
        c.set(ValueLayout.JAVA_INT, f.cdw14(), cdw14);
        c.set(ValueLayout.JAVA_INT, f.cdw15(), cdw15);
    }

    static long ioctlResult(MemorySegment c) {
        return c.get(ValueLayout.JAVA_LONG, nvme_passthru_cmd64.result$offset());
    }

    @Override
    public String toString() {
        return name;
    }
}
