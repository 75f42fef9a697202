package io.fdpblock.linux;

import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;

class CpuTimeTest {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    @Test
    void theProcessClockCountsAtLeastThisThreadsWorkAtFinerThanTickResolution() {
        long process0 = CpuTime.processNanos();
        long thread0 = THREADS.getCurrentThreadCpuTime();
        CRC32C crc = new CRC32C();
        byte[] block = new byte[4096];
        // work until this thread alone has used 3 ms of CPU, however busy the machine is
        while (THREADS.getCurrentThreadCpuTime() - thread0 < 3_000_000L) {
            crc.update(block);
        }
        long thread = THREADS.getCurrentThreadCpuTime() - thread0;
        long process = CpuTime.processNanos() - process0;
        assertThat(process).as("the process's CPU includes this thread's %d ns (crc %d)", thread, crc.getValue())
                .isGreaterThanOrEqualTo(thread);
        // the smallest step seen between two readings: the JDK's process clock moves in 10 ms ticks
        long smallest = Long.MAX_VALUE;
        long last = CpuTime.processNanos();
        for (int i = 0; i < 10_000 && smallest > 1_000_000L; i++) {
            long now = CpuTime.processNanos();
            assertThat(now).isGreaterThanOrEqualTo(last);
            if (now > last) {
                smallest = Math.min(smallest, now - last);
            }
            last = now;
        }
        assertThat(smallest).as("the clock's smallest step, ns").isLessThan(1_000_000L);
    }
}
