package io.fdpblock.linux;

import io.fdpblock.ffi.FdpNative;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A Linux eventfd in counter mode. {@link #signal()} adds one; {@link #drain()} reads and clears the
 * counter, so many signals before a wake-up coalesce into one. Signalling a closed EventFd is a
 * harmless no-op: the descriptor number is never written after close, even if the kernel has already
 * handed it to someone else.
 */
public final class EventFd implements AutoCloseable {
    static {
        NativeLibrary.ensureLoaded(); // fails with the reason, e.g. the --enable-native-access to add
    }

    private final int fd;
    /** Readers: signal/drain; writer: close. Held only for one non-blocking syscall. */
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    /** Written under the write lock; volatile so that {@link #isClosed()} needs no lock. */
    private volatile boolean closed;

    private EventFd(int fd) {
        this.fd = fd;
    }

    /** {@code eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)}: what consumers poll(2) on. */
    public static EventFd create() throws IOException {
        return create(FdpNative.EFD_NONBLOCK() | FdpNative.EFD_CLOEXEC(), "EFD_NONBLOCK|EFD_CLOEXEC");
    }

    /**
     * {@code eventfd(0, EFD_CLOEXEC)}, blocking: for an io_uring READ that waits for a signal (io_uring
     * answers EAGAIN at once on an O_NONBLOCK file instead of waiting).
     */
    public static EventFd createBlocking() throws IOException {
        return create(FdpNative.EFD_CLOEXEC(), "EFD_CLOEXEC");
    }

    private static EventFd create(int flags, String flagNames) throws IOException {
        int fd = Syscalls.eventfd(0, flags);
        if (fd < 0) {
            throw Errno.exception("eventfd(0, " + flagNames + ")", -fd);
        }
        return new EventFd(fd);
    }

    public int fd() {
        return fd;
    }

    /** Adds one to the counter, waking whoever polls it. After {@link #close()} it does nothing. */
    public void signal() {
        var lock = lifecycle.readLock();
        lock.lock();
        try {
            if (closed) {
                return;
            }
            int r = Syscalls.eventfdWrite(fd, 1L);
            if (r < 0 && -r != Errno.EAGAIN) { // EAGAIN: counter saturated, the reader is awake anyway
                throw new UncheckedIOException(Errno.exception("eventfd_write(fd=" + fd + ", 1)", -r));
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Reads and clears the counter without blocking (on a non-blocking EventFd).
     *
     * @return how many signals arrived since the last drain; 0 when none, or when closed
     */
    public long drain() {
        var lock = lifecycle.readLock();
        lock.lock();
        try {
            return closed ? 0 : drain(fd);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Reads and clears the counter of an eventfd this process does not own as an {@code EventFd} (an
     * adapter's, polled by a controller) without blocking; allocates nothing.
     *
     * @return how many signals arrived since the last read; 0 when none
     */
    public static long drainFd(int fd) {
        return drain(fd);
    }

    private static long drain(int fd) {
        long r = Syscalls.eventfdRead(fd);
        if (r >= 0) {
            return r;
        }
        if (-r == Errno.EAGAIN) {
            return 0;
        }
        throw new UncheckedIOException(Errno.exception("eventfd_read(fd=" + fd + ")", (int) -r));
    }

    /** Waits until signalled or the timeout passes, then drains. @return true when signalled */
    public boolean await(Duration timeout) throws IOException {
        return await(fd, timeout);
    }

    /**
     * Waits with {@code poll(2)} until the eventfd {@code fd} is readable or the timeout passes, then
     * drains its counter (how a controller consumes an adapter's fd).
     *
     * @return true when it was signalled
     */
    public static boolean await(int fd, Duration timeout) throws IOException {
        Poller poller = Poller.forThisThread();
        poller.set(0, fd);
        if (poller.poll(timeout) == 0) {
            return false;
        }
        if (poller.isInvalid(0)) {
            throw Errno.exception("poll(fd=" + fd + ")", Errno.EBADF, "the descriptor is not open");
        }
        return drain(fd) > 0 || poller.isReadable(0);
    }

    /** Closes the descriptor; idempotent. Signals after this are no-ops. */
    @Override
    public void close() {
        var lock = lifecycle.writeLock();
        lock.lock();
        try {
            if (!closed) {
                closed = true;
                Syscalls.close(fd);
            }
        } finally {
            lock.unlock();
        }
    }

    public boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "EventFd[" + fd + (isClosed() ? ", closed]" : "]");
    }
}
