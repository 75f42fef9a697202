package io.fdpblock.cli;

import org.junit.jupiter.params.provider.Arguments;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs `fdpblock ARGS` in this JVM, as main would (same handlers), capturing what it prints. */
final class CliRunner {
    private CliRunner() {}

    record Outcome(int code, String out, String err) {
        String all() {
            return out + err;
        }
    }

    /**
     * Runs one command; System.out is swapped while it runs (tests that use this must not run in parallel);
     * what picocli and the error handler print goes to {@code err}.
     */
    static synchronized Outcome run(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cl = FdpblockCommand.commandLine();
        cl.setErr(new PrintWriter(err, true));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream saved = System.out;
        int code;
        try (PrintStream p = new PrintStream(out, true, StandardCharsets.UTF_8)) {
            System.setOut(p);
            code = cl.execute(args);
        } finally {
            System.setOut(saved);
        }
        return new Outcome(code, out.toString(StandardCharsets.UTF_8), err.toString());
    }

    /** A case of {@link #assertRefused}: a fragment of the message, and the arguments. */
    static Arguments refusal(String fragment, String... args) {
        return Arguments.of(fragment, args);
    }

    /** The command is refused as bad input (exit 2), saying {@code fragment}, without a stack trace. */
    static void assertRefused(String fragment, String[] args) {
        Outcome o = run(args);
        assertThat(o.code()).as(o.all()).isEqualTo(2);
        assertThat(o.err()).contains(fragment).doesNotContain("Exception");
    }
}
