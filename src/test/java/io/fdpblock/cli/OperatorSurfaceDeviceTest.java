package io.fdpblock.cli;

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
import java.util.ArrayList;
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
        String script = Files.readString(Path.of("jshell/fdpblock.jsh"));
        String cp = System.getProperty("java.class.path");
        try (JShell js = JShell.builder().executionEngine("local").compilerOptions("--class-path", cp).build()) {
            js.addToClasspath(cp);
            SourceCodeAnalysis analysis = js.sourceCodeAnalysis();
            List<String> snippets = new ArrayList<>();
            String rest = script;
            while (!rest.isBlank()) {
                SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(rest);
                snippets.add(info.source());
                rest = info.remaining();
            }
            snippets.add("var ns = nvme(\"" + DEVICE + "\");");
            snippets.add("fdp(ns);");
            snippets.add("var stats = ns.fdpStatistics();");
            snippets.add("var buf = aligned(4096); buf.fill((byte) 7); ns.write(1000, buf, 1);");
            for (String s : snippets) {
                for (SnippetEvent e : js.eval(s)) {
                    List<String> diags = js.diagnostics(e.snippet()).map(d -> d.getMessage(null)).toList();
                    assertThat(e.status()).as("snippet %s: %s %s", s, diags, e.exception())
                            .isNotEqualTo(Snippet.Status.REJECTED);
                    assertThat(e.exception()).as("snippet %s", s).isNull();
                }
            }
            js.eval("ns.close();");
        }
    }
}
