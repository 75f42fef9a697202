package io.fdpblock.cli;

import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The bad-input sweep of docs/cli-bad-input.md, the cases a machine can replay anywhere: each is
 * refused (or reported) with the documented exit code and a message that names the value, never a
 * stack trace, a bare "File too large", "integer overflow" or an OutOfMemoryError.
 */
@Tag("host")
class CliBadInputTest {
    @TempDir(factory = DiskTempDirFactory.class)
    static Path dir;

    static Path tiny;
    static Path zeros;
    static Path aDir;

    @BeforeAll
    static void files() throws IOException {
        tiny = Files.writeString(dir.resolve("tiny.img"), "x\n");
        zeros = dir.resolve("zeros.img");
        try (RandomAccessFile f = new RandomAccessFile(zeros.toFile(), "rw")) {
            f.setLength(64L << 20);
        }
        aDir = Files.createDirectories(dir.resolve("a-dir"));
    }

    private static Arguments c(int code, String fragment, String... args) {
        return Arguments.of(String.join(" ", args), code, fragment, args);
    }

    static Stream<Arguments> cases() {
        String t = tiny.toString();
        String z = zeros.toString();
        String d = aDir.toString();
        List<Arguments> all = new ArrayList<>(List.of(
                // run
                c(2, "--repeat-ratio NaN", "run", "--repeat-ratio", "NaN"),
                c(2, "--repeat-ratio Infinity", "run", "--repeat-ratio", "Infinity"),
                c(2, "--repeat-ratio 1.5", "run", "--repeat-ratio", "1.5"),
                c(2, "--requests 0", "run", "--requests", "0"),
                c(2, "--requests -5", "run", "--requests", "-5"),
                c(2, "'abc' is not an int", "run", "--requests", "abc"),
                c(2, "--size -1", "run", "--size", "-1"),
                c(2, "--size 4097", "run", "--size", "4097"),
                c(2, "--size 4096", "run", "--size", "4096"),
                c(2, "--size 9223372036854771712", "run", "--size", "9223372036854771712"),
                c(2, "--chunk-tokens 0", "run", "--chunk-tokens", "0"),
                c(2, "1000000000000 bytes per chunk", "run", "--chunk-tokens", "1000000", "--kv-bytes-per-token", "1000000"),
                c(2, "1200 bytes per chunk", "run", "--chunk-tokens", "12", "--kv-bytes-per-token", "100"),
                c(2, "--l1-chunks 1000000", "run", "--l1-chunks", "1000000"),
                c(2, "--max-chunks 1", "run", "--max-chunks", "1"),
                c(2, "--l1-chunks 64", "run", "--max-chunks", "100"),
                c(2, "--salts: cache salt 'rag@1' contains '@', which is not allowed", "run", "--salts", "chat,rag@1"),
                c(2, "--engine foo", "run", "--engine", "foo"),
                c(2, "--engine memory keeps nothing", "run", "--engine", "memory"),
                c(2, "--engine uring_cmd needs --device", "run", "--engine", "uring_cmd"),
                c(2, "--fdp needs --engine uring_cmd", "run", "--fdp"),
                c(2, "--device " + d + " is a directory", "run", "--device", d),
                c(2, "its directory /nonexistent/dir does not exist", "run", "--device", "/nonexistent/dir/x.img"),
                c(2, "--device " + t + " holds 2 bytes", "run", "--device", t),
                c(2, "Unknown option", "run", "--queue-depth", "0"),
                c(2, "--device /dev/null is a character device", "run", "--device", "/dev/null"),
                c(2, "--device /dev/fdpblock-no-such-ng does not exist", "run", "--device", "/dev/fdpblock-no-such-ng",
                        "--engine", "uring_cmd"),
                c(2, "--device /dev/fdpblock-no-such.img does not exist", "run", "--device", "/dev/fdpblock-no-such.img"),
                // engines
                c(2, "--queue-depth 0", "engines", "--queue-depth", "0"),
                c(2, "--queue-depth -1", "engines", "--queue-depth", "-1"),
                c(2, "--queue-depth 100000", "engines", "--queue-depth", "100000"),
                c(2, "--small -1", "engines", "--small", "-1"),
                c(2, "--large 200", "engines", "--size", "67108864"),
                c(2, "--size 1 ", "engines", "--size", "1"),
                c(2, "checks nothing", "engines", "--small", "0", "--large", "0"),
                c(2, "'foo' is not an engine", "engines", "--engines", "foo"),
                c(2, "memory cannot run on a file", "engines", "--engines", "memory"),
                c(2, "uring_cmd cannot run on a file", "engines", "--engines", "uring_cmd"),
                c(2, "--dir /nonexistent does not exist", "engines", "--dir", "/nonexistent"),
                c(2, "--dir " + t + " is not a directory", "engines", "--dir", t),
                // waf
                c(2, "--requests 0 is out of range", "waf", "--requests", "0"),
                c(2, "--tenant-requests 0 is out of range", "waf", "--tenant-requests", "0"),
                c(2, "--size 1 is not a usable size", "waf", "--size", "1"),
                c(2, "--ru-size 4095 is not a reclaim unit size", "waf", "--ru-size", "4095"),
                c(2, "--evict-to 0.95 must be below --evict-at 0.9", "waf", "--evict-at", "0.9", "--evict-to", "0.95"),
                // bench
                c(2, "--seconds 0", "bench", "--seconds", "0"),
                c(2, "--rounds 0", "bench", "--rounds", "0"),
                c(2, "--ramp -1", "bench", "--ramp", "-1"),
                c(2, "--cases nothing selects no case", "bench", "--cases", "nothing"),
                c(2, "--pipeline foo", "bench", "--pipeline", "foo"),
                c(2, "--submit-policy foo: unknown submit policy 'foo'", "bench", "--submit-policy", "foo"),
                c(2, "--adapter-keys-per-task 0", "bench", "--adapter-keys-per-task", "0"),
                c(2, "--lookup-iterations 5", "bench", "--lookup-iterations", "5"),
                c(2, "--adapter-buffers 1048576 is too small", "bench", "--adapter-buffers", "1048576"),
                c(2, "--size 1 ", "bench", "--size", "1"),
                c(2, "--file " + d + " is a directory", "bench", "--file", d),
                c(2, "its directory /nonexistent does not exist", "bench", "--file", "/nonexistent/x.img"),
                c(2, "--device /dev/nope does not exist", "bench", "--device", "/dev/nope"),
                c(2, "--out " + t + " is not a directory", "bench", "--out", t),
                // inspect
                c(2, "--block-align 0", "inspect", z, "--block-align", "0"),
                c(2, "--block-align 3", "inspect", z, "--block-align", "3"),
                c(2, "--meta-total-bytes 0", "inspect", z, "--meta-total-bytes", "0"),
                c(2, "--meta-total-bytes -1", "inspect", z, "--meta-total-bytes", "-1"),
                c(2, "--meta-total-bytes 9223372036854775807 is larger than", "inspect", z, "--meta-total-bytes",
                        "9223372036854775807"),
                c(2, "/nonexistent does not exist", "inspect", "/nonexistent"),
                c(2, d + " is a directory", "inspect", d),
                c(1, "holds 2 bytes: too small for a store", "inspect", t),
                c(1, "no valid checkpoint found", "inspect", z),
                c(1, "holds 0 bytes", "inspect", "/dev/null"),
                // migrate
                c(2, "Missing required options", "migrate"),
                c(2, "--to foo is not a format", "migrate", "--device", z, "--to", "foo"),
                c(2, "--device /nonexistent does not exist", "migrate", "--device", "/nonexistent", "--to", "fdpblock_v2"),
                c(2, "--device " + d + " is a directory", "migrate", "--device", d, "--to", "lmcache_v1"),
                c(2, "--engine foo is not an engine", "migrate", "--device", z, "--to", "fdpblock_v2", "--engine", "foo"),
                c(2, "--engine memory has no device", "migrate", "--device", z, "--to", "fdpblock_v2", "--engine",
                        "memory"),
                c(2, "--block-align 3 is out of range", "migrate", "--device", z, "--to", "fdpblock_v2", "--block-align",
                        "3"),
                c(2, "--slot-bytes 100 is not a usable size", "migrate", "--device", z, "--to", "fdpblock_v2",
                        "--slot-bytes", "100"),
                c(2, "--meta-total-bytes 4097 is not a usable size", "migrate", "--device", z, "--to", "fdpblock_v2",
                        "--meta-total-bytes", "4097"),
                c(2, "--capacity-bytes 0 is out of range", "migrate", "--device", z, "--to", "fdpblock_v2",
                        "--capacity-bytes", "0"),
                c(3, "holds no store", "migrate", "--device", z, "--to", "fdpblock_v2"),
                c(3, "holds 2 bytes, too few for a store", "migrate", "--device", t, "--to", "lmcache_v1", "--engine",
                        "posix"),
                // fdp
                c(2, "PID 'abc' is not a number", "fdp", "update", "/dev/null", "abc"),
                c(2, "PID 65536 is out of range", "fdp", "update", "/dev/null", "0x10000"),
                c(2, t + " is a regular file", "fdp", "status", t),
                c(2, d + " is a directory", "fdp", "configs", d),
                c(2, "/nonexistent does not exist", "fdp", "stats", "/nonexistent"),
                c(2, "Missing required parameter", "fdp", "status"),
                c(3, "/dev/null is a character device but not named ngXnY", "fdp", "events", "/dev/null"),
                // the top level
                c(2, "Did you mean", "frobnicate"),
                c(2, "Unknown subcommand 'frobnicate'", "help", "frobnicate")));
        return all.stream();
    }

    /** A FIFO: every open of it for reading waits for a writer, so each command must refuse it before opening it. */
    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aFifoIsRefusedByNameBeforeAnythingOpensIt() throws Exception {
        Path fifo = dir.resolve("a-fifo");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor()).isZero();
        String f = fifo.toString();
        for (String[] args : List.of(new String[] {"inspect", f}, new String[] {"simulate", "--trace", f},
                new String[] {"migrate", "--device", f, "--to", "lmcache_v1"}, new String[] {"run", "--device", f})) {
            CliRunner.Outcome o = CliRunner.run(args);
            assertThat(o.code()).as("exit code of fdpblock %s\n%s", String.join(" ", args), o.all()).isEqualTo(2);
            assertThat(o.err()).as("fdpblock %s", String.join(" ", args)).contains(f + " is a FIFO (named pipe)")
                    .doesNotContain("\tat ");
        }
    }

    @ParameterizedTest(name = "fdpblock {0}")
    @MethodSource("cases")
    void badInputIsRefusedWithTheDocumentedExitCodeAndAClearMessage(String line, int code, String fragment,
            String[] args) {
        CliRunner.Outcome o = CliRunner.run(args);
        assertThat(o.code()).as("exit code of fdpblock %s\n%s", line, o.all()).isEqualTo(code);
        assertThat(o.all()).as("output of fdpblock %s", line).contains(fragment)
                .doesNotContain("\tat ").doesNotContain("Exception").doesNotContain("integer overflow")
                .doesNotContain("OutOfMemoryError").doesNotContain("starts empty");
        if (code == 2) {
            assertThat(o.err()).as("a bad argument is said on stderr").isNotBlank();
        }
        assertThat(Path.of("/dev/fdpblock-no-such.img")).as("no file is made under /dev").doesNotExist();
        assertThat(Path.of("/dev/fdpblock-no-such-ng")).as("no file is made under /dev").doesNotExist();
    }
}
