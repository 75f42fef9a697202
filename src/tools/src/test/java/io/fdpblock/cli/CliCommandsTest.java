package io.fdpblock.cli;

import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;

/** `fdpblock run`, `inspect` and `selftest` doing their job in this JVM, on files in a temp dir. */
@Tag("host")
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class CliCommandsTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    // ---------------------------------------------------------------- run's verdict

    private static KvCacheJob.Result result(long stored, long verified, long mismatched) {
        KvCacheJob.Result r = new KvCacheJob.Result();
        r.chunksStored = stored;
        r.chunksVerified = verified;
        r.chunksMismatched = mismatched;
        return r;
    }

    @Test
    void aCheckThatCheckedNothingIsNotAPass() {
        RunCommand.Verdict v = RunCommand.verdict(result(40, 10, 0), new RunCommand.Reopened(0, 0, 0, 0), 0);
        assertThat(v.exitCode()).isEqualTo(1);
        assertThat(v.line()).startsWith("FAILED").contains("no keys to check").contains("40 chunks");
    }

    @Test
    void keysLostAcrossTheReopenFailTheRunNamingHowMany() {
        RunCommand.Verdict v = RunCommand.verdict(result(40, 10, 0), new RunCommand.Reopened(20, 20, 20, 0), 25);
        assertThat(v.exitCode()).isEqualTo(1);
        assertThat(v.line()).contains("held 25 keys at close, the reopen recovered 20: 5 keys lost");
    }

    @Test
    void differingBytesFailAndEverythingCheckedPasses() {
        assertThat(RunCommand.verdict(result(40, 10, 1), new RunCommand.Reopened(20, 20, 20, 0), 20).exitCode())
                .isEqualTo(1);
        assertThat(RunCommand.verdict(result(40, 10, 0), new RunCommand.Reopened(20, 20, 19, 1), 20).exitCode())
                .isEqualTo(1);
        RunCommand.Verdict ok = RunCommand.verdict(result(40, 10, 0), new RunCommand.Reopened(20, 20, 20, 0), 20);
        assertThat(ok.exitCode()).isZero();
        assertThat(ok.line()).isEqualTo("VERIFIED");
    }

    @Test
    void aShortRunOnAFileWithAQuoteInItsPathIsVerified() {
        Path device = dir.resolve("a \"quoted\" \\ path.img"); // the adapter JSON is built by Jackson
        CliRunner.Outcome o = CliRunner.run("run", "--device", device.toString(), "--size", "67108864",
                "--requests", "40", "--no-progress");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).containsPattern("reopened the device: (\\d+) keys recovered of \\1 held at close, (\\d+) of"
                + " \\2 sampled chunks loaded and equal").contains("VERIFIED");
    }

    @Test
    void aRunThatNeverFillsL2SaysSoInsteadOfAMeanOfNothing() {
        Path device = dir.resolve("roomy.img");
        CliRunner.Outcome o = CliRunner.run("run", "--device", device.toString(), "--size", "268435456",
                "--requests", "2", "--no-progress");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).containsPattern("L2 never filled to the eviction's 75 % \\(at most \\d+\\.\\d % used\\)")
                .doesNotContain("NaN");
    }

    // ---------------------------------------------------------------- inspect

    /** An lmcache_v1 store (meta 8 MiB, 16 MiB) with both containers written: seq 3 in container 0, seq 2 in 1. */
    private Path v1Store(String name) throws Exception {
        Path file = dir.resolve(name);
        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder(file.toString(), 8192).capacityBytes(16L << 20)
                .metaTotalBytes(8L << 20).metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build();
        try (RawBlockCore core = RawBlockCore.open(cfg); Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < 3; i++) {
                MemorySegment payload = arena.allocate(4096, 4096).fill((byte) i);
                core.put(List.of(PutRequest.of(KeyCodec.encode("org/m", 1, new byte[] {(byte) i}, "", 0), payload)));
                if (i > 0) { // seq 1 (container 0) is the new store's empty checkpoint
                    core.checkpointNow(); // seq 2 in container 1 (keys 0, 1), seq 3 in container 0 (all three)
                }
            }
        }
        return file;
    }

    /** {@link #v1Store}, then container 0's header zeroed. */
    private Path storeWithOnlyContainer1() throws Exception {
        Path file = v1Store("store.img");
        CliRunner.Outcome both = CliRunner.run("inspect", file.toString(), "--no-verify");
        assertThat(both.code()).as(both.all()).isZero();
        assertThat(both.out()).contains("container 0 @ 0: seq").contains("container 1 @ 4194304: seq");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.write(new byte[4096]); // container 0's header: gone
        }
        return file;
    }

    @Test
    void inspectFindsContainer1WhenContainer0CannotSayWhereItIs() throws Exception {
        Path file = storeWithOnlyContainer1();
        CliRunner.Outcome o = CliRunner.run("inspect", file.toString());
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).contains("container 1 @ 4194304: seq").contains("<- newest valid")
                .contains("found container 1 at 4194304 (meta_total_bytes 8388608)").contains("keys: ")
                .doesNotContain("no valid checkpoint");
    }

    @Test
    void inspectWithAWrongMetaTotalBytesSaysSoAndStillFindsTheStore() throws Exception {
        Path file = storeWithOnlyContainer1();
        CliRunner.Outcome o = CliRunner.run("inspect", file.toString(), "--meta-total-bytes", "268435456");
        assertThat(o.code()).isEqualTo(2); // larger than the 16 MiB device: a bad argument
        assertThat(o.err()).contains("--meta-total-bytes 268435456 is larger than");
        o = CliRunner.run("inspect", file.toString(), "--meta-total-bytes", "2097152", "--no-verify");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).contains("--meta-total-bytes 2097152 puts it at 1048576, where there is none")
                .contains("found container 1 at 4194304");
    }

    @Test
    void runOnAStoreOfAnotherLayoutIsRefusedUntouchedAndFormatStartsOver() throws Exception { // sweep R41
        Path file = dir.resolve("kept.img");
        CliRunner.Outcome first = CliRunner.run("run", "--device", file.toString(), "--size", "67108864", "--requests",
                "10", "--no-progress");
        assertThat(first.code()).as(first.all()).isZero();
        byte[] before = Files.readAllBytes(file);
        CliRunner.Outcome other = CliRunner.run("run", "--device", file.toString(), "--size", "67108864", "--requests",
                "10", "--no-progress", "--chunk-tokens", "32");
        assertThat(other.code()).as(other.all()).isNotZero();
        assertThat(other.err()).contains("slot_bytes").contains("--format").doesNotContain("VERIFIED");
        assertThat(Files.readAllBytes(file)).as("the store is untouched").isEqualTo(before);
        CliRunner.Outcome formatted = CliRunner.run("run", "--device", file.toString(), "--size", "67108864",
                "--requests", "10", "--no-progress", "--chunk-tokens", "32", "--format");
        assertThat(formatted.code()).as(formatted.all()).isZero();
    }

    @Test
    void inspectSaysWhenTheOptionDisagreesWithWhatContainer0Records() throws Exception {
        Path file = v1Store("fresh.img");
        CliRunner.Outcome o = CliRunner.run("inspect", file.toString(), "--meta-total-bytes", "4194304");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).contains("container 0 records meta_total_bytes = 8388608; --meta-total-bytes 4194304"
                + " disagrees with it and was not used").contains("slot headers: ");
    }

    /**
     * An fdpblock_v2 store: 5 keys (salts "" and rag:a) in snapshot seq 1, then in the log 3 keys of a new
     * salt (rag:b) and the delete of one of the first 5.
     */
    private Path v2Store() throws Exception {
        Path file = dir.resolve("v2.img");
        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder(file.toString(), 8192).capacityBytes(16L << 20)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build();
        try (RawBlockCore core = RawBlockCore.open(cfg); Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < 8; i++) {
                MemorySegment payload = arena.allocate(1000 + i, 4096).fill((byte) i);
                String salt = i < 2 ? "" : i < 5 ? "rag:a" : "rag:b";
                core.put(List.of(PutRequest.of(KeyCodec.encode("org/m", 1, new byte[] {(byte) i}, salt, 0), payload)));
                if (i == 4) {
                    core.checkpointNow();
                }
            }
            core.delete(List.of(KeyCodec.encode("org/m", 1, new byte[] {0}, "", 0)), false);
        }
        return file;
    }

    @Test
    void inspectDecodesAnFdpblockV2Device() throws Exception {
        Path file = v2Store();
        CliRunner.Outcome o = CliRunner.run("inspect", file.toString());
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).contains(file + ": fdpblock_v2").contains("superblock A @ 0: valid")
                .contains("superblock B @ 4096: valid")
                .containsPattern("snapshot area 0 @ 8192: seq 1, start LSN \\d+, 5 entries, \\d+ bytes of body, next slot 5,"
                        + " body CRC ok  <- applied")
                .containsPattern("snapshot area 1 @ \\d+: no snapshot")
                .contains("records after the applied snapshot (PUT 3, DELETE 1, SALT 1)")
                .containsPattern("log end: closed cleanly at LSN \\d+\n")
                .contains("keys: 7, payload bytes: " + (1001 + 1002 + 1003 + 1004 + 1005 + 1006 + 1007))
                .containsPattern("cache salt rag:b +3 keys +3018 bytes")
                .containsPattern("cache salt rag:a +3 keys +3009 bytes")
                .containsPattern("cache salt \\(none\\) +1 keys +1001 bytes")
                .contains("slot headers: 7 checked, 0 disagree");

        CliRunner.Outcome j = CliRunner.run("inspect", file.toString(), "--json");
        assertThat(j.code()).as(j.all()).isZero();
        JsonNode root = new ObjectMapper().readTree(j.out());
        assertThat(root.path("format").asText()).isEqualTo("fdpblock_v2");
        JsonNode r = root.path("report");
        assertThat(r.path("keys").asInt()).isEqualTo(7);
        assertThat(r.path("log").path("puts").asInt()).isEqualTo(3);
        assertThat(r.path("log").path("deletes").asInt()).isEqualTo(1);
        assertThat(r.path("log").path("salts").asInt()).isEqualTo(1);
        assertThat(r.path("log").path("tornTail").asBoolean()).isFalse();
        long logOffset = r.path("layout").path("log_offset").asLong();
        long start = r.path("log").path("startLsn").asLong();

        // superblock A damaged, the first chunk after the snapshot damaged: copy B says where everything is, and
        // the close marker after that chunk shows a later commit: damage, not a torn tail
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(40);
            f.write(0x77);
            f.seek(logOffset + start + 40 + 2);
            int b = f.read();
            f.seek(logOffset + start + 40 + 2);
            f.write(b ^ 0xff);
        }
        CliRunner.Outcome d = CliRunner.run("inspect", file.toString());
        assertThat(d.code()).as(d.all()).isEqualTo(1);
        assertThat(d.out()).contains("superblock A @ 0: damaged (bad CRC32C or impossible geometry)")
                .contains("superblock B @ 4096: valid")
                .contains("DAMAGED: the log stops at LSN " + start + " (torn chunk at LSN " + start + ": its body fails"
                        + " its CRC32C), yet 1 intact chunks of later commits follow it");
    }

    // ---------------------------------------------------------------- migrate

    @Test
    void migrateConvertsBothWaysAndSaysWhatItDid() throws Exception {
        Path file = v1Store("migrate.img");
        String f = file.toString();
        CliRunner.Outcome o = CliRunner.run("migrate", "--device", f, "--to", "fdpblock_v2");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).contains("migrated " + f + " from lmcache_v1 to fdpblock_v2: 3 keys (12 KiB of payload)")
                .containsPattern("old metadata, \\d+ bytes in use: lmcache_v1 checkpoint seq 3 in container 0, \\d+ bytes of JSON")
                .containsPattern("new metadata, 16384 bytes written: fdpblock_v2 superblocks and snapshot seq 1 of 3 entries")
                .contains("metadata area: 8388608 bytes (8 MiB), unchanged: the data still starts at offset 8388608")
                .contains("committed");
        CliRunner.Outcome i = CliRunner.run("inspect", f);
        assertThat(i.code()).as(i.all()).isZero();
        assertThat(i.out()).contains("fdpblock_v2").contains("keys: 3, payload bytes: 12288")
                .contains("slot headers: 3 checked, 0 disagree");

        CliRunner.Outcome same = CliRunner.run("migrate", "--device", f, "--to", "fdpblock_v2");
        assertThat(same.code()).as(same.all()).isEqualTo(2);
        assertThat(same.err()).contains("already holds an fdpblock_v2 store").contains("--to lmcache_v1");

        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder(f, 8192).capacityBytes(16L << 20).metaTotalBytes(8L << 20)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build();
        try (RawBlockCore core = RawBlockCore.open(cfg)) {
            CliRunner.Outcome busy = CliRunner.run("migrate", "--device", f, "--to", "lmcache_v1");
            assertThat(busy.code()).as(busy.all()).isEqualTo(3);
            assertThat(busy.err()).contains("is in use").contains("Nothing was changed");
            assertThat(core.keyCount()).isEqualTo(3);
        }

        CliRunner.Outcome back = CliRunner.run("migrate", "--device", f, "--to", "lmcache_v1");
        assertThat(back.code()).as(back.all()).isZero();
        assertThat(back.out()).contains("from fdpblock_v2 to lmcache_v1: 3 keys")
                .contains("open it with \"meta_total_bytes\": 8388608 in the configuration");
        CliRunner.Outcome v1 = CliRunner.run("inspect", f);
        assertThat(v1.code()).as(v1.all()).isZero();
        assertThat(v1.out()).contains("container 0 @ 0: seq 3").contains("container 1 @ 4194304: seq 2")
                .contains("keys: 3, payload bytes: 12288").contains("slot headers: 3 checked, 0 disagree");

        CliRunner.Outcome json = CliRunner.run("migrate", "--device", f, "--to", "fdpblock_v2", "--json");
        assertThat(json.code()).as(json.all()).isZero();
        JsonNode r = new ObjectMapper().readTree(json.out());
        assertThat(r.path("from").asText()).isEqualTo("lmcache_v1");
        assertThat(r.path("to").asText()).isEqualTo("fdpblock_v2");
        assertThat(r.path("keys").asInt()).isEqualTo(3);
        assertThat(r.path("meta_total_bytes").asLong()).isEqualTo(8L << 20);
        assertThat(r.path("bytes_written").asLong()).isPositive();
        assertThat(r.path("steps").size()).isEqualTo(4);
    }

    // ---------------------------------------------------------------- selftest

    @Test
    void selftestDoesWhatItReports() {
        CliRunner.Outcome o = CliRunner.run("selftest");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).containsPattern("O_DIRECT +ok +opens in ")
                .containsPattern("fixed buffers +ok +a 64 KiB write and read-back .* took READ_FIXED/WRITE_FIXED \\(\\d+"
                        + " ops\\)");
        CliRunner.Outcome bad = CliRunner.run("selftest", "--device", dir.resolve("missing").toString());
        assertThat(bad.code()).as("a device that was asked for and failed").isEqualTo(1);
        assertThat(bad.out()).containsPattern("NVMe passthru +NO +.*missing").contains("1 check(s) failed");
    }
}
