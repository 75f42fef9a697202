package io.fdpblock.uring;

import io.fdpblock.ffi.FdpNative;
import io.fdpblock.ffi.fdpblock_sqe_write_stream;
import io.fdpblock.ffi.io_uring;
import io.fdpblock.ffi.io_uring_cq;
import io.fdpblock.ffi.io_uring_cqe;
import io.fdpblock.ffi.io_uring_params;
import io.fdpblock.ffi.io_uring_probe;
import io.fdpblock.ffi.io_uring_probe_op;
import io.fdpblock.ffi.io_uring_sq;
import io.fdpblock.ffi.io_uring_sqe;
import io.fdpblock.ffi.iovec;
import io.fdpblock.linux.Errno;
import io.fdpblock.linux.NativeLibrary;
import io.fdpblock.nvme.WriteStreams;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One io_uring instance, set up by liburing and driven from Java: SQEs are filled through the
 * generated {@code io_uring_sqe} layout (liburing's {@code io_uring_prep_*} helpers are static inline
 * and not in {@code liburing.so.2}), completions are reaped straight from the mapped CQ ring.
 *
 * <p>Not thread-safe, by design: one thread owns a ring (its memory lives in a confined arena, and with
 * {@code SINGLE_ISSUER} the kernel insists on it too). The prep and reap paths allocate nothing.
 *
 * <p>Usage: {@code long sqe = ring.prepRead(...)} ({@code -1} when the submission queue is full:
 * {@link #submit()} and try again), then {@link #submit()} or {@link #submitAndWait(int)}, then
 * {@link #reap(CompletionHandler)}.
 */
public final class Ring implements AutoCloseable {
    static {
        NativeLibrary.ensureLoaded(); // fails with the reason, e.g. the --enable-native-access to add
    }

    // Setup flags and opcodes, from the generated bindings.
    public static final int SETUP_SQPOLL = FdpNative.IORING_SETUP_SQPOLL();
    public static final int SETUP_COOP_TASKRUN = FdpNative.IORING_SETUP_COOP_TASKRUN();
    public static final int SETUP_SQE128 = FdpNative.IORING_SETUP_SQE128();
    public static final int SETUP_CQE32 = FdpNative.IORING_SETUP_CQE32();
    public static final int SETUP_SINGLE_ISSUER = FdpNative.IORING_SETUP_SINGLE_ISSUER();
    public static final int SETUP_DEFER_TASKRUN = FdpNative.IORING_SETUP_DEFER_TASKRUN();

    public static final int OP_NOP = FdpNative.IORING_OP_NOP();
    public static final int OP_READV = FdpNative.IORING_OP_READV();
    public static final int OP_WRITEV = FdpNative.IORING_OP_WRITEV();
    public static final int OP_FSYNC = FdpNative.IORING_OP_FSYNC();
    public static final int OP_READ_FIXED = FdpNative.IORING_OP_READ_FIXED();
    public static final int OP_WRITE_FIXED = FdpNative.IORING_OP_WRITE_FIXED();
    public static final int OP_READ = FdpNative.IORING_OP_READ();
    public static final int OP_WRITE = FdpNative.IORING_OP_WRITE();
    public static final int OP_URING_CMD = FdpNative.IORING_OP_URING_CMD();
    public static final int OP_ASYNC_CANCEL = FdpNative.IORING_OP_ASYNC_CANCEL();

    public static final int SQE_FIXED_FILE = FdpNative.IOSQE_FIXED_FILE();
    public static final int URING_CMD_FIXED = FdpNative.IORING_URING_CMD_FIXED();
    /** Byte offset of the command area ({@code sqe->cmd}) inside an SQE: 48. */
    public static final long SQE_CMD_OFFSET = io_uring_sqe.cmd$offset();
    /** Bytes of command area in a 128-byte SQE: 80. */
    public static final int SQE128_CMD_BYTES = 128 - (int) SQE_CMD_OFFSET;

    private static final long SQE_BASE_SIZE = io_uring_sqe.sizeof();
    private static final long CQE_BASE_SIZE = io_uring_cqe.sizeof();

    private static final long SQE_OPCODE = io_uring_sqe.opcode$offset();
    private static final long SQE_FLAGS = io_uring_sqe.flags$offset();
    private static final long SQE_FD = io_uring_sqe.fd$offset();
    private static final long SQE_OFF = io_uring_sqe.off$offset();
    private static final long SQE_ADDR = io_uring_sqe.addr$offset();
    private static final long SQE_LEN = io_uring_sqe.len$offset();
    private static final long SQE_OP_FLAGS = io_uring_sqe.rw_flags$offset();
    private static final long SQE_USER_DATA = io_uring_sqe.user_data$offset();
    private static final long SQE_BUF_INDEX = io_uring_sqe.buf_index$offset();
    private static final long SQE_CMD_OP = io_uring_sqe.cmd_op$offset();
    /** Linux >= 6.16: byte 44, in the union with splice_fd_in/file_index (headers/sqe_write_stream.h). */
    private static final long SQE_WRITE_STREAM = fdpblock_sqe_write_stream.write_stream$offset();

    private static final long CQE_USER_DATA = io_uring_cqe.user_data$offset();
    private static final long CQE_RES = io_uring_cqe.res$offset();
    private static final long CQE_FLAGS = io_uring_cqe.flags$offset();
    private static final long CQE_BIG = io_uring_cqe.big_cqe$offset();

    private static final long SQ = io_uring.sq$offset();
    private static final long CQ = io_uring.cq$offset();

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    /** Receives each completion; called on the ring's thread, must not block. */
    @FunctionalInterface
    public interface CompletionHandler {
        /**
         * @param res the result: bytes for reads and writes, {@code -errno} on failure; for NVMe
         *        passthru 0 = success, {@code > 0} an NVMe status
         * @param extra the first 8 bytes of the big CQE (NVMe result DW0/DW1), 0 without CQE32
         */
        void onCompletion(long userData, int res, int flags, long extra);
    }

    private final Arena arena;
    private final MemorySegment ring;
    private final int setupFlags;
    private final int features;
    private final int ringFd;
    private final long sqeSize;
    private final long cqeSize;
    private final int sqEntries;
    private final int sqMask;
    private final int cqEntries;
    private final int cqMask;
    private final MemorySegment sqes;
    private final MemorySegment sqHead;
    private final MemorySegment cqes;
    private final MemorySegment cqHead;
    private final MemorySegment cqTail;
    private final boolean[] supportedOps;
    /** Our copy of {@code sq->sqe_tail}; written back to the struct before each submit. */
    private int sqeTail;
    /** See {@link #reapLeft()}. */
    private int reapLeft;
    private boolean closed;

    private Ring(Arena arena, MemorySegment ring, int features) {
        this.arena = arena;
        this.ring = ring;
        this.features = features;
        this.setupFlags = io_uring.flags(ring);
        this.ringFd = io_uring.ring_fd(ring);
        this.sqeSize = (setupFlags & SETUP_SQE128) != 0 ? 2 * SQE_BASE_SIZE : SQE_BASE_SIZE;
        this.cqeSize = (setupFlags & SETUP_CQE32) != 0 ? 2 * CQE_BASE_SIZE : CQE_BASE_SIZE;
        this.sqEntries = ring.get(ValueLayout.JAVA_INT, SQ + io_uring_sq.ring_entries$offset());
        this.sqMask = ring.get(ValueLayout.JAVA_INT, SQ + io_uring_sq.ring_mask$offset());
        this.cqEntries = ring.get(ValueLayout.JAVA_INT, CQ + io_uring_cq.ring_entries$offset());
        this.cqMask = ring.get(ValueLayout.JAVA_INT, CQ + io_uring_cq.ring_mask$offset());
        this.sqes = pointer(SQ + io_uring_sq.sqes$offset(), sqEntries * sqeSize);
        this.sqHead = pointer(SQ + io_uring_sq.khead$offset(), 4);
        this.cqes = pointer(CQ + io_uring_cq.cqes$offset(), cqEntries * cqeSize);
        this.cqHead = pointer(CQ + io_uring_cq.khead$offset(), 4);
        this.cqTail = pointer(CQ + io_uring_cq.ktail$offset(), 4);
        this.sqeTail = ring.get(ValueLayout.JAVA_INT, SQ + io_uring_sq.sqe_tail$offset());
        // Identity SQ index array, as liburing >= 2.2 sets it up; harmless if it already did. liburing
        // >= 2.6 may set the ring up without one (IORING_SETUP_NO_SQARRAY): the pointer is then NULL.
        if (!ring.get(ValueLayout.ADDRESS, SQ + io_uring_sq.array$offset()).equals(MemorySegment.NULL)) {
            MemorySegment array = pointer(SQ + io_uring_sq.array$offset(), 4L * sqEntries);
            for (int i = 0; i < sqEntries; i++) {
                array.setAtIndex(ValueLayout.JAVA_INT, i, i);
            }
        }
        this.supportedOps = probeOps();
    }

    /**
     * A pointer field of {@code struct io_uring} as a segment of {@code size} bytes. Bound to the ring's
     * confined arena: a plain {@code reinterpret(size)} would keep the global scope of the read address,
     * so the mapped rings could be touched from any thread (corrupting {@code sqeTail}) and, after
     * {@link #close()} unmapped them, dereferenced (SIGSEGV) instead of failing with an exception.
     */
    private MemorySegment pointer(long offset, long size) {
        return ring.get(ValueLayout.ADDRESS, offset).reinterpret(size, arena, null);
    }

    /**
     * Sets up a ring; the calling thread becomes its owner.
     *
     * @throws IOException naming the call, the flags tried and the errno, e.g. when io_uring is
     *         disabled ({@code /proc/sys/kernel/io_uring_disabled}) or the kernel is too old
     */
    public static Ring open(RingOptions options) throws IOException {
        return open(options, false);
    }

    /**
     * Sets up a ring; the calling thread becomes its owner. {@code closeFromAnyThread}: its memory lives
     * in a shared arena, so that another thread may {@link #close()} it once its owner is done with it
     * (e.g. a ring a thread used for its own blocking I/O, torn down with the device); the ring is still
     * driven by one thread at a time.
     */
    public static Ring open(RingOptions options, boolean closeFromAnyThread) throws IOException {
        Uring.requireLibrary();
        int base = (options.bigEntries() ? SETUP_SQE128 | SETUP_CQE32 : 0)
                | (options.sqPollIdleMillis() > 0 ? SETUP_SQPOLL : 0);
        int[] attempts;
        if (!options.taskrunHints()) {
            attempts = new int[] {base};
        } else if (options.sqPollIdleMillis() > 0) { // DEFER_TASKRUN is not allowed with SQPOLL
            attempts = new int[] {base | SETUP_COOP_TASKRUN, base};
        } else {
            attempts = new int[] {base | SETUP_SINGLE_ISSUER | SETUP_DEFER_TASKRUN, base | SETUP_COOP_TASKRUN, base};
        }
        Arena arena = closeFromAnyThread ? Arena.ofShared() : Arena.ofConfined();
        try {
            MemorySegment ring = arena.allocate(io_uring.layout());
            MemorySegment params = arena.allocate(io_uring_params.layout());
            int r = -Errno.EINVAL;
            int tried = base;
            for (int flags : attempts) {
                params.fill((byte) 0);
                io_uring_params.flags(params, flags);
                io_uring_params.sq_thread_idle(params, options.sqPollIdleMillis());
                tried = flags;
                r = FdpNative.io_uring_queue_init_params(options.entries(), ring, params);
                if (r != -Errno.EINVAL) {
                    break;
                }
            }
            if (r < 0) {
                String hint = options.bigEntries() && r == -Errno.EINVAL
                        ? "SQE128/CQE32 need Linux >= 5.19"
                        : r == -1 || r == -Errno.ENOMEM ? "io_uring may be disabled (/proc/sys/kernel/io_uring_disabled) or RLIMIT_MEMLOCK too low"
                        : null;
                throw Errno.exception("io_uring_queue_init_params(entries=" + options.entries() + ", flags="
                        + describeFlags(tried) + ")", -r, hint);
            }
            return new Ring(arena, ring, io_uring_params.features(params));
        } catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** Readable setup flags, e.g. {@code SQE128|CQE32|SINGLE_ISSUER|DEFER_TASKRUN}. */
    public static String describeFlags(int flags) {
        StringBuilder sb = new StringBuilder();
        String[] names = {"SQPOLL", "COOP_TASKRUN", "SQE128", "CQE32", "SINGLE_ISSUER", "DEFER_TASKRUN"};
        int[] bits = {SETUP_SQPOLL, SETUP_COOP_TASKRUN, SETUP_SQE128, SETUP_CQE32, SETUP_SINGLE_ISSUER,
                SETUP_DEFER_TASKRUN};
        for (int i = 0; i < bits.length; i++) {
            if ((flags & bits[i]) != 0) {
                sb.append(sb.isEmpty() ? "" : "|").append(names[i]);
            }
        }
        return sb.isEmpty() ? "0" : sb.toString();
    }

    private boolean[] probeOps() {
        MemorySegment probe = FdpNative.io_uring_get_probe_ring(ring);
        boolean[] ops = new boolean[256];
        if (probe.equals(MemorySegment.NULL)) {
            return ops; // very old kernel: nothing known
        }
        try {
            int lastOp = Byte.toUnsignedInt(io_uring_probe.last_op(probe.reinterpret(io_uring_probe.sizeof())));
            long opSize = io_uring_probe_op.sizeof();
            MemorySegment all = probe.reinterpret(io_uring_probe.sizeof() + opSize * 256);
            for (int op = 0; op <= lastOp && op < 256; op++) {
                int flags = Short.toUnsignedInt(all.get(ValueLayout.JAVA_SHORT,
                        io_uring_probe.ops$offset() + op * opSize + io_uring_probe_op.flags$offset()));
                ops[op] = (flags & FdpNative.IO_URING_OP_SUPPORTED()) != 0;
            }
        } finally {
            FdpNative.io_uring_free_probe(probe);
        }
        return ops;
    }

    public boolean isOpcodeSupported(int opcode) {
        return opcode >= 0 && opcode < supportedOps.length && supportedOps[opcode];
    }

    /** The setup flags the kernel accepted (after fallbacks). */
    public int setupFlags() {
        return setupFlags;
    }

    public int features() {
        return features;
    }

    public int fd() {
        return ringFd;
    }

    public int sqEntries() {
        return sqEntries;
    }

    public int cqEntries() {
        return cqEntries;
    }

    /** 64, or 128 with SQE128. */
    public long sqeSize() {
        return sqeSize;
    }

    /** 16, or 32 with CQE32. */
    public long cqeSize() {
        return cqeSize;
    }

    /** The mapped SQE array; write a URING_CMD's command at {@code sqe + SQE_CMD_OFFSET}. */
    public MemorySegment sqeArea() {
        return sqes;
    }

    /** SQEs filled but not yet submitted. */
    public int pendingSubmissions() {
        return sqeTail - ring.get(ValueLayout.JAVA_INT, SQ + io_uring_sq.sqe_head$offset());
    }

    /** Free SQ slots right now. */
    public int sqSpace() {
        int head = (int) INT.getAcquire(sqHead, 0L);
        return sqEntries - (sqeTail - head);
    }

    /** @return the byte offset of a zeroed SQE in {@link #sqeArea()}, or -1 when the SQ is full */
    public long nextSqe() {
        int head = (int) INT.getAcquire(sqHead, 0L);
        if (sqeTail - head >= sqEntries) {
            return -1;
        }
        long sqe = (sqeTail & sqMask) * sqeSize;
        sqeTail++;
        for (long o = 0; o < sqeSize; o += 8) {
            sqes.set(ValueLayout.JAVA_LONG, sqe + o, 0L);
        }
        return sqe;
    }

    private long prep(int op, int fd, long addr, long len, long offset, long userData) {
        if (len < 0 || len > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("io_uring length " + len + " does not fit 32 bits");
        }
        long sqe = nextSqe();
        if (sqe < 0) {
            return -1;
        }
        sqes.set(ValueLayout.JAVA_BYTE, sqe + SQE_OPCODE, (byte) op);
        sqes.set(ValueLayout.JAVA_INT, sqe + SQE_FD, fd);
        sqes.set(ValueLayout.JAVA_LONG, sqe + SQE_OFF, offset);
        sqes.set(ValueLayout.JAVA_LONG, sqe + SQE_ADDR, addr);
        sqes.set(ValueLayout.JAVA_INT, sqe + SQE_LEN, (int) len);
        sqes.set(ValueLayout.JAVA_LONG, sqe + SQE_USER_DATA, userData);
        return sqe;
    }

    public long prepNop(long userData) {
        return prep(OP_NOP, -1, 0, 0, 0, userData);
    }

    /** READ of {@code buffer.byteSize()} bytes at {@code offset}; the buffer must stay alive until completion. */
    public long prepRead(int fd, MemorySegment buffer, long offset, long userData) {
        return prep(OP_READ, fd, buffer.address(), buffer.byteSize(), offset, userData);
    }

    public long prepWrite(int fd, MemorySegment buffer, long offset, long userData) {
        return prep(OP_WRITE, fd, buffer.address(), buffer.byteSize(), offset, userData);
    }

    /** READ_FIXED: {@code buffer} lies inside registered buffer {@code bufIndex}. */
    public long prepReadFixed(int fd, MemorySegment buffer, long offset, int bufIndex, long userData) {
        long sqe = prep(OP_READ_FIXED, fd, buffer.address(), buffer.byteSize(), offset, userData);
        if (sqe >= 0) {
            sqes.set(ValueLayout.JAVA_SHORT, sqe + SQE_BUF_INDEX, (short) bufIndex);
        }
        return sqe;
    }

    public long prepWriteFixed(int fd, MemorySegment buffer, long offset, int bufIndex, long userData) {
        long sqe = prep(OP_WRITE_FIXED, fd, buffer.address(), buffer.byteSize(), offset, userData);
        if (sqe >= 0) {
            sqes.set(ValueLayout.JAVA_SHORT, sqe + SQE_BUF_INDEX, (short) bufIndex);
        }
        return sqe;
    }

    /** READV over {@code count} {@code struct iovec}s at {@code iovecs} (alive until completion). */
    public long prepReadv(int fd, MemorySegment iovecs, int count, long offset, long userData) {
        checkIovecs(iovecs, count);
        return prep(OP_READV, fd, iovecs.address(), count, offset, userData);
    }

    public long prepWritev(int fd, MemorySegment iovecs, int count, long offset, long userData) {
        checkIovecs(iovecs, count);
        return prep(OP_WRITEV, fd, iovecs.address(), count, offset, userData);
    }

    private static void checkIovecs(MemorySegment iovecs, int count) {
        if (count < 1 || iovecs.byteSize() < count * iovec.sizeof()) {
            throw new IllegalArgumentException("iovec array of " + iovecs.byteSize() + " bytes cannot hold "
                    + count + " iovecs of " + iovec.sizeof() + " bytes");
        }
    }

    /** FSYNC; {@code datasync}: {@code IORING_FSYNC_DATASYNC} (like fdatasync). */
    public long prepFsync(int fd, boolean datasync, long userData) {
        long sqe = prep(OP_FSYNC, fd, 0, 0, 0, userData);
        if (sqe >= 0 && datasync) {
            sqes.set(ValueLayout.JAVA_INT, sqe + SQE_OP_FLAGS, FdpNative.IORING_FSYNC_DATASYNC());
        }
        return sqe;
    }

    /**
     * ASYNC_CANCEL of the request whose {@code user_data} is {@code target}: it completes with
     * {@code -ECANCELED} if it could still be cancelled (a read waiting on an eventfd can; block I/O
     * already issued cannot, and then completes by itself). Either way its CQE still comes.
     */
    public long prepCancel(long target, long userData) {
        return prep(OP_ASYNC_CANCEL, -1, target, 0, 0, userData);
    }

    /**
     * URING_CMD with {@code sqe->cmd_op = cmdOp} (e.g. {@code NVME_URING_CMD_IO}). The caller writes the
     * command ({@code struct nvme_uring_cmd}) at {@code sqe + SQE_CMD_OFFSET} in {@link #sqeArea()}.
     * Needs a ring with {@link RingOptions#bigEntries()}.
     */
    public long prepUringCmd(int fd, int cmdOp, long userData) {
        if ((setupFlags & SETUP_SQE128) == 0) {
            throw new IllegalStateException("URING_CMD for NVMe passthru needs a ring set up with SQE128|CQE32"
                    + " (RingOptions.withBigEntries(true))");
        }
        long sqe = prep(OP_URING_CMD, fd, 0, 0, 0, userData);
        if (sqe >= 0) {
            sqes.set(ValueLayout.JAVA_INT, sqe + SQE_CMD_OP, cmdOp);
        }
        return sqe;
    }

    /** Marks a URING_CMD as using registered buffer {@code bufIndex} ({@code IORING_URING_CMD_FIXED}). */
    public void setUringCmdFixed(long sqe, int bufIndex) {
        sqes.set(ValueLayout.JAVA_INT, sqe + SQE_OP_FLAGS, URING_CMD_FIXED);
        sqes.set(ValueLayout.JAVA_SHORT, sqe + SQE_BUF_INDEX, (short) bufIndex);
    }

    /**
     * Sets a WRITE's (or WRITE_FIXED's) write stream: 1..{@code queue/max_write_streams} of the block
     * device (Linux >= 6.16; 0 = none). The kernel then places the write with the stream's FDP placement
     * handle, for O_DIRECT writes only. Where the kernel has no write streams it ignores the byte, so ask
     * sysfs first ({@link WriteStreams#probe}).
     */
    public void setWriteStream(long sqe, int stream) {
        if (stream < 0 || stream > 255) {
            throw new IllegalArgumentException("write stream " + stream + " is outside 0..255 (the SQE field is one byte)");
        }
        sqes.set(ValueLayout.JAVA_BYTE, sqe + SQE_WRITE_STREAM, (byte) stream);
    }

    /** Sets {@code IOSQE_*} flags, e.g. {@link #SQE_FIXED_FILE} (the fd is then a registered file index). */
    public void addSqeFlags(long sqe, int flags) {
        byte f = sqes.get(ValueLayout.JAVA_BYTE, sqe + SQE_FLAGS);
        sqes.set(ValueLayout.JAVA_BYTE, sqe + SQE_FLAGS, (byte) (f | flags));
    }

    private void publishTail() {
        ring.set(ValueLayout.JAVA_INT, SQ + io_uring_sq.sqe_tail$offset(), sqeTail);
    }

    /**
     * Submits every prepared SQE.
     *
     * @return how many the kernel took; 0 when it asked to retry (EAGAIN, EBUSY: reap first; EINTR)
     */
    public int submit() throws IOException {
        publishTail();
        return checkSubmit(FdpNative.io_uring_submit(ring), "io_uring_submit");
    }

    /** Submits, then waits until at least {@code waitNr} completions are ready. */
    public int submitAndWait(int waitNr) throws IOException {
        publishTail();
        return checkSubmit(FdpNative.io_uring_submit_and_wait(ring, waitNr), "io_uring_submit_and_wait");
    }

    private int checkSubmit(int r, String call) throws IOException {
        if (r >= 0) {
            return r;
        }
        int errno = -r;
        if (errno == Errno.EAGAIN || errno == Errno.EINTR || errno == Errno.EBUSY) {
            return 0;
        }
        throw Errno.exception(call + "(ring fd=" + ringFd + ")", errno);
    }

    /**
     * During {@link #reap}: the completions it will still hand out after the one being handled (0 for the
     * last; more may have arrived since it started).
     */
    public int reapLeft() {
        return reapLeft;
    }

    /** Completions ready now (without entering the kernel). */
    public int completionsReady() {
        return (int) INT.getAcquire(cqTail, 0L) - (int) INT.get(cqHead, 0L);
    }

    /**
     * Hands every ready completion to {@code handler}, then marks them seen in one store.
     *
     * @return how many were reaped
     */
    public int reap(CompletionHandler handler) {
        reapLeft = 0;
        int head = (int) INT.get(cqHead, 0L);
        int tail = (int) INT.getAcquire(cqTail, 0L);
        if (head == tail) {
            return 0;
        }
        boolean big = cqeSize > CQE_BASE_SIZE;
        int n = 0;
        try {
            while (head != tail) {
                long cqe = (head & cqMask) * cqeSize;
                long userData = cqes.get(ValueLayout.JAVA_LONG, cqe + CQE_USER_DATA);
                int res = cqes.get(ValueLayout.JAVA_INT, cqe + CQE_RES);
                int flags = cqes.get(ValueLayout.JAVA_INT, cqe + CQE_FLAGS);
                long extra = big ? cqes.get(ValueLayout.JAVA_LONG, cqe + CQE_BIG) : 0L;
                head++;
                n++;
                reapLeft = tail - head;
                handler.onCompletion(userData, res, flags, extra);
            }
        } finally {
            INT.setRelease(cqHead, 0L, head);
        }
        return n;
    }

    /** Registers buffers for READ_FIXED/WRITE_FIXED; index i = {@code regions[i]}. */
    public void registerBuffers(MemorySegment... regions) throws IOException {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment iovecs = iovecs(tmp, regions);
            int r = FdpNative.io_uring_register_buffers(ring, iovecs, regions.length);
            if (r < 0) {
                throw Errno.exception("io_uring_register_buffers(" + regions.length + " regions)", -r,
                        -r == Errno.ENOMEM ? "raise RLIMIT_MEMLOCK (ulimit -l) or register less memory" : null);
            }
        }
    }

    /** Registers an empty table of {@code count} buffer slots, to be filled by {@link #updateBuffer}. */
    public void registerSparseBuffers(int count) throws IOException {
        int r = FdpNative.io_uring_register_buffers_sparse(ring, count);
        if (r < 0) {
            throw Errno.exception("io_uring_register_buffers_sparse(" + count + ")", -r);
        }
    }

    /** Puts {@code region} into registered buffer slot {@code index} (see {@link #registerSparseBuffers}). */
    public void updateBuffer(int index, MemorySegment region) throws IOException {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment iovecs = iovecs(tmp, region);
            MemorySegment tags = tmp.allocate(ValueLayout.JAVA_LONG);
            int r = FdpNative.io_uring_register_buffers_update_tag(ring, index, iovecs, tags, 1);
            if (r < 0) {
                throw Errno.exception("io_uring_register_buffers_update_tag(index=" + index + ", "
                        + region.byteSize() + " bytes)", -r,
                        -r == Errno.ENOMEM ? "raise RLIMIT_MEMLOCK (ulimit -l) or register less memory" : null);
            }
        }
    }

    /** Empties registered buffer slot {@code index} (see {@link #registerSparseBuffers}). */
    public void clearBuffer(int index) throws IOException {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment iov = tmp.allocate(iovec.layout()); // base NULL, length 0: an empty slot
            MemorySegment tags = tmp.allocate(ValueLayout.JAVA_LONG);
            int r = FdpNative.io_uring_register_buffers_update_tag(ring, index, iov, tags, 1);
            if (r < 0) {
                throw Errno.exception("io_uring_register_buffers_update_tag(index=" + index + ", empty)", -r);
            }
        }
    }

    private static MemorySegment iovecs(Arena arena, MemorySegment... regions) {
        MemorySegment iovecs = arena.allocate(iovec.layout(), regions.length);
        for (int i = 0; i < regions.length; i++) {
            MemorySegment v = iovec.asSlice(iovecs, i);
            iovec.iov_base(v, regions[i]);
            iovec.iov_len(v, regions[i].byteSize());
        }
        return iovecs;
    }

    public void unregisterBuffers() throws IOException {
        int r = FdpNative.io_uring_unregister_buffers(ring);
        if (r < 0) {
            throw Errno.exception("io_uring_unregister_buffers", -r);
        }
    }

    /** Registers files; SQEs then name them by index with {@link #SQE_FIXED_FILE}. */
    public void registerFiles(int... fds) throws IOException {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment arr = tmp.allocateFrom(ValueLayout.JAVA_INT, fds);
            int r = FdpNative.io_uring_register_files(ring, arr, fds.length);
            if (r < 0) {
                throw Errno.exception("io_uring_register_files(" + fds.length + " files)", -r);
            }
        }
    }

    public void unregisterFiles() throws IOException {
        int r = FdpNative.io_uring_unregister_files(ring);
        if (r < 0) {
            throw Errno.exception("io_uring_unregister_files", -r);
        }
    }

    public boolean isClosed() {
        return closed;
    }

    /** Tears the ring down (in-flight requests are cancelled by the kernel). Idempotent. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            FdpNative.io_uring_queue_exit(ring);
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "Ring[fd=" + ringFd + ", sq=" + sqEntries + ", cq=" + cqEntries + ", flags=" + describeFlags(setupFlags)
                + "]";
    }
}
