package io.fdpblock.uring;

import io.fdpblock.linux.NativeLibrary;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Is io_uring usable here? Checked once, on first use, like Netty's {@code IoUring.isAvailable()}:
 * the bindings must load ({@link NativeLibrary}: native access granted, liburing.so.2 present) and the
 * kernel must set up a ring. When it is not, {@link #unavailabilityCause()} says why, and {@link
 * #ensureAvailable()} throws with that cause attached.
 */
public final class Uring {
    private Uring() {}

    private static final class Probe {
        static final Throwable LIBRARY_CAUSE = NativeLibrary.loadFailure();
        static final Throwable CAUSE = LIBRARY_CAUSE != null ? LIBRARY_CAUSE : probeRing(false);
        static final Throwable BIG_CAUSE = CAUSE != null ? CAUSE : probeRing(true);

        private static Throwable probeRing(boolean big) {
            try {
                Ring.open(RingOptions.of(4).withBigEntries(big)).close(); // set up, then let go: it works here
                return null;
            } catch (Throwable t) {
                String disabled = readDisabledSysctl();
                return disabled == null || disabled.equals("0") ? t
                        : new IOException("io_uring is disabled: /proc/sys/kernel/io_uring_disabled = " + disabled, t);
            }
        }

        private static String readDisabledSysctl() {
            try {
                return Files.readString(Path.of("/proc/sys/kernel/io_uring_disabled")).trim();
            } catch (IOException | RuntimeException e) {
                return null;
            }
        }
    }

    /** Ring setup needs the library; fail with the recorded cause rather than a class-init error. */
    static void requireLibrary() throws IOException {
        if (Probe.LIBRARY_CAUSE != null) {
            throw new IOException(Probe.LIBRARY_CAUSE.getMessage(), Probe.LIBRARY_CAUSE);
        }
    }

    public static boolean isAvailable() {
        return Probe.CAUSE == null;
    }

    /** @return why io_uring is unusable, or null when it is available */
    public static Throwable unavailabilityCause() {
        return Probe.CAUSE;
    }

    /** 128-byte SQEs and 32-byte CQEs (NVMe passthru) can be set up. */
    public static boolean isBigEntriesAvailable() {
        return Probe.BIG_CAUSE == null;
    }

    public static Throwable bigEntriesUnavailabilityCause() {
        return Probe.BIG_CAUSE;
    }

    public static void ensureAvailable() throws IOException {
        if (Probe.CAUSE != null) {
            throw new IOException("io_uring is not available: " + Probe.CAUSE.getMessage(), Probe.CAUSE);
        }
    }
}
