package io.fdpblock.nvme;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Decoded FDP and identify data (docs/fdp.md sections 2 and 7), each with a defensive parser. */
public final class FdpRecords {
    private FdpRecords() {}

    /** Identify Controller: what fdpblock needs of it. */
    public record ControllerInfo(String model, String serial, long ctratt, int mdts) {
        /** CTRATT bit 19. */
        public boolean fdpSupported() {
            return (ctratt & (1L << 19)) != 0;
        }

        static ControllerInfo parse(MemorySegment d) throws IOException {
            LogReader r = new LogReader("identify controller", d);
            r.need(0, 100, "header");
            return new ControllerInfo(ascii(d, 24, 40), ascii(d, 4, 20), r.u32(96, "CTRATT"), r.u8(77, "MDTS"));
        }
    }

    /**
     * Identify Namespace: size, LBA format in use, endurance group, and what deallocation does.
     *
     * @param utilizationBlocks NUSE (bytes 16..23): LBAs allocated; meaningful only when {@link #thinProvisioned()}
     * @param nsfeat NSFEAT (byte 24); bit 0: thin provisioning (NUSE may be below NCAP)
     * @param dlfeat DLFEAT (byte 33): bits 2:0 what a read of a deallocated LBA returns, bit 3 guard field,
     *        bit 4 Write Zeroes can deallocate
     */
    public record NamespaceInfo(long sizeBlocks, int lbaSize, int enduranceGroup, long utilizationBlocks, int nsfeat,
            int dlfeat) {
        /** NSFEAT bit 0: NUSE reports the LBAs allocated, so deallocating lowers it. */
        public boolean thinProvisioned() {
            return (nsfeat & 1) != 0;
        }

        /** DLFEAT bits 2:0. */
        public DeallocatedReads deallocatedReads() {
            return switch (dlfeat & 0x7) {
                case 0 -> DeallocatedReads.NOT_REPORTED;
                case 1 -> DeallocatedReads.ZEROES;
                case 2 -> DeallocatedReads.ONES;
                default -> DeallocatedReads.RESERVED;
            };
        }

        static NamespaceInfo parse(MemorySegment d) throws IOException {
            LogReader r = new LogReader("identify namespace", d);
            long nsze = r.u64(0, "NSZE");
            int flbas = r.u8(26, "FLBAS");
            int nlbaf = r.u8(25, "NLBAF");
            int fmt = (flbas & 0xF) | ((flbas >> 5 & 0x3) << 4);
            if (fmt > nlbaf) {
                throw new IOException("identify namespace: LBA format " + fmt + " in use but only " + (nlbaf + 1)
                        + " are described");
            }
            int lbads = r.u8(128 + 4L * fmt + 2, "LBAF.LBADS");
            if (lbads < 9 || lbads > 16) {
                throw new IOException("identify namespace: LBA data size 2^" + lbads + " is not plausible");
            }
            return new NamespaceInfo(nsze, 1 << lbads, r.u16(102, "ENDGID"), r.u64(16, "NUSE"), r.u8(24, "NSFEAT"),
                    r.u8(33, "DLFEAT"));
        }
    }

    /** What reading a deallocated LBA returns (Identify Namespace DLFEAT bits 2:0). */
    public enum DeallocatedReads {
        /** 000b: the device does not say (anything may come back). */
        NOT_REPORTED,
        /** 001b: all bytes 0x00. */
        ZEROES,
        /** 010b: all bytes 0xFF. */
        ONES,
        /** 011b..111b. */
        RESERVED
    }

    /** One FDP configuration descriptor of log 0x20. */
    public record FdpConfiguration(int index, boolean valid, int rgif, long reclaimGroups, int reclaimUnitHandles,
            int maxPlacementIds, long namespacesSupported, long reclaimUnitBytes, long reclaimUnitTimeLimitSec,
            List<Integer> handleTypes) {
        /** Bits of a placement id that select the reclaim group (the rest is the handle). */
        public int placementHandleBits() {
            return 16 - rgif;
        }
    }

    /** Log 0x20. */
    public record FdpConfigurations(int version, List<FdpConfiguration> configurations) {
        /**
         * Offset of the RUH descriptor list in a configuration descriptor: after ERUTL (bytes 24..27) come
         * 36 reserved bytes (NVMe FDP, TP4146; nvme-cli's and QEMU's descriptor header are 64 bytes).
         */
        static final int RUH_DESCRIPTORS = 64;

        static FdpConfigurations parse(MemorySegment d) throws IOException {
            LogReader r = new LogReader("FDP configurations log", d);
            int n = r.u16(0, "NUMFDPC") + 1;
            int version = r.u8(2, "VER");
            long size = r.u32(4, "SIZE");
            if (size > d.byteSize()) {
                throw new IOException("FDP configurations log: SIZE " + size + " exceeds the " + d.byteSize()
                        + " bytes read");
            }
            List<FdpConfiguration> out = new ArrayList<>(n);
            long off = 16;
            for (int i = 0; i < n; i++) {
                int dsze = r.u16(off, "DSZE of descriptor " + i);
                if (dsze < RUH_DESCRIPTORS) {
                    throw new IOException("FDP configurations log: descriptor " + i + " claims " + dsze + " bytes");
                }
                r.need(off, dsze, "descriptor " + i);
                int fdpa = r.u8(off + 2, "FDPA");
                int nruh = r.u16(off + 8, "NRUH");
                if (RUH_DESCRIPTORS + 4L * nruh > dsze) {
                    throw new IOException("FDP configurations log: descriptor " + i + " has " + nruh
                            + " handles but only " + dsze + " bytes");
                }
                List<Integer> types = new ArrayList<>(nruh);
                for (int h = 0; h < nruh; h++) {
                    types.add(r.u8(off + RUH_DESCRIPTORS + 4L * h, "RUHT"));
                }
                out.add(new FdpConfiguration(i, (fdpa & 0x80) != 0, fdpa & 0xF, r.u32(off + 4, "NRG"), nruh,
                        r.u16(off + 10, "MAXPIDS"), r.u32(off + 12, "NNSS"), r.u64(off + 16, "RUNS"),
                        r.u32(off + 24, "ERUTL"), List.copyOf(types)));
                off += dsze;
            }
            return new FdpConfigurations(version, List.copyOf(out));
        }
    }

    /** One reclaim unit handle status descriptor. */
    public record RuhStatusEntry(int placementId, int ruhId, long earutrSec, long availableMediaWritesLbas) {}

    /** I/O Management Receive, RUH Status. */
    public record RuhStatus(List<RuhStatusEntry> entries) {
        public List<Integer> placementIds() {
            return entries.stream().map(RuhStatusEntry::placementId).toList();
        }

        public RuhStatusEntry forPlacementId(int pid) {
            return entries.stream().filter(e -> e.placementId() == pid).findFirst().orElse(null);
        }

        static RuhStatus parse(MemorySegment d) throws IOException {
            LogReader r = new LogReader("RUH status", d);
            return new RuhStatus(r.entries(16, r.u16(14, "NRUHSD"), 32, "descriptors",
                    o -> new RuhStatusEntry(r.u16(o, "PID"), r.u16(o + 2, "RUHID"), r.u32(o + 4, "EARUTR"),
                            r.u64(o + 8, "RUAMW"))));
        }
    }

    /** Log 0x21: reclaim unit handle attributes (0 unused, 1 host specified, 2 controller specified). */
    public record RuhUsage(List<Integer> attributes) {
        static RuhUsage parse(MemorySegment d) throws IOException {
            LogReader r = new LogReader("RUH usage log", d);
            return new RuhUsage(r.entries(8, r.u16(0, "NRUH"), 8, "descriptors", o -> r.u8(o, "RUHA")));
        }
    }

    /** Log 0x22: host and media bytes written, media bytes erased (128-bit counters). */
    public record FdpStatistics(BigInteger hostBytesWritten, BigInteger mediaBytesWritten, BigInteger mediaBytesErased) {
        static FdpStatistics parse(MemorySegment d) throws IOException {
            LogReader r = new LogReader("FDP statistics log", d);
            return new FdpStatistics(r.u128(0, "HBMW"), r.u128(16, "MBMW"), r.u128(32, "MBE"));
        }

        /**
         * Write amplification since {@code earlier}: media bytes written / host bytes written in between,
         * or NaN when the host wrote nothing.
         */
        public double waf(FdpStatistics earlier) {
            BigInteger host = hostBytesWritten.subtract(earlier.hostBytesWritten);
            if (host.signum() <= 0) {
                return Double.NaN;
            }
            return new BigDecimal(mediaBytesWritten.subtract(earlier.mediaBytesWritten))
                    .divide(new BigDecimal(host), MathContext.DECIMAL64).doubleValue();
        }
    }

    /** One event of log 0x23. */
    public record FdpEvent(int type, int flags, int placementId, long timestamp, long nsid, int reclaimGroup) {
        public String typeName() {
            return switch (type) {
                case 0x00 -> "reclaim unit not fully written";
                case 0x01 -> "reclaim unit time limit exceeded";
                case 0x02 -> "controller level reset modified RUHs";
                case 0x03 -> "invalid placement identifier";
                case 0x80 -> "media reallocated";
                case 0x81 -> "implicitly modified RUH";
                default -> "type 0x" + Integer.toHexString(type);
            };
        }

        static List<FdpEvent> parseAll(MemorySegment d) throws IOException {
            LogReader r = new LogReader("FDP events log", d);
            return r.entries(64, r.u32(0, "NEVENTS"), 64, "events",
                    o -> new FdpEvent(r.u8(o, "TYPE"), r.u8(o + 1, "FLAGS"), r.u16(o + 2, "PID"), r.u64(o + 4, "TIMESTAMP"),
                            r.u32(o + 12, "NSID"), r.u16(o + 32, "RGID")));
        }
    }

    private static String ascii(MemorySegment d, long off, int len) {
        byte[] b = d.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE);
        return new String(b, StandardCharsets.US_ASCII).trim();
    }
}
