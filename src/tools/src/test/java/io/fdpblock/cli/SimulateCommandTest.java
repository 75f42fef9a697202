package io.fdpblock.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fdpblock.sim.TraceWriter;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code fdpblock simulate} on traces written here: its table, its JSON, its chart, its refusals. */
@Tag("unit")
class SimulateCommandTest {
    private static final long DEVICE = 16L << 20;

    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {}

    private static Run run(String... args) {
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        StringWriter err = new StringWriter();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            CommandLine cl = new CommandLine(new FdpblockCommand());
            cl.setErr(new PrintWriter(err, true));
            int exit = cl.execute(args);
            return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString());
        } finally {
            System.setOut(saved);
        }
    }

    /** The device written twice in order (WAF 1), then {@code random} 4 KiB writes through id 2. */
    private Path trace(String name, int random) throws Exception {
        Path f = dir.resolve(name);
        try (TraceWriter w = TraceWriter.create(f, DEVICE, 4096, 1L << 20, 4)) {
            for (int pass = 0; pass < 2; pass++) {
                for (long at = 0; at < DEVICE; at += 256 << 10) {
                    w.write(at, 256 << 10, 1);
                }
            }
            w.flush();
            SplittableRandom r = new SplittableRandom(5);
            for (int i = 0; i < random; i++) {
                w.write(r.nextLong(DEVICE / 4096) * 4096, 4096, 2);
            }
        }
        return f;
    }

    @Test
    void sequentialTraceGivesWafOneWithTheTracedDevicesGeometry() throws Exception {
        Path f = trace("seq.trace", 0);
        Run r = run("simulate", "--trace", f.toString(), "--no-chart");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("129 records (128 writes of 32 MiB, 0 deallocations of 0 B, 1 flushes)")
                .contains("16 MiB namespace").contains("reclaim units of 1 MiB, 4 handles initially isolated, OP 7.0 %")
                .contains("WAF 1.000 (media 32 MiB / host 32 MiB)").contains("garbage collection copied 0 B")
                .doesNotContain("chart ");
        assertThat(r.out()).containsPattern("\\n1 +initially isolated +1 +32 MiB +0 B +0\\.000");
    }

    @Test
    void randomWritesShowGcCopiesInTheTableTheJsonAndTheChart() throws Exception {
        Path f = trace("rnd.trace", 8192);
        Path png = dir.resolve("waf.png");
        Run r = run("simulate", "--trace", f.toString(), "--op", "0.25", "--handle-type", "persistently",
                "--gc", "cost-benefit", "--chart", png.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("4 handles persistently isolated, OP 25.0 %, GC cost-benefit")
                .contains("chart     " + png);
        byte[] head = Files.readAllBytes(png);
        assertThat(head).startsWith(0x89, 'P', 'N', 'G');

        Run j = run("simulate", "--trace", f.toString(), "--op", "0.25", "--handle-type", "persistently", "--gc",
                "cost-benefit", "--json", "--no-chart");
        assertThat(j.exit()).as(j.err()).isZero();
        JsonNode n = new ObjectMapper().readTree(j.out());
        assertThat(n.get("writes").asLong()).isEqualTo(128 + 8192);
        assertThat(n.get("hostBytes").asLong()).isEqualTo(2 * DEVICE + 8192L * 4096);
        long gc = n.get("gcCopiedBytes").asLong();
        assertThat(gc).isPositive();
        assertThat(n.get("mediaBytes").asLong()).isEqualTo(n.get("hostBytes").asLong() + gc);
        assertThat(n.get("handles").get(2).get("gcCopiedBytes").asLong()
                + n.get("handles").get(1).get("gcCopiedBytes").asLong()).isEqualTo(gc);
        assertThat(n.get("config").get("gc").asText()).isEqualTo("COST_BENEFIT");

        // written full before the trace, the same writes cost more: the precondition's data must move too
        Run p = run("simulate", "--trace", f.toString(), "--op", "0.25", "--handle-type", "persistently", "--gc",
                "cost-benefit", "--json", "--no-chart", "--precondition");
        assertThat(new ObjectMapper().readTree(p.out()).get("gcCopiedBytes").asLong()).isGreaterThanOrEqualTo(gc);
    }

    @Test
    void badParametersAreRefusedNamingTheValue() throws Exception {
        Path f = trace("p.trace", 0);
        Run r = run("simulate", "--trace", f.toString(), "--ru-size", "8Q");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("8Q").contains("K, M, G");
        Run missing = run("simulate");
        assertThat(missing.exit()).isEqualTo(2);
        assertThat(missing.err()).contains("--trace");
    }
}
