package io.fdpblock.bench;

import io.fdpblock.linux.CpuTime;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time (user + system, all threads) of this JVM process, from {@link CpuTime}: GC, JIT, the io_uring
 * reactor and the submitting thread all count; and the calling thread's own CPU time and page faults.
 */
final class CpuClock {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private CpuClock() {}

    /** Nanoseconds of CPU time so far, at nanosecond resolution ({@link CpuTime}). */
    static long processCpuNanos() {
        return CpuTime.processNanos();
    }

    /**
     * User and system CPU of this process so far, in clock ticks ({@code /proc/self/stat} utime and
     * stime, 100 per second on Linux), or null where there is no such file: how much of the CPU was the
     * kernel's.
     */
    static long[] userSystemTicks() {
        String[] f = statFields("/proc/self/stat");
        return f == null ? null : new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])}; // fields 14 and 15
    }

    /** Nanoseconds of CPU time of the calling thread so far, or -1 when the JVM cannot tell. */
    static long threadCpuNanos() {
        return THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : -1;
    }

    /**
     * Minor page faults of the calling thread so far ({@code /proc/thread-self/stat} field 10), or -1
     * where there is no such file: a first touch of memory the JVM took from the kernel costs one.
     */
    static long threadMinorFaults() {
        String[] f = statFields("/proc/thread-self/stat");
        return f == null ? -1 : Long.parseLong(f[7]);
    }

    /** The fields of a {@code /proc/.../stat} file from field 3 (state) on, or null where it cannot be read. */
    private static String[] statFields(String path) {
        try {
            String stat = Files.readString(Path.of(path));
            return stat.substring(stat.lastIndexOf(')') + 2).split(" "); // past the command name, which may hold spaces
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Seconds between two readings, NaN when either is unknown. */
    static double seconds(long from, long to) {
        return from < 0 || to < 0 ? Double.NaN : (to - from) / 1e9;
    }
}
