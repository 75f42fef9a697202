package io.fdpblock.uring;

import io.fdpblock.ffi.FdpNative;
import io.fdpblock.ffi.fdpblock_sqe_write_stream;
import io.fdpblock.ffi.io_uring_cqe;
import io.fdpblock.ffi.io_uring_sqe;
import io.fdpblock.ffi.iovec;
import io.fdpblock.ffi.nvme_passthru_cmd64;
import io.fdpblock.ffi.nvme_uring_cmd;
import io.fdpblock.ffi.pollfd;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Pins the generated layouts and constants to the Linux UAPI ABI (include/uapi/linux/io_uring.h,
 * nvme_ioctl.h). A regenerated binding that drifts (another header version, a jextract change) fails
 * here instead of as a corrupted SQE at run time.
 */
@Tag("unit")
class LayoutPinsTest {

    /** {@code _IOWR(type, nr, size)} as the kernel computes it: dir 3 (read|write) in bits 30..31. */
    private static long iowr(char type, int nr, long size) {
        return (3L << 30) | (size << 16) | ((long) type << 8) | nr;
    }

    @Test
    void structSizes() {
        assertThat(io_uring_sqe.sizeof()).isEqualTo(64);
        assertThat(io_uring_cqe.sizeof()).isEqualTo(16);
        assertThat(nvme_uring_cmd.sizeof()).isEqualTo(72);
        assertThat(nvme_passthru_cmd64.sizeof()).isEqualTo(80);
        assertThat(iovec.sizeof()).isEqualTo(16);
        assertThat(pollfd.sizeof()).isEqualTo(8);
    }

    @Test
    void nvmeCommandFitsTheBigSqeCommandArea() {
        assertThat(Ring.SQE_CMD_OFFSET).isEqualTo(48);
        assertThat(Ring.SQE128_CMD_BYTES).isEqualTo(80);
        assertThat(Ring.SQE_CMD_OFFSET + nvme_uring_cmd.sizeof()).isLessThanOrEqualTo(128);
    }

    @Test
    void sqeFieldOffsets() {
        assertThat(io_uring_sqe.opcode$offset()).isEqualTo(0);
        assertThat(io_uring_sqe.flags$offset()).isEqualTo(1);
        assertThat(io_uring_sqe.ioprio$offset()).isEqualTo(2);
        assertThat(io_uring_sqe.fd$offset()).isEqualTo(4);
        assertThat(io_uring_sqe.off$offset()).isEqualTo(8);
        assertThat(io_uring_sqe.cmd_op$offset()).as("cmd_op shares the union with off").isEqualTo(8);
        assertThat(io_uring_sqe.addr$offset()).isEqualTo(16);
        assertThat(io_uring_sqe.len$offset()).isEqualTo(24);
        assertThat(io_uring_sqe.rw_flags$offset()).isEqualTo(28);
        assertThat(io_uring_sqe.fsync_flags$offset()).isEqualTo(28);
        assertThat(io_uring_sqe.uring_cmd_flags$offset()).isEqualTo(28);
        assertThat(io_uring_sqe.user_data$offset()).isEqualTo(32);
        assertThat(io_uring_sqe.buf_index$offset()).isEqualTo(40);
        assertThat(io_uring_sqe.personality$offset()).isEqualTo(42);
        assertThat(io_uring_sqe.file_index$offset()).isEqualTo(44);
        assertThat(io_uring_sqe.addr3$offset()).isEqualTo(48);
        assertThat(io_uring_sqe.cmd$offset()).isEqualTo(48);
    }

    /** Linux >= 6.16: the write-stream byte, declared in headers/sqe_write_stream.h as an overlay of the SQE. */
    @Test
    void sqeWriteStreamIsByte44InTheSpliceFdInUnion() {
        assertThat(fdpblock_sqe_write_stream.sizeof()).isEqualTo(io_uring_sqe.sizeof()).isEqualTo(64);
        assertThat(fdpblock_sqe_write_stream.write_stream$offset()).isEqualTo(44);
        assertThat(fdpblock_sqe_write_stream.write_stream$layout().byteSize()).isEqualTo(1);
        assertThat(fdpblock_sqe_write_stream.write_stream$offset())
                .isEqualTo(io_uring_sqe.splice_fd_in$offset())
                .isEqualTo(io_uring_sqe.file_index$offset());
    }

    @Test
    void sqeWriteStreamWritesOnlyByte44OfTheSameSqe() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sqe = arena.allocate(io_uring_sqe.layout());
            io_uring_sqe.opcode(sqe, (byte) Ring.OP_WRITE);
            io_uring_sqe.user_data(sqe, 0x1122334455667788L);
            fdpblock_sqe_write_stream.write_stream(sqe, (byte) 7);

            byte[] bytes = sqe.toArray(ValueLayout.JAVA_BYTE);
            for (int i = 0; i < bytes.length; i++) {
                if (i != 0 && (i < 32 || i >= 40)) {
                    assertThat(bytes[i]).as("byte %d", i).isEqualTo(i == 44 ? (byte) 7 : (byte) 0);
                }
            }
            assertThat(io_uring_sqe.opcode(sqe)).isEqualTo((byte) Ring.OP_WRITE);
            assertThat(io_uring_sqe.user_data(sqe)).isEqualTo(0x1122334455667788L);
            // The stream is the low byte of the union (x86-64 and arm64 are little-endian).
            assertThat(io_uring_sqe.file_index(sqe)).isEqualTo(7);
            assertThat(fdpblock_sqe_write_stream.write_stream(sqe)).isEqualTo((byte) 7);
        }
    }

    @Test
    void cqeFieldOffsets() {
        assertThat(io_uring_cqe.user_data$offset()).isEqualTo(0);
        assertThat(io_uring_cqe.res$offset()).isEqualTo(8);
        assertThat(io_uring_cqe.flags$offset()).isEqualTo(12);
        assertThat(io_uring_cqe.big_cqe$offset()).isEqualTo(16);
    }

    @Test
    void nvmeUringCmdFieldOffsets() {
        assertThat(nvme_uring_cmd.opcode$offset()).isEqualTo(0);
        assertThat(nvme_uring_cmd.flags$offset()).isEqualTo(1);
        assertThat(nvme_uring_cmd.rsvd1$offset()).isEqualTo(2);
        assertThat(nvme_uring_cmd.nsid$offset()).isEqualTo(4);
        assertThat(nvme_uring_cmd.cdw2$offset()).isEqualTo(8);
        assertThat(nvme_uring_cmd.cdw3$offset()).isEqualTo(12);
        assertThat(nvme_uring_cmd.metadata$offset()).isEqualTo(16);
        assertThat(nvme_uring_cmd.addr$offset()).isEqualTo(24);
        assertThat(nvme_uring_cmd.metadata_len$offset()).isEqualTo(32);
        assertThat(nvme_uring_cmd.data_len$offset()).isEqualTo(36);
        assertThat(nvme_uring_cmd.cdw10$offset()).isEqualTo(40);
        assertThat(nvme_uring_cmd.cdw11$offset()).isEqualTo(44);
        assertThat(nvme_uring_cmd.cdw12$offset()).isEqualTo(48);
        assertThat(nvme_uring_cmd.cdw13$offset()).isEqualTo(52);
        assertThat(nvme_uring_cmd.cdw14$offset()).isEqualTo(56);
        assertThat(nvme_uring_cmd.cdw15$offset()).isEqualTo(60);
        assertThat(nvme_uring_cmd.timeout_ms$offset()).isEqualTo(64);
        assertThat(nvme_uring_cmd.rsvd2$offset()).isEqualTo(68);
    }

    @Test
    void iovecAndPollfdFieldOffsets() {
        assertThat(iovec.iov_base$offset()).isEqualTo(0);
        assertThat(iovec.iov_len$offset()).isEqualTo(8);
        assertThat(pollfd.fd$offset()).isEqualTo(0);
        assertThat(pollfd.events$offset()).isEqualTo(4);
        assertThat(pollfd.revents$offset()).isEqualTo(6);
    }

    @Test
    void nvmeIoctlNumbers() {
        assertThat((int) FdpNative.NVME_URING_CMD_IO()).isEqualTo(0xC0484E80);
        assertThat((int) FdpNative.NVME_URING_CMD_IO_VEC()).isEqualTo(0xC0484E81);
        assertThat((int) FdpNative.NVME_URING_CMD_ADMIN()).isEqualTo(0xC0484E82);
        assertThat((int) FdpNative.NVME_URING_CMD_ADMIN_VEC()).isEqualTo(0xC0484E83);
        assertThat((int) FdpNative.NVME_IOCTL_ADMIN64_CMD()).isEqualTo(0xC0504E47);
        assertThat((int) FdpNative.NVME_IOCTL_IO64_CMD()).isEqualTo(0xC0504E48);
        // The constants are the unsigned values (as ioctl's unsigned long request wants), not sign-extended.
        assertThat(FdpNative.NVME_URING_CMD_IO()).isEqualTo(0xC0484E80L);
        assertThat(FdpNative.NVME_IOCTL_IO64_CMD()).isEqualTo(0xC0504E48L);
    }

    @Test
    void nvmeIoctlNumbersEncodeTheStructSizes() {
        assertThat(FdpNative.NVME_URING_CMD_IO()).isEqualTo(iowr('N', 0x80, nvme_uring_cmd.sizeof()));
        assertThat(FdpNative.NVME_URING_CMD_ADMIN()).isEqualTo(iowr('N', 0x82, nvme_uring_cmd.sizeof()));
        assertThat(FdpNative.NVME_IOCTL_ADMIN64_CMD()).isEqualTo(iowr('N', 0x47, nvme_passthru_cmd64.sizeof()));
        assertThat(FdpNative.NVME_IOCTL_IO64_CMD()).isEqualTo(iowr('N', 0x48, nvme_passthru_cmd64.sizeof()));
    }

    @Test
    void opcodes() {
        assertThat(FdpNative.IORING_OP_URING_CMD()).isEqualTo(46);
        assertThat(Ring.OP_URING_CMD).isEqualTo(46);
        assertThat(Ring.OP_NOP).isEqualTo(0);
        assertThat(Ring.OP_READV).isEqualTo(1);
        assertThat(Ring.OP_WRITEV).isEqualTo(2);
        assertThat(Ring.OP_FSYNC).isEqualTo(3);
        assertThat(Ring.OP_READ_FIXED).isEqualTo(4);
        assertThat(Ring.OP_WRITE_FIXED).isEqualTo(5);
        assertThat(Ring.OP_READ).isEqualTo(22);
        assertThat(Ring.OP_WRITE).isEqualTo(23);
    }

    @Test
    void setupAndSqeFlags() {
        assertThat(Ring.SETUP_SQPOLL).isEqualTo(0x2);
        assertThat(Ring.SETUP_COOP_TASKRUN).isEqualTo(0x100);
        assertThat(Ring.SETUP_SQE128).isEqualTo(0x400);
        assertThat(Ring.SETUP_CQE32).isEqualTo(0x800);
        assertThat(Ring.SETUP_SINGLE_ISSUER).isEqualTo(0x1000);
        assertThat(Ring.SETUP_DEFER_TASKRUN).isEqualTo(0x2000);
        assertThat(FdpNative.IORING_URING_CMD_FIXED()).isEqualTo(1);
        assertThat(Ring.URING_CMD_FIXED).isEqualTo(1);
        assertThat(Ring.SQE_FIXED_FILE).isEqualTo(1);
        assertThat(FdpNative.IORING_FSYNC_DATASYNC()).isEqualTo(1);
    }

    @Test
    void pollAndEventfdConstants() {
        assertThat(FdpNative.POLLIN()).isEqualTo(0x1);
        assertThat(FdpNative.POLLERR()).isEqualTo(0x8);
        assertThat(FdpNative.POLLHUP()).isEqualTo(0x10);
        assertThat(FdpNative.POLLNVAL()).isEqualTo(0x20);
        assertThat(FdpNative.EFD_NONBLOCK()).isEqualTo(04000);
        assertThat(FdpNative.EFD_CLOEXEC()).isEqualTo(02000000);
        assertThat(FdpNative.O_DIRECT()).isEqualTo(040000);
    }
}
