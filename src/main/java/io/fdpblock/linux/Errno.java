package io.fdpblock.linux;

import io.fdpblock.ffi.FdpNative;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/** errno numbers turned into names and messages (glibc's own tables, not a copy of them). */
public final class Errno {
    private Errno() {}

    static {
        NativeLibrary.ensureLoaded(); // fails with the reason, e.g. the --enable-native-access to add
    }

    public static final int EINTR = FdpNative.EINTR();
    public static final int EAGAIN = FdpNative.EAGAIN();
    public static final int EINVAL = FdpNative.EINVAL();
    public static final int EBADF = FdpNative.EBADF();
    public static final int ECANCELED = FdpNative.ECANCELED();
    public static final int EBUSY = FdpNative.EBUSY();
    public static final int ENOMEM = FdpNative.ENOMEM();
    public static final int EWOULDBLOCK = FdpNative.EWOULDBLOCK();
    public static final int ENOSPC = FdpNative.ENOSPC();
    public static final int EIO = FdpNative.EIO();
    public static final int EFBIG = FdpNative.EFBIG();
    public static final int EOPNOTSUPP = FdpNative.EOPNOTSUPP();

    private static final String[] NAMES = new String[256];

    /** @return the symbolic name, e.g. {@code "EINVAL"}, or {@code "E?<n>"} for an unknown number */
    public static String name(int errno) {
        if (errno > 0 && errno < NAMES.length) {
            String cached = NAMES[errno];
            if (cached != null) {
                return cached;
            }
        }
        MemorySegment s = FdpNative.strerrorname_np(errno);
        String name = s.equals(MemorySegment.NULL) ? "E?" + errno : s.reinterpret(64).getString(0);
        if (errno > 0 && errno < NAMES.length) {
            NAMES[errno] = name;
        }
        return name;
    }

    /** @return glibc's description, e.g. {@code "Invalid argument"} */
    public static String description(int errno) {
        MemorySegment s = FdpNative.strerror(errno);
        return s.equals(MemorySegment.NULL) ? "unknown error" : s.reinterpret(256).getString(0);
    }

    /** {@code "EINVAL (22, Invalid argument)"} */
    public static String describe(int errno) {
        return name(errno) + " (" + errno + ", " + description(errno) + ")";
    }

    /**
     * @param call what was called, with its arguments, e.g. {@code "open(/dev/ng0n1, O_RDWR)"}
     * @param errno a positive errno
     */
    public static NativeIOException exception(String call, int errno) {
        return new NativeIOException(call, errno, null);
    }

    public static NativeIOException exception(String call, int errno, String hint) {
        return new NativeIOException(call, errno, hint);
    }

    /** An {@link IOException} from a native call: names the call, the errno name and number. */
    public static final class NativeIOException extends IOException {
        private static final long serialVersionUID = 1L;
        private final transient String call;
        private final int errno;

        NativeIOException(String call, int errno, String hint) {
            super(call + " failed: " + describe(errno) + (hint == null ? "" : ". " + hint));
            this.call = call;
            this.errno = errno;
        }

        public String call() {
            return call;
        }

        public int errno() {
            return errno;
        }

        public String errnoName() {
            return name(errno);
        }
    }
}
