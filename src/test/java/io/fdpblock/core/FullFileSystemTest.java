package io.fdpblock.core;

import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A real ENOSPC: a sparse store file on a 1 MiB tmpfs that fills up. The log commit fails, later puts
 * are refused, close() counts what was acknowledged and lost, the reopen holds the durable keys. Needs
 * root (the mount); skipped with the reason otherwise. {@link FailedCommitTest} covers the same rule on
 * the fault-injecting device, everywhere.
 */
@Tag("host")
class FullFileSystemTest {
    private static final long SLOT = 16 << 10;
    private static final int SLOTS = 256;

    @Test
    void aFullFileSystemMakesTheStoreReadOnlyAndTheReopenHoldsTheDurableKeys() throws Exception {
        Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        Assumptions.assumeTrue(Integer.valueOf(0).equals(uid), "needs root to mount a small tmpfs (uid " + uid + ")");
        Path mnt = Files.createTempDirectory("fdpblock-enospc");
        String mounted = run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt.toString());
        Assumptions.assumeTrue(mounted == null, () -> "mount -t tmpfs failed: " + mounted);
        try (Arena arena = Arena.ofShared()) {
            long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, SLOTS);
            Path file = mnt.resolve("store.img");
            try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
                f.setLength(meta + SLOTS * SLOT); // sparse: larger than the file system
            }
            RawBlockCoreConfig config = RawBlockCoreConfig.builder(file.toString(), SLOT).capacityBytes(meta + SLOTS * SLOT)
                    .metaTotalBytes(meta).ioEngine(IoEngine.POSIX).useOdirect(false) // tmpfs has no O_DIRECT
                    .metaSyncIntervalMs(3_600_000).metaEnablePeriodic(false).build();
            RawBlockCore core = RawBlockCore.open(config);
            for (int i = 0; i < 10; i++) {
                assertThat(put(core, arena, i)).isEqualTo(PutOutcome.STORED);
            }
            core.checkpointNow(); // 0..9 durable
            for (int i = 10; i < 15; i++) {
                assertThat(put(core, arena, i)).as("acknowledged before durable").isEqualTo(PutOutcome.STORED);
            }
            Path filler = fill(mnt);
            assertThatThrownBy(core::checkpointNow).isInstanceOf(IOException.class).hasMessageContaining("ENOSPC");
            try (FileChannel ch = FileChannel.open(filler, StandardOpenOption.WRITE)) {
                ch.truncate(ch.size() - (256 << 10)); // room again: the store still takes no put until reopened
            }
            assertThat(put(core, arena, 20)).isEqualTo(PutOutcome.READ_ONLY);
            assertThatThrownBy(() -> core.put(List.of(PutRequest.of(key(21), data(arena, 21)))))
                    .isInstanceOf(StoreReadOnlyException.class).hasMessageContaining("ENOSPC")
                    .hasMessageContaining(file.toString());
            Map<String, Object> s = core.status();
            assertThat(s).containsEntry("is_healthy", false).containsEntry("read_only", true)
                    .containsEntry("acknowledged_not_durable_keys", 5L);
            for (int i = 0; i < 10; i++) {
                assertLoads(core, arena, i);
            }
            assertThatThrownBy(core::close).isInstanceOf(IOException.class)
                    .hasMessageContaining("5 acknowledged puts were not made durable");

            Files.delete(filler);
            try (RawBlockCore again = RawBlockCore.open(config)) {
                for (int i = 0; i < 10; i++) {
                    assertLoads(again, arena, i);
                }
                for (int i : new int[] {10, 11, 12, 13, 14, 20, 21}) {
                    assertThat(again.exists(List.of(key(i)), false)).as(key(i)).containsExactly(false);
                }
                assertThat(put(again, arena, 30)).isEqualTo(PutOutcome.STORED);
            }
        } finally {
            // lazy: a store a failed assertion left open must not leave the mount behind
            String unmounted = run("umount", "-l", mnt.toString());
            if (unmounted == null) {
                Files.deleteIfExists(mnt);
            }
        }
    }

    /** Fills the file system to its last page. @return the file that holds it */
    private static Path fill(Path dir) throws IOException {
        Path filler = dir.resolve("filler");
        try (FileChannel ch = FileChannel.open(filler, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer page = ByteBuffer.allocate(4096);
            while (true) {
                page.clear();
                try {
                    ch.write(page);
                } catch (IOException full) {
                    return filler;
                }
            }
        }
    }

    /** @return null when it exited 0, else its output */
    private static String run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return p.waitFor() == 0 ? null : String.join(" ", command) + ": " + out.strip();
    }

    private static String key(int i) {
        return "m@0x00000000@" + String.format("%04x", i);
    }

    private static MemorySegment data(Arena arena, int i) {
        return arena.allocate(4096, 4096).fill((byte) (i + 1));
    }

    private static PutOutcome put(RawBlockCore core, Arena arena, int i) {
        return core.putWithOutcome(List.of(PutRequest.of(key(i), data(arena, i))))[0];
    }

    private static void assertLoads(RawBlockCore core, Arena arena, int i) {
        MemorySegment into = arena.allocate(4096, 4096);
        assertThat(core.load(List.of(new LoadRequest(key(i), into)))).as(key(i)).containsExactly(true);
        assertThat(into.mismatch(data(arena, i))).as(key(i)).isEqualTo(-1L);
    }
}
