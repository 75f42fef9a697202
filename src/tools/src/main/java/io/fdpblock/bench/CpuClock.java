package io.fdpblock.bench;

import io.fdpblock.linux.CpuTime;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time (user + system) of this JVM process, from {@link CpuTime}: GC, the io_uring reactor and the
 * submitting thread all count, and the JIT compiler threads are reported apart; and the calling thread's own
 * CPU time and page faults.
 */
final class CpuClock {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private CpuClock() {}

    /** Nanoseconds of CPU time so far, at nanosecond resolution ({@link CpuTime}). */
    static long processCpuNanos() {
        return CpuTime.processNanos();
    }

    /**
     * Nanoseconds of CPU time so far of every thread but the JVM's JIT compiler threads: what ours' CPU per
     * operation is judged on. Compiling is a one-time cost of a new JVM (fio, a C program, has none) that on
     * 2 cores still ran in the first rounds of each case's new code: "recovery" loads measured 73-85 us of CPU
     * per chunk in their first two rounds and 23-27 us in the next three. {@link #jitCompilerCpuNanos} is
     * reported beside it.
     */
    static long ourCpuNanos() {
        long jit = jitCompilerCpuNanos();
        return processCpuNanos() - Math.max(0, jit);
    }

    /**
     * CPU time so far of this JVM's JIT compiler threads ({@code C1 CompilerThread*}, {@code C2 CompilerThread*}),
     * in nanoseconds at 10 ms resolution (their {@code /proc/self/task/<tid>/stat} utime and stime), or -1
     * where there is no such directory. A compiler thread that exits is no longer counted.
     */
    static long jitCompilerCpuNanos() {
        return jitCompilerCpuNanos(Path.of("/proc/self/task"));
    }

    /** {@link #jitCompilerCpuNanos()} of the threads in {@code taskDir} (one directory per thread, each with its stat). */
    static long jitCompilerCpuNanos(Path taskDir) {
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(taskDir)) {
            long ticks = 0;
            for (Path t : tasks) {
                String stat;
                try {
                    stat = Files.readString(t.resolve("stat"));
                } catch (IOException gone) {
                    continue; // the thread ended meanwhile
                }
                int open = stat.indexOf('(');
                int close = stat.lastIndexOf(')');
                String name = open < 0 || close < open ? "" : stat.substring(open + 1, close);
                if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
                    String[] f = stat.substring(close + 2).split(" ");
                    ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]);
                }
            }
            return ticks * 10_000_000L; // USER_HZ 100, as userSystemTicks
        } catch (IOException | RuntimeException e) {
            return -1;
        }
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
