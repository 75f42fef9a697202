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

    // ---------------------------------------------------------------- inspect

    /** A store with both containers written (meta 8 MiB), then container 0's header zeroed. */
    private Path storeWithOnlyContainer1() throws Exception {
        Path file = dir.resolve("store.img");
        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder(file.toString(), 8192).capacityBytes(16L << 20)
                .metaTotalBytes(8L << 20).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build();
        try (RawBlockCore core = RawBlockCore.open(cfg); Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < 3; i++) {
                MemorySegment payload = arena.allocate(4096, 4096).fill((byte) i);
                core.put(List.of(PutRequest.of(KeyCodec.encode("org/m", 1, new byte[] {(byte) i}, "", 0), payload)));
                core.checkpointNow(); // seq 1 in container 0, seq 2 in container 1, seq 3 in container 0
            }
        }
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
    void inspectSaysWhenTheOptionDisagreesWithWhatContainer0Records() throws Exception {
        Path file = dir.resolve("fresh.img");
        CliRunner.Outcome run = CliRunner.run("run", "--device", file.toString(), "--size", "67108864", "--requests",
                "10", "--no-progress");
        assertThat(run.code()).as(run.all()).isZero();
        CliRunner.Outcome o = CliRunner.run("inspect", file.toString(), "--meta-total-bytes", "33554432");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).contains("container 0 records meta_total_bytes = 16777216; --meta-total-bytes 33554432"
                + " disagrees with it and was not used").contains("slot headers: ");
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
