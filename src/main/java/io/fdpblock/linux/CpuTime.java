package io.fdpblock.linux;

import io.fdpblock.ffi.FdpNative;

/**
 * CPU time of this process at nanosecond resolution: {@code clock_gettime(CLOCK_PROCESS_CPUTIME_ID)},
 * every thread's user and system time, the JVM's own (GC, JIT) and the io_uring reactors' included.
 * The JDK's {@code OperatingSystemMXBean.getProcessCpuTime()} reads the same sum in clock ticks (10 ms on
 * Linux), too coarse for the microseconds of CPU one operation costs.
 */
public final class CpuTime {
    private CpuTime() {}

    /**
     * Nanoseconds of CPU this process has used so far.
     *
     * @throws IllegalStateException if the clock cannot be read (it always can on Linux)
     */
    public static long processNanos() {
        long ns = Syscalls.clockGettimeNanos(FdpNative.CLOCK_PROCESS_CPUTIME_ID());
        if (ns < 0) {
            throw new IllegalStateException("clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed: "
                    + Errno.describe((int) -ns));
        }
        return ns;
    }
}
