package io.fdpblock.linux;

import io.fdpblock.testing.NativeAccessChild;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.File;
import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A JVM that denies fdpblock native access ({@code --illegal-native-access=deny} without
 * {@code --enable-native-access}) gets a message naming the flag to add, on the class path
 * ({@code ALL-UNNAMED}) and on the module path ({@code io.fdpblock}), never "install liburing"; with
 * the flag the same child loads the bindings. Each case runs {@link NativeAccessChild} in a child JVM.
 */
@Tag("unit")
class NativeAccessTest {
    private static final String JAVA = ProcessHandle.current().info().command().orElseThrow();

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void classPathWithoutTheFlagIsToldToAddAllUnnamed() throws Exception {
        Map<String, String> out = run(List.of("--illegal-native-access=deny",
                "-cp", System.getProperty("java.class.path")));
        assertDenied(out, "--enable-native-access=ALL-UNNAMED", "the class path");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void classPathWithTheFlagLoads() throws Exception {
        Map<String, String> out = run(List.of("--illegal-native-access=deny", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path")));
        assertLoaded(out, "null");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void modulePathWithoutTheFlagIsToldToAddTheModule() throws Exception {
        Map<String, String> out = run(modulePath("--illegal-native-access=deny"));
        assertDenied(out, "--enable-native-access=io.fdpblock", "module io.fdpblock");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void modulePathWithTheFlagLoads() throws Exception {
        Map<String, String> out = run(modulePath("--illegal-native-access=deny", "--enable-native-access=io.fdpblock"));
        assertLoaded(out, "io.fdpblock");
    }

    private static void assertDenied(Map<String, String> out, String flag, String where) {
        assertThat(out.get("loaded")).isEqualTo("false");
        assertThat(out.get("loadFailure"))
                .startsWith("IllegalCallerException: native access is not enabled for " + where)
                .contains("start java with " + flag + " (")
                .doesNotContain("liburing2");
        assertThat(out.get("uringCause")).isEqualTo(out.get("loadFailure").substring("IllegalCallerException: ".length()));
        // a class whose initialiser touches the bindings fails with the same words as its cause
        assertThat(out.get("eventfd")).startsWith("ExceptionInInitializerError")
                .contains("IllegalCallerException: native access is not enabled for " + where)
                .contains(flag);
    }

    private static void assertLoaded(Map<String, String> out, String module) {
        assertThat(out.get("module")).isEqualTo(module);
        assertThat(out.get("loaded")).isEqualTo("true");
        assertThat(out.get("loadFailure")).isEmpty();
        assertThat(out.get("eventfd")).isEqualTo("ok true");
    }

    /**
     * The module io.fdpblock from target/classes with the modules it requires (found among the class
     * path's jars through its own descriptor, so a new requirement needs no edit here), the child on
     * the class path.
     */
    private static List<String> modulePath(String... options) throws Exception {
        Path classes = Path.of(NativeLibrary.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path testClasses = Path.of(NativeAccessChild.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertThat(classes.resolve("module-info.class")).as("module descriptor of the library").exists();
        Map<String, Path> byModule = new LinkedHashMap<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            if (entry.endsWith(".jar") && Files.isRegularFile(p)) {
                try {
                    for (ModuleReference ref : ModuleFinder.of(p).findAll()) {
                        byModule.putIfAbsent(ref.descriptor().name(), p);
                    }
                } catch (RuntimeException notAModule) { // a jar whose derived module name is invalid
                }
            }
        }
        ModuleDescriptor root = ModuleFinder.of(classes).find("io.fdpblock").orElseThrow().descriptor();
        List<String> path = new ArrayList<>(List.of(classes.toString()));
        Set<String> seen = new HashSet<>();
        Deque<ModuleDescriptor> todo = new ArrayDeque<>(List.of(root));
        while (!todo.isEmpty()) {
            for (ModuleDescriptor.Requires r : todo.pop().requires()) {
                if (r.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC) || !seen.add(r.name())
                        || ModuleFinder.ofSystem().find(r.name()).isPresent()) {
                    continue;
                }
                Path jar = byModule.get(r.name());
                assertThat(jar).as("jar of required module " + r.name() + " on the test class path").isNotNull();
                path.add(jar.toString());
                Optional<ModuleReference> ref = ModuleFinder.of(jar).find(r.name());
                ref.ifPresent(m -> todo.push(m.descriptor()));
            }
        }
        List<String> args = new ArrayList<>(Arrays.asList(options));
        args.addAll(List.of("--module-path", String.join(File.pathSeparator, path), "--add-modules", "io.fdpblock",
                "-cp", testClasses.toString()));
        return args;
    }

    private static Map<String, String> run(List<String> jvmArgs) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(JAVA, "-Xmx64m"));
        cmd.addAll(jvmArgs);
        cmd.add(NativeAccessChild.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("child exit code; output:\n" + text).isZero();
        Map<String, String> out = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0 && !line.startsWith("WARNING")) {
                out.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        assertThat(out).as("child output:\n" + text).containsKeys("module", "loaded", "loadFailure", "uringCause",
                "eventfd");
        return out;
    }
}
