package io.fdpblock.cli;

import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.tools.Inspector;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * `fdpblock` as a separate process, for what only a process shows: the temp dirs it leaves in its
 * java.io.tmpdir, and what SIGINT and SIGTERM do to a running job (a real signal, sent by kill).
 */
@Tag("host")
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class CliProcessTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private Path tmp;

    private ProcessBuilder java(String mainClass, String... args) throws IOException {
        tmp = Files.createDirectories(dir.resolve("tmp"));
        String java = ProcessHandle.current().info().command().orElseThrow();
        // A test JVM started with SIGINT ignored (a background job of a script, some CI runners) passes that on
        // to its children, and a JVM never handles a signal it was started ignoring: the child gets SIGINT's
        // default disposition back first, as a shell gives a foreground job.
        List<String> cmd = new ArrayList<>(List.of("env", "--default-signal=INT", java,
                "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-Djava.io.tmpdir=" + tmp, "-cp",
                System.getProperty("java.class.path"), mainClass));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true);
    }

    /** What fdpblock left in {@code d} (the progress bar's terminal library may cache a native file there). */
    private List<String> leftIn(Path d) throws IOException {
        try (Stream<Path> s = Files.list(d)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("fdpblock")).toList();
        }
    }

    /** A child process and the thread that copies its output. */
    private record Child(Process process, Thread reader, StringBuilder output) {
        /** Waits for the process and for the last of its output. @return its exit code */
        int finish() throws InterruptedException {
            assertThat(process.waitFor(240, TimeUnit.SECONDS)).as("fdpblock run stopped").isTrue();
            reader.join(TimeUnit.SECONDS.toMillis(60));
            return process.exitValue();
        }

        /** Sends a real signal, as a shell's kill does. */
        void signal(String name) throws Exception {
            assertThat(new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start()
                    .waitFor()).isZero();
        }

        String text() {
            synchronized (output) {
                return output.toString();
            }
        }
    }

    @Test
    void argumentErrorsAndFinishedCommandsLeaveNoTempDirs() throws Exception {
        List<String> batch = List.of(
                "run\t--size\t-1",
                "run\t--engine\tmemory",
                "run\t--fdp",
                "run\t--size\t1125899906842624", // 1 PiB: refused after the temp dir was made (free space)
                "engines\t--queue-depth\t0",
                "engines\t--small\t0\t--large\t0",
                "bench\t--cases\tnothing",
                "bench\t--size\t1125899906842624",
                "waf\t--size\t1",
                "waf\t--requests\t0",
                "selftest");
        Process p = java(CliBatch.class.getName()).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(String.join("\n", batch).concat("\n").getBytes(StandardCharsets.UTF_8));
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(300, TimeUnit.SECONDS)).isTrue();
        List<String> codes = out.lines().filter(l -> l.startsWith("exit ")).toList();
        assertThat(codes).as(out).containsExactly("exit 2", "exit 2", "exit 2", "exit 2", "exit 2", "exit 2",
                "exit 2", "exit 2", "exit 2", "exit 2", "exit 0");
        assertThat(out).contains("--size 1125899906842624 (1 PiB) is more than");
        assertThat(leftIn(tmp)).as("left in java.io.tmpdir").isEmpty();
    }

    @Test
    void aSignalWhileTheTempDirIsBeingMadeLeavesNothing() throws Exception {
        Path parent = Files.createDirectories(dir.resolve("parent"));
        Process p = java(ScratchChild.class.getName(), parent.toString()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8));
        String first = out.readLine();
        assertThat(first).as("the child's first line").startsWith("making ");
        assertThat(leftIn(parent)).hasSize(1); // the dir exists, its maker has not returned yet
        new Child(p, Thread.ofPlatform().start(() -> {}), new StringBuilder()).signal("TERM");
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the child stopped").isTrue();
        String rest = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(rest).isEqualTo(143);
        assertThat(leftIn(parent)).as("left after a signal while the temp dir was being made").isEmpty();
    }

    /** Starts `fdpblock run` and waits until its progress bar shows at least {@code requests} requests done. */
    private Child startRun(int requests, String... more) throws Exception {
        List<String> args = new ArrayList<>(List.of("run", "--requests", "1000000", "--size", "134217728"));
        args.addAll(List.of(more));
        Child c = start(args);
        Process p = c.process();
        StringBuilder output = c.output();
        Pattern progress = Pattern.compile("(\\d+)/1000000");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
        synchronized (output) {
            while (true) {
                Matcher m = progress.matcher(output);
                int done = 0;
                while (m.find()) {
                    done = Integer.parseInt(m.group(1));
                }
                if (done >= requests) {
                    return c;
                }
                assertThat(p.isAlive()).as("fdpblock run ended early:\n%s", output).isTrue();
                assertThat(System.nanoTime()).as("no progress:\n%s", output).isLessThan(deadline);
                output.wait(500);
            }
        }
    }

    /** Starts `fdpblock ARGS` with a thread that copies its output. */
    private Child start(List<String> args) throws Exception {
        StringBuilder output = new StringBuilder();
        Process p = java(FdpblockCommand.class.getName(), args.toArray(String[]::new)).start();
        InputStream in = p.getInputStream();
        Thread reader = Thread.ofPlatform().daemon().start(() -> {
            byte[] buf = new byte[8192];
            try {
                for (int n; (n = in.read(buf)) > 0; ) {
                    synchronized (output) {
                        output.append(new String(buf, 0, n, StandardCharsets.UTF_8));
                        output.notifyAll();
                    }
                }
            } catch (IOException e) {
                // the process ended
            }
        });
        return new Child(p, reader, output);
    }

    @Test
    void sigintDuringWafRemovesItsTempDeviceAndSaysSo() throws Exception {
        Path out = dir.resolve("waf");
        Child c = start(List.of("waf", "--workloads", "run", "--cases", "reference", "--requests", "1000000",
                "--size", "67108864", "--out", out.toString()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
        synchronized (c.output()) { // the store logs its creation once the case's device is open
            while (!c.output().toString().contains("new fdpblock_v2 store")) {
                assertThat(c.process().isAlive()).as("fdpblock waf ended early:\n%s", c.output()).isTrue();
                assertThat(System.nanoTime()).as("no store opened:\n%s", c.output()).isLessThan(deadline);
                c.output().wait(500);
            }
        }
        assertThat(leftIn(tmp)).hasSize(1); // the temp dir holding the case's device
        assertThat(ignoredSignals(c.process().pid()) & (1L << (2 - 1))).isZero();
        c.signal("INT");
        int code = c.finish();
        String all = c.text();
        assertThat(code).as(all).isEqualTo(130);
        assertThat(all).contains("fdpblock: stopping (SIGINT or SIGTERM)")
                .contains("stopped by a signal during case reference of workload run; its partial trace is removed");
        assertThat(leftIn(tmp)).as("left in java.io.tmpdir").isEmpty();
        assertThat(out.resolve("run-reference.trace")).doesNotExist();
    }

    /** The signals {@code pid} ignores (/proc/PID/status SigIgn, bit n-1 for signal n). */
    private static long ignoredSignals(long pid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            if (line.startsWith("SigIgn:")) {
                return Long.parseUnsignedLong(line.substring("SigIgn:".length()).trim(), 16);
            }
        }
        throw new IllegalStateException("no SigIgn in /proc/" + pid + "/status");
    }

    @Test
    void sigintStopsTheRunClosesTheStoreAndRemovesTheTempDevice() throws Exception {
        Child c = startRun(3);
        assertThat(leftIn(tmp)).hasSize(1); // the run's temp dir, holding the device
        assertThat(ignoredSignals(c.process().pid()) & (1L << (2 - 1))).as("the child ignores SIGINT (inherited), so"
                + " the signal this test sends could never stop it").isZero();
        c.signal("INT");
        int code = c.finish();
        String all = c.text();
        assertThat(code).as(all).isEqualTo(130);
        assertThat(all).contains("fdpblock: stopping (SIGINT or SIGTERM)")
                .containsPattern("stopped by a signal after \\d+ of 1000000 requests; the store was closed with its"
                        + " final checkpoint \\(\\d+ keys\\); the temp device is removed")
                .doesNotContain("VERIFIED");
        assertThat(leftIn(tmp)).as("left in java.io.tmpdir").isEmpty();
    }

    @Test
    void sigtermStopsTheRunAndItsFinalCheckpointHoldsEveryKey() throws Exception {
        Path device = dir.resolve("kv.img");
        Child c = startRun(5, "--device", device.toString());
        c.signal("TERM"); // not Process.destroy(): it closes the output we read
        int code = c.finish();
        String all = c.text();
        assertThat(code).as(all).isEqualTo(143);
        Matcher m = Pattern.compile("final checkpoint \\((\\d+) keys\\) on " + Pattern.quote(device.toString()))
                .matcher(all);
        assertThat(m.find()).as(all).isTrue();
        int keys = Integer.parseInt(m.group(1));
        assertThat(keys).isPositive();
        long slotBytes = 64 * 12288 + 4096; // run's default chunk plus its header
        try (RawBlockCore reopened = RawBlockCore.open(RawBlockCoreConfig.builder(device.toString(), slotBytes)
                .capacityBytes(Files.size(device)).metaEnablePeriodic(false).build())) {
            assertThat(reopened.keyCount()).as("keys recovered after the signal").isEqualTo(keys);
        }
        assertThat(leftIn(tmp)).as("left in java.io.tmpdir").isEmpty();
    }
}
