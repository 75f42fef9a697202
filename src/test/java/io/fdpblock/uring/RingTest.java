package io.fdpblock.uring;

import io.fdpblock.testing.DiskTempDirFactory;
import io.fdpblock.linux.Errno;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.ffi.FdpNative;
import io.fdpblock.ffi.iovec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Drives real rings on this kernel: NOPs, file I/O in every flavour, error completions, ownership. */
@Tag("host")
class RingTest {
    private static final int BLOCK = 4096;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    record Cqe(long userData, int res, int flags, long extra) {}

    /** Submits what is prepared, then waits for and reaps exactly {@code n} completions. */
    private static List<Cqe> complete(Ring ring, int n) throws IOException {
        List<Cqe> out = new ArrayList<>(n);
        ring.submitAndWait(n);
        while (out.size() < n) {
            if (ring.reap((u, r, f, x) -> out.add(new Cqe(u, r, f, x))) == 0) {
                ring.submitAndWait(1);
            }
        }
        assertThat(out).hasSize(n);
        return out;
    }

    private static Cqe completeOne(Ring ring) throws IOException {
        return complete(ring, 1).getFirst();
    }

    /** Byte {@code i} of the test pattern with the given seed: not periodic in any block size. */
    private static void fill(MemorySegment buf, int seed) {
        for (long i = 0; i < buf.byteSize(); i++) {
            buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed + (i >> 12)));
        }
    }

    private static byte[] bytes(MemorySegment buf) {
        return buf.toArray(ValueLayout.JAVA_BYTE);
    }

    private NativeFile openDirect(String name) throws IOException {
        return NativeFile.open(dir.resolve(name), true, true, true);
    }

    // ---- availability and setup ----

    @Test
    void ioUringIsAvailableOnThisHost() throws IOException {
        assertThat(Uring.unavailabilityCause()).isNull();
        assertThat(Uring.isAvailable()).isTrue();
        assertThat(Uring.isBigEntriesAvailable()).isTrue();
        assertThat(Uring.bigEntriesUnavailabilityCause()).isNull();
        Uring.ensureAvailable();
    }

    @Test
    void ringOfEightEntriesHasEightSqAndSixteenCqSlots() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            assertThat(ring.sqEntries()).isEqualTo(8);
            assertThat(ring.cqEntries()).isEqualTo(16);
            assertThat(ring.sqeSize()).isEqualTo(64);
            assertThat(ring.cqeSize()).isEqualTo(16);
            assertThat(ring.sqSpace()).isEqualTo(8);
            assertThat(ring.pendingSubmissions()).isZero();
            assertThat(ring.completionsReady()).isZero();
            assertThat(ring.fd()).isGreaterThanOrEqualTo(0);
            assertThat(ring.sqeArea().byteSize()).isEqualTo(8 * 64);
        }
    }

    @Test
    void taskrunHintsAreAcceptedAndDescribed() throws IOException {
        int deferBits = Ring.SETUP_SINGLE_ISSUER | Ring.SETUP_DEFER_TASKRUN;
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            int flags = ring.setupFlags();
            boolean defer = (flags & deferBits) == deferBits;
            boolean coop = (flags & Ring.SETUP_COOP_TASKRUN) != 0;
            assertThat(defer || coop).as("flags %s", Ring.describeFlags(flags)).isTrue();
            assertThat(defer && coop).as("only one fallback level is applied").isFalse();
            String expected = defer ? "SINGLE_ISSUER|DEFER_TASKRUN" : "COOP_TASKRUN";
            assertThat(Ring.describeFlags(flags)).isEqualTo(expected);
            assertThat(ring.toString()).endsWith("flags=" + expected + "]");
        }
    }

    @Test
    void withoutTaskrunHintsNoSetupFlagIsSet() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8).withTaskrunHints(false))) {
            assertThat(ring.setupFlags()).isZero();
            assertThat(Ring.describeFlags(ring.setupFlags())).isEqualTo("0");
            ring.prepNop(5);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(5, 0, 0, 0));
        }
    }

    @Test
    void describeFlagsNamesEveryKnownBitInOrder() {
        int all = Ring.SETUP_SQPOLL | Ring.SETUP_COOP_TASKRUN | Ring.SETUP_SQE128 | Ring.SETUP_CQE32
                | Ring.SETUP_SINGLE_ISSUER | Ring.SETUP_DEFER_TASKRUN;
        assertThat(Ring.describeFlags(all))
                .isEqualTo("SQPOLL|COOP_TASKRUN|SQE128|CQE32|SINGLE_ISSUER|DEFER_TASKRUN");
        assertThat(Ring.describeFlags(Ring.SETUP_SQE128 | Ring.SETUP_CQE32)).isEqualTo("SQE128|CQE32");
        assertThat(Ring.describeFlags(0)).isEqualTo("0");
        assertThat(Ring.describeFlags(0x1)).as("IOPOLL is not named").isEqualTo("0");
    }

    @Test
    void probedOpcodes() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            for (int op : new int[] {Ring.OP_NOP, Ring.OP_READ, Ring.OP_WRITE, Ring.OP_READV, Ring.OP_WRITEV,
                    Ring.OP_FSYNC, Ring.OP_READ_FIXED, Ring.OP_WRITE_FIXED, Ring.OP_URING_CMD}) {
                assertThat(ring.isOpcodeSupported(op)).as("opcode %d", op).isTrue();
            }
            assertThat(ring.isOpcodeSupported(-1)).isFalse();
            assertThat(ring.isOpcodeSupported(255)).isFalse();
            assertThat(ring.isOpcodeSupported(256)).isFalse();
        }
    }

    // ---- NOPs, SQ full, wrap-around ----

    @Test
    void batchOfEightNopsCompletesWithTheirUserData() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            long[] userData = {11, 22, 33, 44, 55, 66, 77, Long.MIN_VALUE};
            for (int i = 0; i < 8; i++) {
                assertThat(ring.prepNop(userData[i])).as("SQE byte offset").isEqualTo(i * 64L);
            }
            assertThat(ring.pendingSubmissions()).isEqualTo(8);
            assertThat(ring.sqSpace()).isZero();

            List<Cqe> cqes = complete(ring, 8);

            assertThat(cqes).extracting(Cqe::userData).containsExactlyInAnyOrder(11L, 22L, 33L, 44L, 55L, 66L,
                    77L, Long.MIN_VALUE);
            assertThat(cqes).extracting(Cqe::res).containsOnly(0);
            assertThat(cqes).extracting(Cqe::extra).containsOnly(0L);
            assertThat(ring.completionsReady()).isZero();
            assertThat(ring.pendingSubmissions()).isZero();
            assertThat(ring.sqSpace()).isEqualTo(8);
        }
    }

    @Test
    void ninthPrepBeforeSubmitReportsFullQueue() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            for (int i = 0; i < 8; i++) {
                assertThat(ring.prepNop(i)).isNotNegative();
            }
            assertThat(ring.prepNop(99)).isEqualTo(-1);
            assertThat(ring.nextSqe()).isEqualTo(-1);
            assertThat(ring.pendingSubmissions()).as("the refused prep took no slot").isEqualTo(8);

            assertThat(complete(ring, 8)).extracting(Cqe::userData)
                    .containsExactlyInAnyOrder(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L);
            assertThat(ring.prepNop(99)).as("room again after submit").isNotNegative();
            assertThat(completeOne(ring).userData()).isEqualTo(99);
        }
    }

    @Test
    void hundredRoundsCrossTheRingWrapAround() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            for (int round = 0; round < 100; round++) {
                long base = round * 8L;
                for (int i = 0; i < 8; i++) {
                    assertThat(ring.prepNop(base + i)).isEqualTo(i * 64L);
                }
                assertThat(ring.submitAndWait(8)).isEqualTo(8);
                List<Cqe> cqes = new ArrayList<>();
                while (cqes.size() < 8) {
                    if (ring.reap((u, r, f, x) -> cqes.add(new Cqe(u, r, f, x))) == 0) {
                        ring.submitAndWait(1);
                    }
                }
                assertThat(cqes).extracting(Cqe::userData)
                        .containsExactlyInAnyOrderElementsOf(LongStream.range(base, base + 8).boxed().toList());
                assertThat(cqes).extracting(Cqe::res).containsOnly(0);
            }
            assertThat(ring.completionsReady()).isZero();
        }
    }

    @Test
    void oddBatchesWrapAtUnalignedPositions() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            long next = 0;
            for (int round = 0; round < 50; round++) {
                long base = next;
                for (int i = 0; i < 5; i++) {
                    assertThat(ring.prepNop(next++)).isEqualTo((base + i) % 8 * 64);
                }
                assertThat(complete(ring, 5)).extracting(Cqe::userData)
                        .containsExactlyInAnyOrderElementsOf(LongStream.range(base, next).boxed().toList());
            }
        }
    }

    @Test
    void sqPollRingRunsNops() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8).withSqPoll(100))) {
            assertThat(ring.setupFlags() & Ring.SETUP_SQPOLL).isEqualTo(Ring.SETUP_SQPOLL);
            assertThat(ring.setupFlags() & Ring.SETUP_DEFER_TASKRUN).as("not allowed with SQPOLL").isZero();
            for (int round = 0; round < 20; round++) {
                for (int i = 0; i < 8; i++) {
                    assertThat(ring.prepNop(round * 8L + i)).isNotNegative();
                }
                assertThat(complete(ring, 8)).extracting(Cqe::userData).containsExactlyInAnyOrderElementsOf(
                        LongStream.range(round * 8L, round * 8L + 8).boxed().toList());
            }
        }
    }

    // ---- big entries (NVMe passthru rings) ----

    @Test
    void bigEntriesRingHas128ByteSqesAnd32ByteCqes() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8).withBigEntries(true))) {
            assertThat(ring.setupFlags() & (Ring.SETUP_SQE128 | Ring.SETUP_CQE32))
                    .isEqualTo(Ring.SETUP_SQE128 | Ring.SETUP_CQE32);
            assertThat(ring.sqeSize()).isEqualTo(128);
            assertThat(ring.cqeSize()).isEqualTo(32);
            assertThat(ring.sqeArea().byteSize()).isEqualTo(8 * 128);
            assertThat(Ring.describeFlags(ring.setupFlags())).startsWith("SQE128|CQE32");

            for (int round = 0; round < 3; round++) { // 24 > 8: wraps the ring of 128-byte SQEs
                for (int i = 0; i < 8; i++) {
                    assertThat(ring.prepNop(100 + i)).isEqualTo(i * 128L);
                }
                List<Cqe> cqes = complete(ring, 8);
                assertThat(cqes).extracting(Cqe::userData)
                        .containsExactlyInAnyOrder(100L, 101L, 102L, 103L, 104L, 105L, 106L, 107L);
                assertThat(cqes).extracting(Cqe::res).containsOnly(0);
                assertThat(cqes).extracting(Cqe::extra).containsOnly(0L);
            }
        }
    }

    @Test
    void uringCmdEncodesCmdOpAndReachesTheKernel() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8).withBigEntries(true));
             NativeFile file = NativeFile.open(dir.resolve("plain"), true, true, false)) {
            // Leave garbage in the slot first: nextSqe must zero all 128 bytes, command area included.
            ring.sqeArea().asSlice(0, 128).fill((byte) 0xAB);

            long sqe = ring.prepUringCmd(file.fd(), (int) FdpNative.NVME_URING_CMD_IO(), 4242);
            assertThat(sqe).isZero();
            MemorySegment s = ring.sqeArea().asSlice(sqe, 128);
            assertThat(s.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) Ring.OP_URING_CMD);
            assertThat(s.get(ValueLayout.JAVA_INT, 4)).isEqualTo(file.fd());
            assertThat(s.get(ValueLayout.JAVA_INT, 8)).isEqualTo(0xC0484E80);
            assertThat(s.get(ValueLayout.JAVA_LONG, 32)).isEqualTo(4242L);
            assertThat(s.asSlice(Ring.SQE_CMD_OFFSET, Ring.SQE128_CMD_BYTES).toArray(ValueLayout.JAVA_BYTE))
                    .containsOnly((byte) 0);

            ring.setUringCmdFixed(sqe, 3);
            assertThat(s.get(ValueLayout.JAVA_INT, 28)).isEqualTo(Ring.URING_CMD_FIXED);
            assertThat(s.get(ValueLayout.JAVA_SHORT, 40)).isEqualTo((short) 3);
            ring.sqeArea().set(ValueLayout.JAVA_INT, sqe + 28, 0); // no buffer registered: undo
            ring.sqeArea().set(ValueLayout.JAVA_SHORT, sqe + 40, (short) 0);

            // A regular ext4 file has no ->uring_cmd: the kernel answers -EOPNOTSUPP in the CQE.
            Cqe cqe = completeOne(ring);
            assertThat(cqe.userData()).isEqualTo(4242);
            assertThat(Errno.name(-cqe.res())).isEqualTo("EOPNOTSUPP");
            assertThat(cqe.extra()).isZero();
        }
    }

    @Test
    void uringCmdOnANormalRingIsRefused() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            assertThatThrownBy(() -> ring.prepUringCmd(0, (int) FdpNative.NVME_URING_CMD_IO(), 1))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("SQE128|CQE32");
            assertThat(ring.pendingSubmissions()).as("no SQE was taken").isZero();
            assertThat(ring.sqSpace()).isEqualTo(8);
        }
    }

    // ---- file I/O ----

    @Test
    void prepReadEncodesTheSqeFields() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8));
             Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(BLOCK, BLOCK);
            long sqe = ring.prepRead(7, buf, 0x1234_5678_9AL, 0xDEAD_BEEFL);
            MemorySegment s = ring.sqeArea().asSlice(sqe, 64);
            assertThat(s.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) Ring.OP_READ);
            assertThat(s.get(ValueLayout.JAVA_BYTE, 1)).isZero();
            assertThat(s.get(ValueLayout.JAVA_INT, 4)).isEqualTo(7);
            assertThat(s.get(ValueLayout.JAVA_LONG, 8)).isEqualTo(0x1234_5678_9AL);
            assertThat(s.get(ValueLayout.JAVA_LONG, 16)).isEqualTo(buf.address());
            assertThat(s.get(ValueLayout.JAVA_INT, 24)).isEqualTo(BLOCK);
            assertThat(s.get(ValueLayout.JAVA_LONG, 32)).isEqualTo(0xDEAD_BEEFL);
            ring.addSqeFlags(sqe, Ring.SQE_FIXED_FILE);
            assertThat(s.get(ValueLayout.JAVA_BYTE, 1)).isEqualTo((byte) 1);
        }
    }

    @Test
    void setWriteStreamWritesByte44OfThatSqeOnlyAndRefusesWhatOneByteCannotHold() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8));
             Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(BLOCK, BLOCK);
            long first = ring.prepWriteFixed(3, buf, 8192, 5, 11);
            long second = ring.prepWrite(3, buf, 8192, 12);
            byte[] before = ring.sqeArea().asSlice(first, 64).toArray(ValueLayout.JAVA_BYTE);
            ring.setWriteStream(first, 200);
            byte[] after = ring.sqeArea().asSlice(first, 64).toArray(ValueLayout.JAVA_BYTE);
            for (int i = 0; i < 64; i++) {
                assertThat(after[i]).as("byte %d of the SQE", i).isEqualTo(i == 44 ? (byte) 200 : before[i]);
            }
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_BYTE, second + 44)).as("the next SQE").isZero();
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_SHORT, first + 40)).as("buf_index kept").isEqualTo((short) 5);
            assertThatThrownBy(() -> ring.setWriteStream(second, 256)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("256").hasMessageContaining("0..255");
            assertThatThrownBy(() -> ring.setWriteStream(second, -1)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    @SuppressWarnings("restricted") // a 4 GiB view at a fake address: never dereferenced
    void lengthOver32BitsIsRejected() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            MemorySegment huge = MemorySegment.ofAddress(4096).reinterpret(1L << 32);
            assertThatThrownBy(() -> ring.prepRead(0, huge, 0, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4294967296");
            assertThat(ring.pendingSubmissions()).isZero();
        }
    }

    @Test
    void directWriteThenReadRoundTrip() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8));
             NativeFile file = openDirect("rw");
             Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(2 * BLOCK, BLOCK);
            MemorySegment in = arena.allocate(2 * BLOCK, BLOCK);
            fill(out, 5);

            ring.prepWrite(file.fd(), out, BLOCK, 1);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(1, 2 * BLOCK, 0, 0));
            assertThat(file.size()).isEqualTo(3 * BLOCK);

            ring.prepRead(file.fd(), in, BLOCK, 2);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(2, 2 * BLOCK, 0, 0));
            assertThat(in.mismatch(out)).isEqualTo(-1);

            // The hole before it reads back as zeros.
            MemorySegment hole = in.asSlice(0, BLOCK);
            ring.prepRead(file.fd(), hole, 0, 3);
            assertThat(completeOne(ring).res()).isEqualTo(BLOCK);
            assertThat(bytes(hole)).containsOnly((byte) 0);
        }
        assertThat(Files.size(dir.resolve("rw"))).isEqualTo(3 * BLOCK);
    }

    @Test
    void readPastEndOfFileIsShort() throws IOException {
        Path path = dir.resolve("short");
        byte[] content = new byte[1000];
        for (int i = 0; i < content.length; i++) {
            content[i] = (byte) (i * 7);
        }
        Files.write(path, content);
        try (Ring ring = Ring.open(RingOptions.of(8));
             NativeFile file = NativeFile.open(path, false, false, false);
             Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(BLOCK);
            ring.prepRead(file.fd(), in, 0, 1);
            assertThat(completeOne(ring).res()).isEqualTo(1000);
            assertThat(bytes(in.asSlice(0, 1000))).isEqualTo(content);
            ring.prepRead(file.fd(), in, 5000, 2);
            assertThat(completeOne(ring).res()).as("at EOF").isZero();
        }
    }

    @Test
    void fixedBuffersWriteAndReadBack() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8));
             NativeFile file = openDirect("fixed");
             Arena arena = Arena.ofConfined()) {
            MemorySegment region = arena.allocate(16 * BLOCK, BLOCK);
            ring.registerBuffers(region);
            MemorySegment out = region.asSlice(BLOCK, 2 * BLOCK);
            MemorySegment in = region.asSlice(8 * BLOCK, 2 * BLOCK);
            fill(out, 9);

            long sqe = ring.prepWriteFixed(file.fd(), out, 4 * BLOCK, 0, 10);
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_BYTE, sqe)).isEqualTo((byte) Ring.OP_WRITE_FIXED);
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_SHORT, sqe + 40)).isZero();
            assertThat(completeOne(ring)).isEqualTo(new Cqe(10, 2 * BLOCK, 0, 0));

            ring.prepReadFixed(file.fd(), in, 4 * BLOCK, 0, 11);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(11, 2 * BLOCK, 0, 0));
            assertThat(bytes(in)).isEqualTo(bytes(out));

            // A fixed read into memory outside the registered buffer is refused by the kernel.
            MemorySegment outside = arena.allocate(BLOCK, BLOCK);
            ring.prepReadFixed(file.fd(), outside, 0, 0, 12);
            Cqe refused = completeOne(ring);
            assertThat(refused.userData()).isEqualTo(12);
            assertThat(Errno.name(-refused.res())).isEqualTo("EFAULT");

            ring.unregisterBuffers();
            ring.prepReadFixed(file.fd(), in, 4 * BLOCK, 0, 13);
            assertThat(completeOne(ring).res()).as("no buffers registered any more").isNegative();
        }
    }

    @Test
    void sparseBufferTableUpdatedSlot() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8));
             NativeFile file = openDirect("sparse");
             Arena arena = Arena.ofConfined()) {
            ring.registerSparseBuffers(4);
            MemorySegment region = arena.allocate(4 * BLOCK, BLOCK);
            ring.updateBuffer(2, region);
            MemorySegment out = region.asSlice(0, BLOCK);
            MemorySegment in = region.asSlice(2 * BLOCK, BLOCK);
            fill(out, 77);

            ring.prepWriteFixed(file.fd(), out, 0, 2, 1);
            assertThat(completeOne(ring).res()).isEqualTo(BLOCK);
            ring.prepReadFixed(file.fd(), in, 0, 2, 2);
            assertThat(completeOne(ring).res()).isEqualTo(BLOCK);
            assertThat(bytes(in)).isEqualTo(bytes(out));

            ring.prepReadFixed(file.fd(), in, 0, 1, 3);
            assertThat(completeOne(ring).res()).as("slot 1 is still empty").isNegative();
        }
    }

    @Test
    void writevAndReadvScatterAndGatherExactBytes() throws IOException {
        Path path = dir.resolve("vec");
        try (Ring ring = Ring.open(RingOptions.of(8));
             NativeFile file = NativeFile.open(path, true, true, false);
             Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(100);
            MemorySegment b = arena.allocate(28);
            a.fill((byte) 'A');
            b.fill((byte) 'B');
            MemorySegment vecs = arena.allocate(iovec.layout(), 2);
            iovec.iov_base(iovec.asSlice(vecs, 0), a);
            iovec.iov_len(iovec.asSlice(vecs, 0), a.byteSize());
            iovec.iov_base(iovec.asSlice(vecs, 1), b);
            iovec.iov_len(iovec.asSlice(vecs, 1), b.byteSize());

            long sqe = ring.prepWritev(file.fd(), vecs, 2, 10, 1);
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_LONG, sqe + 16)).isEqualTo(vecs.address());
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_INT, sqe + 24)).as("len = iovec count").isEqualTo(2);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(1, 128, 0, 0));

            byte[] expected = new byte[138];
            Arrays.fill(expected, 10, 110, (byte) 'A');
            Arrays.fill(expected, 110, 138, (byte) 'B');
            assertThat(Files.readAllBytes(path)).isEqualTo(expected);

            // Read it back split differently: 60 + 68 bytes from offset 10.
            MemorySegment c = arena.allocate(60);
            MemorySegment d = arena.allocate(68);
            iovec.iov_base(iovec.asSlice(vecs, 0), c);
            iovec.iov_len(iovec.asSlice(vecs, 0), c.byteSize());
            iovec.iov_base(iovec.asSlice(vecs, 1), d);
            iovec.iov_len(iovec.asSlice(vecs, 1), d.byteSize());
            ring.prepReadv(file.fd(), vecs, 2, 10, 2);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(2, 128, 0, 0));
            assertThat(bytes(c)).containsOnly((byte) 'A');
            byte[] dExpected = new byte[68];
            Arrays.fill(dExpected, 0, 40, (byte) 'A');
            Arrays.fill(dExpected, 40, 68, (byte) 'B');
            assertThat(bytes(d)).isEqualTo(dExpected);
        }
    }

    @Test
    void iovecArrayTooSmallIsRejected() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8));
             Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocate(iovec.layout());
            assertThatThrownBy(() -> ring.prepReadv(0, one, 2, 0, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot hold 2 iovecs");
            assertThatThrownBy(() -> ring.prepWritev(0, one, 0, 0, 1))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(ring.pendingSubmissions()).isZero();
        }
    }

    @Test
    void fsyncAndFdatasyncComplete() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8));
             NativeFile file = openDirect("sync");
             Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(BLOCK, BLOCK);
            fill(out, 1);
            ring.prepWrite(file.fd(), out, 0, 1);
            assertThat(completeOne(ring).res()).isEqualTo(BLOCK);

            long sqe = ring.prepFsync(file.fd(), false, 2);
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_BYTE, sqe)).isEqualTo((byte) Ring.OP_FSYNC);
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_INT, sqe + 28)).isZero();
            assertThat(completeOne(ring)).isEqualTo(new Cqe(2, 0, 0, 0));

            sqe = ring.prepFsync(file.fd(), true, 3);
            assertThat(ring.sqeArea().get(ValueLayout.JAVA_INT, sqe + 28)).as("IORING_FSYNC_DATASYNC").isEqualTo(1);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(3, 0, 0, 0));
        }
    }

    @Test
    void registeredFileIsAddressedByIndex() throws IOException {
        try (Ring ring = Ring.open(RingOptions.of(8));
             NativeFile file = openDirect("registered");
             Arena arena = Arena.ofConfined()) {
            ring.registerFiles(file.fd());
            MemorySegment out = arena.allocate(BLOCK, BLOCK);
            MemorySegment in = arena.allocate(BLOCK, BLOCK);
            fill(out, 3);

            long sqe = ring.prepWrite(0, out, 0, 1);
            ring.addSqeFlags(sqe, Ring.SQE_FIXED_FILE);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(1, BLOCK, 0, 0));

            sqe = ring.prepRead(0, in, 0, 2);
            ring.addSqeFlags(sqe, Ring.SQE_FIXED_FILE);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(2, BLOCK, 0, 0));
            assertThat(bytes(in)).isEqualTo(bytes(out));

            sqe = ring.prepRead(1, in, 0, 3);
            ring.addSqeFlags(sqe, Ring.SQE_FIXED_FILE);
            assertThat(completeOne(ring)).as("index 1 is not registered")
                    .isEqualTo(new Cqe(3, -Errno.EBADF, 0, 0));

            ring.unregisterFiles();
        }
    }

    @Test
    void misalignedDirectIoCompletesWithEinval() throws IOException {
        assertThat(Errno.name(22)).isEqualTo("EINVAL");
        assertThat(Errno.EINVAL).isEqualTo(22);
        try (Ring ring = Ring.open(RingOptions.of(8));
             NativeFile file = openDirect("misaligned");
             Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(2 * BLOCK, BLOCK);
            fill(buf, 0);
            ring.prepWrite(file.fd(), buf.asSlice(0, BLOCK), 0, 1); // aligned: fine
            assertThat(completeOne(ring)).isEqualTo(new Cqe(1, BLOCK, 0, 0));

            ring.prepWrite(file.fd(), buf.asSlice(0, BLOCK), 1, 2); // offset 1
            assertThat(completeOne(ring)).isEqualTo(new Cqe(2, -Errno.EINVAL, 0, 0));

            ring.prepWrite(file.fd(), buf.asSlice(1, BLOCK), 0, 3); // buffer address + 1
            assertThat(completeOne(ring)).isEqualTo(new Cqe(3, -Errno.EINVAL, 0, 0));

            ring.prepRead(file.fd(), buf.asSlice(1, BLOCK), 0, 4);
            assertThat(completeOne(ring)).isEqualTo(new Cqe(4, -Errno.EINVAL, 0, 0));

            assertThat(file.size()).as("the refused writes changed nothing").isEqualTo(BLOCK);
        }
    }

    // ---- ownership and lifecycle ----

    @Test
    void closeTwiceIsHarmlessAndUseAfterCloseThrows() throws IOException {
        Ring ring = Ring.open(RingOptions.of(8));
        assertThat(ring.isClosed()).isFalse();
        ring.close();
        assertThat(ring.isClosed()).isTrue();
        ring.close();
        assertThat(ring.isClosed()).isTrue();
        // The SQ/CQ rings are unmapped now: touching them must fail in Java, not fault in the JVM.
        assertThatThrownBy(() -> ring.prepNop(1)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(ring::completionsReady).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> ring.reap((u, r, f, x) -> { })).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(ring::submit).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void anotherThreadCannotUseTheRing() throws Exception {
        try (Ring ring = Ring.open(RingOptions.of(8))) {
            assertThat(failureOnAnotherThread(() -> ring.prepNop(1))).isInstanceOf(WrongThreadException.class);
            assertThat(failureOnAnotherThread(ring::submit)).isInstanceOf(WrongThreadException.class);
            assertThat(failureOnAnotherThread(() -> ring.reap((u, r, f, x) -> { })))
                    .isInstanceOf(WrongThreadException.class);
            assertThat(failureOnAnotherThread(ring::sqSpace)).isInstanceOf(WrongThreadException.class);

            // The refused attempts left the owner's ring intact: no slot leaked, no stray SQE.
            assertThat(ring.pendingSubmissions()).isZero();
            assertThat(ring.sqSpace()).isEqualTo(8);
            for (int i = 0; i < 8; i++) {
                assertThat(ring.prepNop(i)).isEqualTo(i * 64L);
            }
            assertThat(complete(ring, 8)).extracting(Cqe::userData)
                    .containsExactlyInAnyOrder(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L);
        }
    }

    @FunctionalInterface
    interface Action {
        Object run() throws Exception;
    }

    /** Runs {@code action} on a fresh thread and returns what it threw (fails if it returned). */
    private static Throwable failureOnAnotherThread(Action action) throws InterruptedException {
        CompletableFuture<Object> result = new CompletableFuture<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                result.complete(action.run());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        t.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(result).as("the other thread finished").isDone();
        try {
            Object value = result.get();
            throw new AssertionError("expected a failure on the other thread, got " + value);
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }
}
