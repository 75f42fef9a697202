package io.fdpblock.linux;

import io.fdpblock.testing.DiskTempDirFactory;
import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Descriptors a child could inherit: every one the store opens is close-on-exec, and a lock kept by a
 * process that did inherit one (from a program that is not fdpblock) is named truthfully.
 */
@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InheritedLockTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    /** The open file description's flags, from /proc/self/fdinfo (octal). */
    private static long flags(int fd) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
            if (line.startsWith("flags:")) {
                return Long.parseLong(line.substring("flags:".length()).trim(), 8);
            }
        }
        throw new IllegalStateException("no flags in fdinfo of " + fd);
    }

    @Test
    void theDescriptorsOfAStoreAreCloseOnExec() throws Exception {
        long oCloexec = 02000000;
        Path file = dir.resolve("dev.img");
        Files.write(file, new byte[4096]);
        try (NativeFile f = NativeFile.openExclusive(file, false); NativeFile g = NativeFile.open(file, false, false,
                false); EventFd e = EventFd.create(); Ring r = Ring.open(RingOptions.of(8))) {
            for (int fd : List.of(f.fd(), g.fd(), e.fd(), r.fd())) {
                assertThat(flags(fd) & oCloexec).as("O_CLOEXEC on fd %d", fd).isNotZero();
            }
        }
    }

    @Test
    void aLockKeptByAChildThatInheritedItNamesTheChildAtOnce() throws Exception {
        Path file = dir.resolve("held.img");
        Files.write(file, new byte[4096]);
        // flock(1) takes the lock and runs sleep with the descriptor open: sleep inherits it
        Process locker = new ProcessBuilder("flock", "-x", file.toString(), "sleep", "300").start();
        ProcessHandle child = null;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            // Until the child runs sleep: just forked, it is still a copy of flock, and the message names it so.
            while (child == null || !child.info().command().orElse("").endsWith("/sleep")) {
                child = locker.toHandle().children().findFirst().orElse(null);
                assertThat(System.nanoTime()).as("flock started its child, sleep").isLessThan(deadline);
                Thread.sleep(20);
            }
            locker.destroyForcibly().waitFor(); // the process that took the lock exits; sleep keeps it
            long sleeper = child.pid();
            assertThatThrownBy(() -> NativeFile.openExclusive(file, false)).isInstanceOf(DeviceInUseException.class)
                    .hasMessageContaining("taken by process " + locker.pid() + ", which has exited")
                    .hasMessageContaining("kept by process " + sleeper + " (")
                    .hasMessageContaining("sleep").hasMessageContaining("inherited");
        } finally {
            locker.destroyForcibly();
            if (child != null) {
                child.destroyForcibly();
            }
        }
    }
}
