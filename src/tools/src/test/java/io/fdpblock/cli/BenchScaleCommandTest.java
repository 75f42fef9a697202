package io.fdpblock.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code fdpblock bench-scale}: bad input is refused before anything is made; a small run writes its figures. */
@Tag("host")
class BenchScaleCommandTest {
    @TempDir(factory = DiskTempDirFactory.class)
    static Path dir;

    static Stream<Arguments> badInput() throws IOException {
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        String d = dir.toString();
        return Stream.of(
                Arguments.of("--entries 0 is out of range", new String[] {"--entries", "0"}),
                Arguments.of("--entries 2000000000 is out of range", new String[] {"--entries", "2000000000"}),
                Arguments.of("--v1-entries -1 is out of range", new String[] {"--v1-entries", "-1"}),
                Arguments.of("--meta-format v3 is not a format", new String[] {"--meta-format", "v3"}),
                Arguments.of("--keys-per-put 0 is out of range", new String[] {"--keys-per-put", "0"}),
                Arguments.of("--puts-in-flight 1000 is out of range", new String[] {"--puts-in-flight", "1000"}),
                Arguments.of("--meta-sync-interval-ms -1 is out of range", new String[] {"--meta-sync-interval-ms", "-1"}),
                Arguments.of("--checkpoint-interval-sec 0 is out of range",
                        new String[] {"--checkpoint-interval-sec", "0"}),
                Arguments.of("--dir /nonexistent-fdpblock does not exist", new String[] {"--dir", "/nonexistent-fdpblock"}),
                Arguments.of("--dir " + file + " is not a directory", new String[] {"--dir", file.toString()}),
                Arguments.of("exclude each other", new String[] {"--device", "/dev/null", "--dir", d}),
                Arguments.of("--device /dev/fdpblock-none does not exist", new String[] {"--device", "/dev/fdpblock-none"}),
                Arguments.of("is not a block device", new String[] {"--device", file.toString()}),
                Arguments.of("--json " + d + " is a directory", new String[] {"--json", d}),
                // 8 KiB slots on a plain file: 8 TB, more than any test machine has free
                Arguments.of("free on the file system", new String[] {"--no-loop", "--dir", d, "--entries", "1000000000"}));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badInput")
    void badInputIsRefusedBeforeAnythingIsMade(String fragment, String[] args) throws IOException {
        String[] all = Stream.concat(Stream.of("bench-scale"), Stream.of(args)).toArray(String[]::new);
        long before;
        try (Stream<Path> s = Files.list(dir)) {
            before = s.count();
        }
        CliRunner.Outcome o = CliRunner.run(all);
        assertThat(o.code()).as(o.all()).isEqualTo(2);
        assertThat(o.err()).contains(fragment).doesNotContain("\tat ").doesNotContain("Exception");
        try (Stream<Path> s = Files.list(dir)) {
            assertThat(s.count()).as("nothing made in --dir").isEqualTo(before);
        }
    }

    @Test
    void aSmallRunWritesItsFiguresAndRemovesItsDevice() throws IOException {
        Path work = Files.createDirectories(dir.resolve("run"));
        Path json = work.resolve("scale.json");
        CliRunner.Outcome o = CliRunner.run("bench-scale", "--no-loop", "--dir", work.toString(), "--entries", "3000",
                "--meta-format", "fdpblock_v2", "--json", json.toString(), "--no-progress");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).contains("fdpblock_v2: 3,000 entries").contains("targets (scale)");
        JsonNode root = new ObjectMapper().readTree(json.toFile());
        assertThat(root.path("command").asText()).startsWith("fdpblock bench-scale --no-loop");
        assertThat(root.path("results").get(0).path("reopen").path("keys_recovered").asLong()).isEqualTo(3000);
        try (Stream<Path> s = Files.list(work)) {
            assertThat(s.map(p -> p.getFileName().toString())).as("only the figures are left").containsExactly(
                    "scale.json");
        }
    }
}
