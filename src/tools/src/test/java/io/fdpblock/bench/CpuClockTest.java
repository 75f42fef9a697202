package io.fdpblock.bench;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The JIT compiler threads' CPU that ours' CPU is judged without, on stand-ins for /proc/self/task. */
@Tag("unit")
class CpuClockTest {
    @TempDir
    Path dir;

    /** A thread's stat as the kernel writes it: pid (comm) state, then utime and stime as fields 14 and 15. */
    private void thread(int tid, String comm, long utime, long stime) throws IOException {
        Path t = Files.createDirectories(dir.resolve(Integer.toString(tid)));
        Files.writeString(t.resolve("stat"), tid + " (" + comm + ") S 1 1 1 0 -1 4194368 900 0 0 0 " + utime + " "
                + stime + " 0 0 20 0 30 0 12345 0 0\n");
    }

    @Test
    void onlyTheCompilerThreadsCount() throws IOException {
        thread(101, "java", 500, 40);
        thread(102, "C2 CompilerThre", 70, 3);
        thread(103, "C1 CompilerThre", 20, 1);
        thread(104, "fdpblock-reacto", 300, 200);
        thread(105, "GC Thread#0", 11, 2);
        thread(106, "a (C2 CompilerThre) lookalike", 999, 999); // the name ends at the last ')'
        assertThat(CpuClock.jitCompilerCpuNanos(dir)).as("(70 + 3 + 20 + 1) ticks of 10 ms")
                .isEqualTo(94 * 10_000_000L);
    }

    @Test
    void noSuchDirectoryIsUnknown() {
        assertThat(CpuClock.jitCompilerCpuNanos(dir.resolve("missing"))).isEqualTo(-1);
    }

    @Test
    void onThisJvmTheyAreReadAndAPartOfTheProcess() {
        assertThat(CpuClock.jitCompilerCpuNanos()).as("read from /proc/self/task").isNotNegative();
        long ours = CpuClock.ourCpuNanos();
        assertThat(ours).isPositive().isLessThanOrEqualTo(CpuClock.processCpuNanos());
    }
}
