package io.fdpblock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;
import io.fdpblock.testing.DiskTempDirFactory;

import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * `inspect` and `migrate` on a store whose metadata is damaged (a zeroed log chunk with later commits
 * after it): inspect says so and exits 1, migrate refuses (exit 3) and the device stays byte for byte as
 * it was, so a tool never makes a loss permanent.
 */
@Tag("host")
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class DamagedStoreToolsTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    /** An fdpblock_v2 store of 60 keys in 6 commits (meta_sync_interval_ms 0), then its second chunk zeroed. */
    private Path damagedV2Store() throws Exception {
        Path file = dir.resolve("v2.img");
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, 64);
        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder(file.toString(), 8192).capacityBytes(meta + 64 * 8192)
                .metaTotalBytes(meta).ioEngine(IoEngine.POSIX).metaSyncIntervalMs(0).metaEnablePeriodic(false).build();
        try (RawBlockCore core = RawBlockCore.open(cfg); Arena arena = Arena.ofShared()) {
            MemorySegment payload = arena.allocate(4096, 4096).fill((byte) 7);
            for (int c = 0; c < 6; c++) {
                List<PutRequest> puts = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    puts.add(PutRequest.of(KeyCodec.encode("org/m", 1, new byte[] {(byte) c, (byte) i}, "", 0), payload));
                }
                assertThat(core.put(puts)).containsOnly(true);
            }
        }
        List<Long> chunks = findChunks(file, meta);
        assertThat(chunks).hasSizeGreaterThan(3);
        long second = chunks.get(1);
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(second);
            f.write(new byte[4096]);
        }
        return file;
    }

    /** Where the log chunks of the metadata area start (their FDPBLG02 magic). */
    private static List<Long> findChunks(Path file, long metaBytes) throws Exception {
        List<Long> out = new ArrayList<>();
        byte[] block = new byte[4096];
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            for (long off = 0; off < metaBytes; off += 4096) {
                f.seek(off);
                f.readFully(block);
                if (new String(block, 0, 8, StandardCharsets.US_ASCII).equals("FDPBLG02")) {
                    out.add(off);
                }
            }
        }
        return out;
    }

    @Test
    void inspectSaysAV2StoreWithADamagedLogChunkIsDamagedAndMigrateRefusesIt() throws Exception {
        Path file = damagedV2Store();
        byte[] before = Files.readAllBytes(file);

        CliRunner.Outcome inspect = CliRunner.run("inspect", file.toString());
        assertThat(inspect.code()).as(inspect.all()).isEqualTo(1);
        assertThat(inspect.out() + inspect.err()).contains("DAMAGED").contains("later commits");

        CliRunner.Outcome migrate = CliRunner.run("migrate", "--device", file.toString(), "--to", "lmcache_v1");
        assertThat(migrate.code()).as(migrate.all()).isEqualTo(3);
        assertThat(migrate.all()).contains("damage").contains("open_damaged");
        assertThat(Files.readAllBytes(file)).as("migrate changed nothing").isEqualTo(before);
    }
}
