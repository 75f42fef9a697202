package io.fdpblock.cli;

import io.fdpblock.devicetier.DeviceGuest;
import io.fdpblock.nvme.NvmeNamespace;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The operator surface on a real FDP namespace: `fdpblock fdp ...` and the jshell script. */
@Tag("device")
class OperatorSurfaceDeviceTest {
    static final String DEVICE = System.getenv("FDPBLOCK_NVME_DEVICE");

    @BeforeAll
    static void needsADevice() {
        assumeTrue(DEVICE != null && Files.exists(Path.of(DEVICE)), "FDPBLOCK_NVME_DEVICE is not set");
    }

    private static String run(String... args) {
        PrintStream saved = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int code;
        try (PrintStream p = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            System.setOut(p);
            code = new CommandLine(new FdpblockCommand()).execute(args);
        } finally {
            System.setOut(saved);
        }
        String out = buf.toString(StandardCharsets.UTF_8);
        assertThat(code).as("exit code of fdpblock %s\n%s", String.join(" ", args), out).isZero();
        return out;
    }

    @Test
    void fdpCommandsPrintStatusConfigsUsageStatsAndUpdate() {
        String status = run("fdp", "status", DEVICE);
        assertThat(status).contains("FDP: supported, enabled").contains("PID").contains("0x0001");
        assertThat(run("fdp", "configs", DEVICE)).contains("RU bytes");
        assertThat(run("fdp", "usage", DEVICE)).contains("RUH attributes");
        assertThat(run("fdp", "stats", DEVICE)).contains("host bytes written");
        assertThat(run("fdp", "events", DEVICE)).contains("events");
        assertThat(run("fdp", "update", DEVICE, "0x2")).contains("updated [2]");
        assertThat(run("fdp", "status", DEVICE, "--json")).contains("\"fdp_enabled\" : true");
        System.out.println(status);
    }

    @Test
    void selftestReadsThroughNvmePassthruWithARegisteredBuffer() {
        String out = run("selftest", "--device", DEVICE);
        assertThat(out).containsPattern("NVMe passthru +ok +read \\d+ bytes at LBA 0 of " + DEVICE
                + " through IORING_OP_URING_CMD with a registered buffer");
        assertThat(out).containsPattern("fixed buffers +ok");
    }

    @Test
    void theJshellScriptOpensTheNamespaceAndPrintsFdpStateInThreeLines() throws Exception {
        try (JShell js = jshellWithScript()) {
            eval(js, "var ns = nvme(\"" + DEVICE + "\");");
            eval(js, "fdp(ns);");
            eval(js, "var stats = ns.fdpStatistics();");
            // an LBA outside every store of the device tests (raw tests write from DeviceGuest.RAW_BASE on)
            eval(js, "var buf = aligned(4096); buf.fill((byte) 7); ns.write(" + (DeviceGuest.RAW_BASE + (201L << 20))
                    + "L / ns.lbaSize(), buf, 1);");
            js.eval("ns.close();");
        }
    }

    /** A jshell with the project on its class path and src/main/jshell/fdpblock.jsh evaluated. */
    private static JShell jshellWithScript() throws Exception {
        String cp = System.getProperty("java.class.path");
        JShell js = JShell.builder().executionEngine("local").compilerOptions("--class-path", cp).build();
        js.addToClasspath(cp);
        eval(js, Files.readString(Path.of("src/main/jshell/fdpblock.jsh")));
        return js;
    }

    /** Evaluates every snippet of {@code source} in turn (JShell.eval takes only the first), each must succeed. */
    private static void eval(JShell js, String source) {
        SourceCodeAnalysis analysis = js.sourceCodeAnalysis();
        String rest = source;
        while (!rest.isBlank()) {
            SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(rest);
            String s = info.source();
            for (SnippetEvent e : js.eval(s)) {
                List<String> diags = js.diagnostics(e.snippet()).map(d -> d.getMessage(null)).toList();
                assertThat(e.status()).as("snippet %s: %s %s", s, diags, e.exception())
                        .isNotEqualTo(Snippet.Status.REJECTED);
                assertThat(e.exception()).as("snippet %s", s).isNull();
            }
            rest = info.remaining();
        }
    }

    @Test
    @Tag(DeviceGuest.WRITE_STREAMS_TAG)
    void selftestAndFdpStatusShowTheWriteStreamsAndTheirHandles() throws Exception {
        DeviceGuest.WriteStreams ws = DeviceGuest.requireWriteStreams();
        String block = "/dev/" + ws.blockName();
        String self = run("selftest", "--device", DEVICE);
        System.out.println(self);
        assertThat(self.lines().filter(l -> l.startsWith("write streams")).findFirst().orElse(""))
                .contains(" ok ").contains(block + ": " + ws.maxStreams() + " streams, granularity "
                        + ws.granularityBytes() + " B").contains("stream 1 -> placement id");

        String status = run("fdp", "status", DEVICE);
        System.out.println(status);
        List<Integer> ids;
        try (NvmeNamespace ns = NvmeNamespace.open(DEVICE)) {
            ids = ns.ruhStatus().placementIds();
        }
        assertThat(status).contains("write streams of " + block);
        for (int s = 1; s <= ws.maxStreams(); s++) {
            assertThat(status).containsPattern("(?m)^  " + s + " +" + String.format("0x%04x", ids.get(s - 1)) + " ");
        }
        assertThat(run("fdp", "status", DEVICE, "--json")).contains("\"write_streams\"")
                .contains("\"max_streams\" : " + ws.maxStreams());
    }

    @Test
    @Tag(DeviceGuest.WRITE_STREAMS_TAG)
    void theJshellStreamsHelperMapsStreamsAndADeviceWritesOnOne() throws Exception {
        DeviceGuest.WriteStreams ws = DeviceGuest.requireWriteStreams();
        String block = "/dev/" + ws.blockName();
        try (NvmeNamespace ns = NvmeNamespace.open(DEVICE); JShell js = jshellWithScript()) {
            int second = ns.ruhStatus().placementIds().get(1);
            long before = ns.ruhStatus().forPlacementId(second).availableMediaWritesLbas();
            eval(js, "var ws = streams(\"" + block + "\");");
            eval(js, "var dev = device(\"" + block + "\", \"io_uring\");");
            eval(js, "var b = new IoBatch(); b.write(" + (DeviceGuest.RAW_BASE + (200L << 20))
                    + "L, aligned(4096), PlacementId.of(ws.placementIdOf(2))); dev.execute(b);");
            js.eval("dev.close();");
            long after = ns.ruhStatus().forPlacementId(second).availableMediaWritesLbas();
            assertThat(before - after).as("RUAMW drop of stream 2's placement id %d", second)
                    .isEqualTo(4096 / ns.lbaSize());
        }
    }
}
