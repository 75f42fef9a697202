package io.fdpblock.bench;

import java.lang.management.ManagementFactory;

/**
 * CPU time (user + system, all threads) of this JVM process, from
 * {@code com.sun.management.OperatingSystemMXBean.getProcessCpuTime()}: GC, JIT, the io_uring reactor
 * and the submitting thread all count.
 */
final class CpuClock {
    private static final java.lang.management.OperatingSystemMXBean OS = ManagementFactory.getOperatingSystemMXBean();

    private CpuClock() {}

    /** Nanoseconds of CPU time so far, or -1 when the JVM cannot tell. */
    static long processCpuNanos() {
        if (OS instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime();
        }
        return -1;
    }

    /** Seconds between two readings, NaN when either is unknown. */
    static double seconds(long from, long to) {
        return from < 0 || to < 0 ? Double.NaN : (to - from) / 1e9;
    }
}
