package io.fdpblock.nvme;

import io.fdpblock.ffi.nvme_uring_cmd;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Command encodings and log parsers, against hand-built bytes: no device needed. */
@Tag("unit")
class NvmeEncodingTest {
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Test
    void aWriteWithAPlacementIdCarriesDtypeTwoAndDspec() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(8192, 4096);
            MemorySegment sqe = arena.allocate(128, 64);
            NvmeCommand.write(1, 0x1_0000_0002L, 2, data, PlacementId.of(0x4003), true).encodeUring(sqe, 48);
            MemorySegment c = sqe.asSlice(48, 72);
            assertThat(nvme_uring_cmd.opcode(c)).isEqualTo((byte) 0x01);
            assertThat(nvme_uring_cmd.nsid(c)).isEqualTo(1);
            assertThat(nvme_uring_cmd.addr(c)).isEqualTo(data.address());
            assertThat(nvme_uring_cmd.data_len(c)).isEqualTo(8192);
            assertThat(nvme_uring_cmd.cdw10(c)).isEqualTo(2);
            assertThat(nvme_uring_cmd.cdw11(c)).isEqualTo(1);
            assertThat(nvme_uring_cmd.cdw12(c)).isEqualTo(1 | (2 << 20) | (1 << 30));
            assertThat(nvme_uring_cmd.cdw13(c)).isEqualTo(0x4003 << 16);

            MemorySegment hot = arena.allocate(128, 64);
            NvmeCommand.encodeReadWrite(hot, 48, true, 1, data.address(), 8192, 0x1_0000_0002L, 2, 0x4003);
            assertThat(hot.asSlice(48, 72).mismatch(c)).as("hot-path encoder = factory (but FUA)")
                    .isEqualTo(51); // only CDW12 differs: the FUA bit (bit 30, its fourth byte)
            assertThat(nvme_uring_cmd.cdw12(hot.asSlice(48, 72))).isEqualTo(1 | (2 << 20));

            NvmeCommand plain = NvmeCommand.write(1, 0, 1, data.asSlice(0, 4096), PlacementId.NONE, false);
            assertThat(plain.cdw12()).isZero();
            assertThat(plain.cdw13()).isZero();
            assertThatThrownBy(() -> NvmeCommand.write(1, 0, 1, data, PlacementId.of(70000), false)).hasMessageContaining("70000");
            assertThatThrownBy(() -> NvmeCommand.read(1, 0, 0, data)).hasMessageContaining("block count 0");
        }
    }

    @Test
    void getLogPageSplitsNumdAndCarriesTheEnduranceGroup() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(1 << 20, 4096);
            MemorySegment sqe = arena.allocate(128, 64);
            NvmeCommand.getLogPage(0x22, 0, 1, 0, 0, d).encodeUring(sqe, 48);
            long numd = (1 << 20) / 4 - 1;
            assertThat(nvme_uring_cmd.cdw10(sqe.asSlice(48, 72))).isEqualTo(0x22 | (int) ((numd & 0xFFFF) << 16));
            assertThat(nvme_uring_cmd.cdw11(sqe.asSlice(48, 72))).isEqualTo((int) (numd >>> 16) | (1 << 16));
            MemorySegment ranges = arena.allocate(32);
            NvmeCommand.putDsmRange(ranges, 1, 77, 8);
            assertThat(ranges.get(U32, 20)).isEqualTo(8);
            assertThat(ranges.get(U64, 24)).isEqualTo(77);
            NvmeCommand.deallocate(1, ranges, 2).encodeUring(sqe, 48);
            assertThat(nvme_uring_cmd.cdw10(sqe.asSlice(48, 72))).isEqualTo(1);
            assertThat(nvme_uring_cmd.cdw11(sqe.asSlice(48, 72))).isEqualTo(4);
        }
    }

    @Test
    void parsesFdpConfigurationsAndRejectsALyingLog() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(4096);
            d.set(U16, 0, (short) 0); // one configuration
            d.set(ValueLayout.JAVA_BYTE, 2, (byte) 0);
            d.set(U32, 4, 16 + 64 + 8 * 4);
            long o = 16;
            d.set(U16, o, (short) (64 + 8 * 4));
            d.set(ValueLayout.JAVA_BYTE, o + 2, (byte) 0x82); // valid, RGIF 2
            d.set(U32, o + 4, 2);
            d.set(U16, o + 8, (short) 8);
            d.set(U16, o + 10, (short) 128);
            d.set(U32, o + 12, 1);
            d.set(U64, o + 16, 4L << 20);
            d.set(ValueLayout.JAVA_BYTE, o + 32, (byte) 0x7F); // reserved bytes 28..63 are not handle types
            for (int h = 0; h < 8; h++) {
                d.set(ValueLayout.JAVA_BYTE, o + 64 + 4 * h, (byte) (h == 5 ? 2 : 1)); // RUH descriptors from byte 64
            }
            FdpRecords.FdpConfigurations cfg = FdpRecords.FdpConfigurations.parse(d);
            assertThat(cfg.configurations()).hasSize(1);
            FdpRecords.FdpConfiguration c = cfg.configurations().get(0);
            assertThat(c.valid()).isTrue();
            assertThat(c.rgif()).isEqualTo(2);
            assertThat(c.reclaimGroups()).isEqualTo(2);
            assertThat(c.reclaimUnitHandles()).isEqualTo(8);
            assertThat(c.reclaimUnitBytes()).isEqualTo(4L << 20);
            assertThat(c.handleTypes()).containsExactly(1, 1, 1, 1, 1, 2, 1, 1);

            d.set(U16, o + 8, (short) 500); // NRUH that does not fit the descriptor
            assertThatThrownBy(() -> FdpRecords.FdpConfigurations.parse(d)).hasMessageContaining("500 handles");
            d.set(U16, o + 8, (short) 8);
            d.set(U16, 0, (short) 40); // 41 configurations claimed in a 4 KiB buffer
            assertThatThrownBy(() -> FdpRecords.FdpConfigurations.parse(d)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FdpRecords.FdpConfigurations.parse(d.asSlice(0, 10)))
                    .hasMessageContaining("the 10 bytes");
        }
    }

    @Test
    void parsesRuhStatusStatisticsAndEvents() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rs = arena.allocate(16 + 64);
            rs.set(U16, 14, (short) 2);
            rs.set(U16, 16, (short) 0);
            rs.set(U64, 16 + 8, 1000);
            rs.set(U16, 48, (short) 0x4003);
            rs.set(U16, 50, (short) 3);
            rs.set(U64, 48 + 8, 777);
            FdpRecords.RuhStatus s = FdpRecords.RuhStatus.parse(rs);
            assertThat(s.placementIds()).containsExactly(0, 0x4003);
            assertThat(s.forPlacementId(0x4003).availableMediaWritesLbas()).isEqualTo(777);
            assertThat(s.forPlacementId(0x4003).ruhId()).isEqualTo(3);
            rs.set(U16, 14, (short) 3);
            assertThatThrownBy(() -> FdpRecords.RuhStatus.parse(rs)).hasMessageContaining("3 descriptors");

            MemorySegment st = arena.allocate(64);
            st.set(U64, 0, -1L); // HBMW low word all ones
            st.set(U64, 8, 1); // high word 1: 2^65 - 1
            st.set(U64, 16, 300);
            st.set(U64, 32, 0);
            FdpRecords.FdpStatistics a = FdpRecords.FdpStatistics.parse(st);
            assertThat(a.hostBytesWritten()).isEqualTo(BigInteger.TWO.pow(65).subtract(BigInteger.ONE));
            FdpRecords.FdpStatistics before = new FdpRecords.FdpStatistics(BigInteger.valueOf(100), BigInteger.valueOf(100),
                    BigInteger.ZERO);
            FdpRecords.FdpStatistics after = new FdpRecords.FdpStatistics(BigInteger.valueOf(300), BigInteger.valueOf(500),
                    BigInteger.ZERO);
            assertThat(after.waf(before)).isEqualTo(2.0);
            assertThat(before.waf(before)).isNaN();

            MemorySegment ev = arena.allocate(64 + 64);
            ev.set(U32, 0, 1);
            ev.set(ValueLayout.JAVA_BYTE, 64, (byte) 0);
            ev.set(U16, 66, (short) 5);
            ev.set(U32, 64 + 12, 1);
            FdpRecords.FdpEvent e = FdpRecords.FdpEvent.parseAll(ev).get(0);
            assertThat(e.placementId()).isEqualTo(5);
            assertThat(e.typeName()).isEqualTo("reclaim unit not fully written");
            ev.set(U32, 0, 1000);
            assertThatThrownBy(() -> FdpRecords.FdpEvent.parseAll(ev)).hasMessageContaining("1000 events");
        }
    }

    @Test
    void statusNamesSctAndSc() {
        NvmeStatus s = new NvmeStatus(0x4000 | 0x29);
        assertThat(s.sct()).isZero();
        assertThat(s.sc()).isEqualTo(0x29);
        assertThat(s.doNotRetry()).isTrue();
        assertThat(s.toString()).isEqualTo("NVMe status SCT 0 SC 0x29 (FDP Disabled), do not retry");
        assertThat(new NvmeStatus(0x2A).name()).isEqualTo("Invalid Placement Handle List");
        assertThat(new NvmeStatus(0x281).name()).isEqualTo("Unrecovered Read Error");
        assertThat(new NvmeStatusException("write(slba=0)", new NvmeStatus(0x80)))
                .hasMessage("write(slba=0) failed: NVMe status SCT 0 SC 0x80 (LBA Out of Range)");
    }

    @Test
    void identifyParsers() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(4096);
            id.set(U32, 96, 1 << 19);
            id.set(ValueLayout.JAVA_BYTE, 77, (byte) 7);
            FdpRecords.ControllerInfo c = FdpRecords.ControllerInfo.parse(id);
            assertThat(c.fdpSupported()).isTrue();
            assertThat(c.mdts()).isEqualTo(7);
            MemorySegment ns = arena.allocate(4096);
            ns.set(U64, 0, 1000);
            ns.set(ValueLayout.JAVA_BYTE, 25, (byte) 1); // two formats
            ns.set(ValueLayout.JAVA_BYTE, 26, (byte) 1); // format 1 in use
            ns.set(ValueLayout.JAVA_BYTE, 128 + 4 + 2, (byte) 12);
            ns.set(U16, 102, (short) 1);
            FdpRecords.NamespaceInfo n = FdpRecords.NamespaceInfo.parse(ns);
            assertThat(n.lbaSize()).isEqualTo(4096);
            assertThat(n.enduranceGroup()).isEqualTo(1);
            assertThat(n.deallocatedReads()).isEqualTo(FdpRecords.DeallocatedReads.NOT_REPORTED);
            assertThat(n.thinProvisioned()).isFalse();
            ns.set(U64, 8, 1000); // NCAP
            ns.set(U64, 16, 600); // NUSE
            ns.set(ValueLayout.JAVA_BYTE, 24, (byte) 0x35); // NSFEAT: thin provisioning and more
            ns.set(ValueLayout.JAVA_BYTE, 32, (byte) 0x7F); // FPI, the byte before DLFEAT: must not leak in
            ns.set(ValueLayout.JAVA_BYTE, 33, (byte) 0x09); // DLFEAT: reads return zeroes, guard field
            ns.set(ValueLayout.JAVA_BYTE, 34, (byte) 0x02); // NAWUN, the byte after
            FdpRecords.NamespaceInfo thin = FdpRecords.NamespaceInfo.parse(ns);
            assertThat(thin.utilizationBlocks()).isEqualTo(600);
            assertThat(thin.thinProvisioned()).isTrue();
            assertThat(thin.dlfeat()).isEqualTo(0x09);
            assertThat(thin.deallocatedReads()).isEqualTo(FdpRecords.DeallocatedReads.ZEROES);
            ns.set(ValueLayout.JAVA_BYTE, 33, (byte) 0x12); // 010b: ones; bit 4 (Write Zeroes deallocates)
            assertThat(FdpRecords.NamespaceInfo.parse(ns).deallocatedReads()).isEqualTo(FdpRecords.DeallocatedReads.ONES);
            ns.set(ValueLayout.JAVA_BYTE, 33, (byte) 0x03);
            assertThat(FdpRecords.NamespaceInfo.parse(ns).deallocatedReads())
                    .isEqualTo(FdpRecords.DeallocatedReads.RESERVED);
            ns.set(ValueLayout.JAVA_BYTE, 26, (byte) 5);
            assertThatThrownBy(() -> FdpRecords.NamespaceInfo.parse(ns)).hasMessageContaining("LBA format 5");
        }
    }
}
