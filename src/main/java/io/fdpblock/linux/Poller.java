package io.fdpblock.linux;

import io.fdpblock.ffi.FdpNative;
import io.fdpblock.ffi.pollfd;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

/**
 * {@code poll(2)} over a fixed set of descriptors, for readability ({@code POLLIN}). The pollfd array
 * is allocated once; {@link #poll} allocates nothing. Confined to the thread that made it: that thread
 * adds, polls and closes (another one gets a {@link WrongThreadException}). Its memory is a confined
 * arena's because closing a shared arena stops every thread of the JVM for a handshake. A single wait
 * ({@link EventFd#await}) takes its thread's own poller ({@link #forThisThread}) instead of making one.
 */
public final class Poller implements AutoCloseable {
    static {
        NativeLibrary.ensureLoaded(); // fails with the reason, e.g. the --enable-native-access to add
    }

    private static final short POLLIN = (short) FdpNative.POLLIN();
    private static final int POLLERR = FdpNative.POLLERR();
    private static final int POLLHUP = FdpNative.POLLHUP();
    private static final int POLLNVAL = FdpNative.POLLNVAL();
    private static final long STRIDE = pollfd.sizeof();
    private static final long REVENTS = pollfd.revents$offset();

    /** Each thread's one-descriptor poller for {@link #forThisThread}. */
    private static final ThreadLocal<Poller> PER_THREAD = ThreadLocal.withInitial(() -> {
        Poller p = new Poller(1, Arena.ofAuto(), true);
        p.add(-1);
        return p;
    });

    private final Arena arena;
    /** A {@link #forThisThread} poller: its arena is the GC's to free, never closed. */
    private final boolean perThread;
    private final MemorySegment fds;
    private final int capacity;
    private int size;

    public Poller(int capacity) {
        this(capacity, Arena.ofConfined(), false);
    }

    private Poller(int capacity, Arena arena, boolean perThread) {
        if (capacity < 1) {
            throw new IllegalArgumentException("Poller capacity " + capacity + " must be at least 1");
        }
        this.arena = arena;
        this.perThread = perThread;
        this.capacity = capacity;
        this.fds = arena.allocate(pollfd.layout(), capacity);
    }

    /**
     * The calling thread's own poller of one descriptor (index 0, {@link #set} before each poll): made
     * once per thread, so a wait such as {@link EventFd#await} allocates nothing. Never closed (its
     * {@link #close} does nothing): the GC frees its memory with the thread's.
     */
    static Poller forThisThread() {
        return PER_THREAD.get();
    }

    public static Poller of(int... fds) {
        Poller p = new Poller(Math.max(1, fds.length));
        for (int fd : fds) {
            p.add(fd);
        }
        return p;
    }

    /** Adds a descriptor to watch for readability. @return its index */
    public int add(int fd) {
        if (size == capacity) {
            throw new IllegalStateException("Poller is full: capacity " + capacity + " descriptors");
        }
        set(size, fd); // first: a refused call (another thread's) adds nothing
        return size++;
    }

    /** Replaces the descriptor at {@code index}; a negative fd is ignored by poll(2). */
    public void set(int index, int fd) {
        MemorySegment e = entry(index);
        pollfd.fd(e, fd);
        pollfd.events(e, POLLIN);
        pollfd.revents(e, (short) 0);
    }

    public int size() {
        return size;
    }

    public int fd(int index) {
        return pollfd.fd(entry(index));
    }

    private MemorySegment entry(int index) {
        if (index < 0 || index >= capacity) {
            throw new IndexOutOfBoundsException("poller index " + index + " not in 0.." + (capacity - 1));
        }
        return fds.asSlice(index * STRIDE, STRIDE);
    }

    /**
     * Waits until at least one descriptor is ready or the timeout passes; an interrupted poll (EINTR)
     * resumes with the time left.
     *
     * @param timeout null or negative: wait forever
     * @return how many descriptors have events (0 on timeout)
     */
    public int poll(Duration timeout) throws IOException {
        long deadline = timeout == null || timeout.isNegative() ? -1 : System.nanoTime() + timeout.toNanos();
        while (true) {
            int millis;
            if (deadline < 0) {
                millis = -1;
            } else {
                long left = deadline - System.nanoTime();
                millis = left <= 0 ? 0 : (int) Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000);
            }
            int r = Syscalls.poll(fds, size, millis);
            if (r >= 0) {
                return r;
            }
            if (-r != Errno.EINTR) {
                throw Errno.exception("poll(" + size + " fds, " + millis + " ms)", -r);
            }
        }
    }

    /** The events poll(2) reported for {@code index} in the last call. */
    public int revents(int index) {
        return fds.get(ValueLayout.JAVA_SHORT, index * STRIDE + REVENTS) & 0xFFFF;
    }

    public boolean isReadable(int index) {
        return (revents(index) & POLLIN) != 0;
    }

    /** {@code POLLNVAL}: the descriptor is not open (closed under the poller). */
    public boolean isInvalid(int index) {
        return (revents(index) & POLLNVAL) != 0;
    }

    public boolean hasError(int index) {
        return (revents(index) & (POLLERR | POLLHUP | POLLNVAL)) != 0;
    }

    @Override
    public void close() {
        if (!perThread && arena.scope().isAlive()) {
            arena.close();
        }
    }
}
