package io.fdpblock.docs;

import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * The Java examples of the README and of docs/*.md compile (every one, {@code unit}) and run on a file device in a temp dir
 * (all but those marked compile-only, {@code host}: io_uring). The rules of the wrapping are in
 * {@link ReadmeExamples}; the harness's own checks are at the end.
 */
class ReadmeExamplesTest {
    private static final Path README = Path.of("README.md");
    private static final Path DOCS = Path.of("docs");

    /** The Java examples of README.md and of every page under docs/: each one is a promise to a reader. */
    private static List<ReadmeExamples.Example> readmeExamples() throws Exception {
        assertThat(README).as("README.md in the working directory (the project root)").exists();
        List<Path> documents = new ArrayList<>(List.of(README));
        try (Stream<Path> pages = Files.list(DOCS)) {
            pages.filter(p -> p.toString().endsWith(".md")).sorted().forEach(documents::add);
        }
        List<ReadmeExamples.Example> examples = new ArrayList<>();
        for (Path d : documents) {
            examples.addAll(ReadmeExamples.extract(d.toString(), Files.readString(d, StandardCharsets.UTF_8)));
        }
        assertThat(examples).as("```java blocks in README.md and docs/*.md").isNotEmpty();
        return examples;
    }

    @Tag("unit")
    @TestFactory
    Stream<DynamicTest> everyExampleCompiles(@TempDir Path work) throws Exception {
        List<ReadmeExamples.Example> examples = readmeExamples();
        ReadmeExamples.Compiled compiled = ReadmeExamples.compile(examples, work, work.resolve("paths"));
        return examples.stream().map(e -> DynamicTest.dynamicTest(e.name() + " compiles", () ->
                assertThat(compiled.errorsOf(e)).as(e.name() + ":\n" + String.join("\n", e.lines())).isEmpty()));
    }

    @Tag("host")
    @TestFactory
    Stream<DynamicTest> everyRunnableExampleRuns(@TempDir Path work,
            @TempDir(factory = DiskTempDirFactory.class) Path disk) throws Exception {
        List<ReadmeExamples.Example> runnable = readmeExamples().stream().filter(e -> !e.compileOnly()).toList();
        return runnable.stream().map(e -> DynamicTest.dynamicTest(e.name() + " runs", () -> {
            Path paths = Files.createDirectories(disk.resolve(e.className()));
            ReadmeExamples.Compiled compiled = ReadmeExamples.compile(List.of(e), work.resolve(e.className()), paths);
            assertThat(compiled.errorsOf(e)).as(e.name() + " compiles").isEmpty();
            ReadmeExample example = compiled.instantiate(e);
            try (Arena arena = Arena.ofShared()) {
                example.prepare(arena);
                assertTimeoutPreemptively(Duration.ofSeconds(120), example::run, e.name());
            }
        }));
    }

    // The harness itself.

    @Tag("unit")
    @Test
    void anExampleThatStopsCompilingFailsNamingItsReadmeLine(@TempDir Path work) throws Exception {
        String readme = """
                # Title
                text

                ```java
                BlockDevice dev = BlockDevices.open(Path.of("/var/tmp/x.img"), DeviceOptions.of(IoEngine.POSIX));
                dev.closeAndForget();
                ```

                ```java
                long n = keys.size();
                ```
                """;
        List<ReadmeExamples.Example> examples = ReadmeExamples.extract(readme);
        assertThat(examples).extracting(ReadmeExamples.Example::firstLine).containsExactly(5, 10);
        ReadmeExamples.Compiled compiled = ReadmeExamples.compile(examples, work, work.resolve("paths"));
        assertThat(compiled.errorsOf(examples.get(0))).singleElement().asString()
                .startsWith("README.md line 6: ").contains("closeAndForget");
        assertThat(compiled.errorsOf(examples.get(1))).isEmpty();
    }

    @Tag("unit")
    @Test
    void importsAreHoistedPlaceholdersShadowableHostPathsMovedAndTheMarkerKeepsAnExampleFromRunning(
            @TempDir Path work) throws Exception {
        String readme = """
                ```java
                import java.util.zip.CRC32C;
                var crc = new CRC32C();                       // needs the hoisted import
                List<String> keys = List.of("shadowing is fine");
                String json = "{\\"device_path\\": \\"/var/lib/kv/cache.img\\", \\"other\\": \\"/dev/ng0n1\\"}";
                RawBlockCoreConfig.fromJson(json);              // readme-test: compile only (a sketch)
                ```
                  ```java
                  int x = 1;
                  ```
                """;
        List<ReadmeExamples.Example> examples = ReadmeExamples.extract(readme);
        assertThat(examples).hasSize(2);
        assertThat(examples.get(0).compileOnly()).isTrue();
        assertThat(examples.get(1).compileOnly()).isFalse();
        assertThat(examples.get(1).lines()).containsExactly("int x = 1;");
        Path dir = work.resolve("paths");
        String src = ReadmeExamples.source(examples.get(0), dir);
        assertThat(src).contains(dir.resolve("cache.img").toString()).doesNotContain("/var/lib/kv")
                .contains("/dev/ng0n1");
        assertThat(src.lines().toList().get(ReadmeExamples.HEADER_LINES)).isEmpty(); // the import's line, blank
        ReadmeExamples.Compiled compiled = ReadmeExamples.compile(examples, work, dir);
        assertThat(compiled.errorsOf(examples.get(0))).isEmpty();
        assertThat(compiled.errorsOf(examples.get(1))).isEmpty();
    }
}
