package io.fdpblock.linux;

import io.fdpblock.ffi.FdpNative;
import io.fdpblock.ffi.timespec;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The libc calls of fdpblock, in one place. The symbols and descriptors come from the jextract
 * bindings; the handles are re-linked here with {@code captureCallState("errno")} because errno read
 * after a downcall returns may already belong to the JVM. Every method returns the call's result, or
 * {@code -errno} when it failed, and never allocates: the capture state and an 8-byte scratch cell
 * are per thread.
 */
final class Syscalls {
    private Syscalls() {}

    static {
        NativeLibrary.ensureLoaded(); // fails with the reason, e.g. the --enable-native-access to add
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO =
            CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle OPEN = LINKER.downcallHandle(FdpNative.open.address(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    /** ioctl(fd, request, void *arg): the only form fdpblock uses. */
    private static final MethodHandle IOCTL_PTR = LINKER.downcallHandle(FdpNative.ioctl.address(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = capture(FdpNative.close$address(), FdpNative.close$descriptor());
    private static final MethodHandle READ = capture(FdpNative.read$address(), FdpNative.read$descriptor());
    private static final MethodHandle PREAD = capture(FdpNative.pread$address(), FdpNative.pread$descriptor());
    private static final MethodHandle PWRITE = capture(FdpNative.pwrite$address(), FdpNative.pwrite$descriptor());
    private static final MethodHandle FSTAT = capture(FdpNative.fstat$address(), FdpNative.fstat$descriptor());
    private static final MethodHandle FDATASYNC =
            capture(FdpNative.fdatasync$address(), FdpNative.fdatasync$descriptor());
    private static final MethodHandle FLOCK = capture(FdpNative.flock$address(), FdpNative.flock$descriptor());
    private static final MethodHandle FALLOCATE =
            capture(FdpNative.fallocate$address(), FdpNative.fallocate$descriptor());
    private static final MethodHandle EVENTFD = capture(FdpNative.eventfd$address(), FdpNative.eventfd$descriptor());
    private static final MethodHandle EVENTFD_READ =
            capture(FdpNative.eventfd_read$address(), FdpNative.eventfd_read$descriptor());
    private static final MethodHandle EVENTFD_WRITE =
            capture(FdpNative.eventfd_write$address(), FdpNative.eventfd_write$descriptor());
    private static final MethodHandle POLL = capture(FdpNative.poll$address(), FdpNative.poll$descriptor());
    private static final MethodHandle MMAP = capture(FdpNative.mmap$address(), FdpNative.mmap$descriptor());
    private static final MethodHandle MUNMAP = capture(FdpNative.munmap$address(), FdpNative.munmap$descriptor());
    private static final MethodHandle MADVISE = capture(FdpNative.madvise$address(), FdpNative.madvise$descriptor());
    private static final MethodHandle CLOCK_GETTIME =
            capture(FdpNative.clock_gettime$address(), FdpNative.clock_gettime$descriptor());

    private static MethodHandle capture(MemorySegment address, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(address, descriptor, CAPTURE_ERRNO);
    }

    /** Per-thread capture state and scratch: lives as long as the thread (auto arena). */
    private static final class PerThread {
        final MemorySegment capture;
        final MemorySegment scratch;
        final MemorySegment time;

        PerThread() {
            Arena arena = Arena.ofAuto();
            capture = arena.allocate(CAPTURE_LAYOUT);
            scratch = arena.allocate(ValueLayout.JAVA_LONG);
            time = arena.allocate(timespec.layout());
        }
    }

    private static final ThreadLocal<PerThread> PER_THREAD = ThreadLocal.withInitial(PerThread::new);

    private static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    static int open(MemorySegment path, int flags, int mode) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int fd = (int) OPEN.invokeExact(capture, path, flags, mode);
            return fd >= 0 ? fd : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("open", t);
        }
    }

    static int ioctl(int fd, long request, MemorySegment arg) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) IOCTL_PTR.invokeExact(capture, fd, request, arg);
            return r >= 0 ? r : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("ioctl", t);
        }
    }

    static int close(int fd) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) CLOSE.invokeExact(capture, fd);
            return r == 0 ? 0 : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("close", t);
        }
    }

    static long read(int fd, MemorySegment buf, long count) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            long r = (long) READ.invokeExact(capture, fd, buf, count);
            return r >= 0 ? r : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("read", t);
        }
    }

    static long pread(int fd, MemorySegment buf, long count, long offset) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            long r = (long) PREAD.invokeExact(capture, fd, buf, count, offset);
            return r >= 0 ? r : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("pread", t);
        }
    }

    static long pwrite(int fd, MemorySegment buf, long count, long offset) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            long r = (long) PWRITE.invokeExact(capture, fd, buf, count, offset);
            return r >= 0 ? r : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("pwrite", t);
        }
    }

    static int fstat(int fd, MemorySegment statBuf) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) FSTAT.invokeExact(capture, fd, statBuf);
            return r == 0 ? 0 : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("fstat", t);
        }
    }

    static int fdatasync(int fd) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) FDATASYNC.invokeExact(capture, fd);
            return r == 0 ? 0 : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("fdatasync", t);
        }
    }

    static int flock(int fd, int operation) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) FLOCK.invokeExact(capture, fd, operation);
            return r == 0 ? 0 : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("flock", t);
        }
    }

    static int fallocate(int fd, int mode, long offset, long length) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) FALLOCATE.invokeExact(capture, fd, mode, offset, length);
            return r == 0 ? 0 : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("fallocate", t);
        }
    }

    static int eventfd(int initial, int flags) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int fd = (int) EVENTFD.invokeExact(capture, initial, flags);
            return fd >= 0 ? fd : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("eventfd", t);
        }
    }

    /** @return the counter read (> 0), or -errno (-EAGAIN when it was zero on a non-blocking fd) */
    static long eventfdRead(int fd) {
        PerThread t = PER_THREAD.get();
        try {
            int r = (int) EVENTFD_READ.invokeExact(t.capture, fd, t.scratch);
            return r == 0 ? t.scratch.get(ValueLayout.JAVA_LONG, 0) : -errno(t.capture);
        } catch (Throwable e) {
            throw unexpected("eventfd_read", e);
        }
    }

    static int eventfdWrite(int fd, long value) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) EVENTFD_WRITE.invokeExact(capture, fd, value);
            return r == 0 ? 0 : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("eventfd_write", t);
        }
    }

    static int poll(MemorySegment fds, long nfds, int timeoutMillis) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) POLL.invokeExact(capture, fds, nfds, timeoutMillis);
            return r >= 0 ? r : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("poll", t);
        }
    }

    /** clock_gettime(clock): nanoseconds of that clock, or {@code -errno}. */
    static long clockGettimeNanos(int clock) {
        PerThread t = PER_THREAD.get();
        try {
            int r = (int) CLOCK_GETTIME.invokeExact(t.capture, clock, t.time);
            return r == 0 ? timespec.tv_sec(t.time) * 1_000_000_000L + timespec.tv_nsec(t.time) : -errno(t.capture);
        } catch (Throwable e) {
            throw unexpected("clock_gettime", e);
        }
    }

    /** An anonymous private read-write mapping: its address, or -errno (mmap's MAP_FAILED is -1). */
    static long mmapAnonymous(long length) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            MemorySegment m = (MemorySegment) MMAP.invokeExact(capture, MemorySegment.NULL, length,
                    FdpNative.PROT_READ() | FdpNative.PROT_WRITE(), FdpNative.MAP_PRIVATE() | FdpNative.MAP_ANONYMOUS(),
                    -1, 0L);
            return m.address() != -1L ? m.address() : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("mmap", t);
        }
    }

    static int munmap(long address, long length) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) MUNMAP.invokeExact(capture, MemorySegment.ofAddress(address), length);
            return r == 0 ? 0 : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("munmap", t);
        }
    }

    static int madvise(long address, long length, int advice) {
        MemorySegment capture = PER_THREAD.get().capture;
        try {
            int r = (int) MADVISE.invokeExact(capture, MemorySegment.ofAddress(address), length, advice);
            return r == 0 ? 0 : -errno(capture);
        } catch (Throwable t) {
            throw unexpected("madvise", t);
        }
    }

    private static AssertionError unexpected(String call, Throwable t) {
        return new AssertionError("downcall " + call + " failed in the JVM (not in the kernel)", t);
    }
}
