package io.fdpblock.devicetier;

import com.github.dockerjava.api.exception.NotFoundException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestFactory;
import org.opentest4j.AssertionFailedError;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.output.OutputFrame;
import org.testcontainers.containers.startupcheck.OneShotStartupCheckStrategy;
import org.testcontainers.utility.DockerImageName;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;

/**
 * The device test tier, driven from the host: boots the emulated NVMe FDP guests of {@code test-images/}
 * one after the other, each once, in its own container (Testcontainers, local image only), runs the
 * {@code device}-tagged tests of both modules (the tools' test classes and the library's test jar, both
 * on this module's test class path) inside it with the JUnit console launcher, and reports each guest
 * result as one dynamic test here (failed with the guest's message, skipped when the guest skipped it),
 * grouped by guest, whose container names its kernel and QEMU.
 *
 * <p>The guests (one image, the same FDP device, see {@link GuestVerdict.Guest}): {@code base}, Debian's
 * 6.12 kernel, runs every device test (those that need write streams skip there); {@code streams}, a
 * kernel >= 6.16, runs only the tests tagged {@code write-streams}, and none of them may skip. A guest
 * without its NVMe device, with no results, or whose results are all skips fails the tier
 * ({@link GuestVerdict}).
 *
 * <p>Tagged {@code host} so that {@code make test} runs it. It skips, with the reason, only where the tier
 * cannot run: no container engine reachable (e.g. not root) or no guest image and no way to build it.
 * {@code make test} builds the image first ({@code test-images/build.sh --if-possible}), which records
 * why it could not in the repository's {@code target/device-tier/status}; a build that failed on a machine that can run
 * the tier fails this test.
 *
 * <p>In the guest: {@code FDPBLOCK_NVME_DEVICE=/dev/ng0n1}, {@code FDPBLOCK_NVME_BLOCK=/dev/nvme0n1},
 * {@code FDPBLOCK_GUEST} (the guest's name), the host's JDK (shared read-only) with C1 only and SerialGC
 * (C2 is very slow under software emulation).
 */
@Tag("host")
class EmulatedFdpDeviceTierTest {
    /** Guest boot + all device tests; QEMU's own limit inside the container is a little shorter. */
    private static final Duration GUEST_TIMEOUT = Duration.ofMinutes(30);
    private static final String GUEST_JAVA_OPTIONS =
            "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx768m --enable-native-access=ALL-UNNAMED"
            + " -Djdk.console=java.base" // else System.console() is never null and the launcher runs stty
            + " -XX:ErrorFile=/fdp/work/hs_err_pid%p.log"; // a JVM crash's report lands beside the reports, on the host
    private static final int CONSOLE_TAIL_LINES = 80;

    @TestFactory
    Stream<DynamicNode> deviceTestsInTheEmulatedFdpGuests() {
        // A skipped or failed tier is one dynamic test, so that Surefire's summary counts it (an aborted
        // or failed test factory itself is not counted there).
        try {
            return runTier().stream();
        } catch (TierSkipped e) {
            return Stream.of(DynamicTest.dynamicTest("device tier", () -> Assumptions.abort(e.getMessage())));
        } catch (Exception | AssertionError e) {
            return Stream.of(DynamicTest.dynamicTest("device tier", () -> {
                throw e;
            }));
        }
    }

    private static List<DynamicNode> runTier() throws Exception {
        // The tools module (the guest's class path is under its target/) and the repository around it
        // (test-images/, and build.sh's record of its last attempt in target/device-tier/status).
        Path project = Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath();
        Path repository = Path.of(System.getProperty("fdpblock.repository", project.resolve("../..").toString()))
                .toAbsolutePath().normalize();
        Path tier = project.resolve("target/device-tier");
        Properties status = buildStatus(repository.resolve("target/device-tier/status"));

        for (Path needed : List.of(project.resolve("target/test-classes"), tier.resolve("lib"),
                tier.resolve("junit-platform-console-standalone.jar"))) {
            if (!Files.exists(needed)) {
                skip("the guest's class path is incomplete (" + project.relativize(needed)
                        + " is missing): run the tests through Maven (make test), whose process-test-classes"
                        + " phase prepares target/device-tier/");
            }
        }
        Path libraryTests = libraryTestJar(tier.resolve("lib"));
        if (libraryTests == null) {
            skip("the guest's class path has no library test jar (target/device-tier/lib/fdpblock-*-tests.jar):"
                    + " install the library first (make test does: mvn install, then the tools' tests)");
        }
        List<GuestVerdict.Guest> guests = guests();
        String engineProblem = engineProblem();
        if (engineProblem != null) {
            skipOrFail(status, "no container engine is reachable (" + engineProblem + ")");
        }
        String image = imageName(repository);
        if (!imagePresent(image)) {
            skipOrFail(status, "the guest image " + image + " is not built: run make test-image (make test"
                    + " builds it by itself)");
        }

        Path workRoot = tier.resolve("work");
        deleteTree(workRoot);
        String filter = setting("fdpblock.device.include", "FDPBLOCK_DEVICE_INCLUDE");
        List<DynamicNode> nodes = new ArrayList<>();
        List<String> summary = new ArrayList<>();
        boolean anyPassed = false;
        for (GuestVerdict.Guest guest : guests) {
            GuestRun run = runGuest(project, image, guest, workRoot.resolve(guest.id), filter,
                    project.relativize(libraryTests).toString());
            nodes.add(run.node());
            summary.add(run.summary());
            anyPassed |= run.passed() > 0;
        }
        System.out.println("[device tier] " + String.join("; ", summary));
        if (!anyPassed) { // each guest may be merely skipped under a filter, but not all of them
            nodes.add(DynamicTest.dynamicTest("device tier", () -> {
                throw new AssertionFailedError("no device test passed in any guest (" + String.join("; ", summary)
                        + "): a device tier that tested nothing is a failure");
            }));
        }
        return nodes;
    }

    /** The guests to boot, in order: {@code fdpblock.device.guests} / FDPBLOCK_DEVICE_GUESTS, default all. */
    private static List<GuestVerdict.Guest> guests() {
        String list = setting("fdpblock.device.guests", "FDPBLOCK_DEVICE_GUESTS");
        if (list.isEmpty()) {
            return List.of(GuestVerdict.Guest.values());
        }
        List<GuestVerdict.Guest> out = new ArrayList<>();
        for (String id : list.split("[,\\s]+")) {
            if (!id.isEmpty()) {
                out.add(GuestVerdict.Guest.byId(id));
            }
        }
        return out;
    }

    /** One guest's outcome: its dynamic tests and a line for the status summary. */
    private record GuestRun(DynamicNode node, String summary, long passed) {}

    private static GuestRun runGuest(Path project, String image, GuestVerdict.Guest guest, Path work, String filter,
            String libraryTests) throws Exception {
        Files.createDirectories(work.resolve("reports"));
        Files.writeString(work.resolve("command"), guestCommand(guest, filter, libraryTests));
        String javaHome = Path.of(System.getProperty("java.home")).toRealPath().toString();
        LineLogger live = new LineLogger();
        long t0 = System.nanoTime();
        Throwable launchFailure = null;
        System.out.println("[device tier] guest " + guest.id + ": booting the emulated NVMe FDP guest (" + image
                + ", TCG) with the JDK " + javaHome + "; it runs " + guest.runs);
        try (GenericContainer<?> container = new GenericContainer<>(DockerImageName.parse(image))) {
            container.withImagePullPolicy(name -> false) // local image only: there is no registry
                    .withNetworkMode("none")
                    .withFileSystemBind(project.toString(), "/fdp/project", BindMode.READ_ONLY)
                    .withFileSystemBind(javaHome, "/fdp/jdk", BindMode.READ_ONLY)
                    .withFileSystemBind(work.toString(), "/fdp/work", BindMode.READ_WRITE)
                    .withEnv("FDP_TIMEOUT", Long.toString(GUEST_TIMEOUT.minusMinutes(1).toSeconds()))
                    .withEnv(launcherSettings()) // FDP_* of this process: run-guest's knobs (device geometry, memory)
                    .withEnv("FDP_GUEST", guest.id)
                    .withCommand("/opt/fdp/run-guest")
                    .withLogConsumer(live)
                    .withStartupCheckStrategy(new OneShotStartupCheckStrategy().withTimeout(GUEST_TIMEOUT));
            container.start(); // returns once the container exited with 0: the guest ran its command to the end
        } catch (RuntimeException e) { // Testcontainers: the container failed, exited non-zero or timed out
            launchFailure = e;
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        String console = readOrEmpty(work.resolve("console.log"));
        String exitCode = readOrEmpty(work.resolve("exit-code")).strip();
        Properties info = new Properties();
        info.load(new StringReader(readOrEmpty(work.resolve("guest.properties"))));
        String title = "guest " + guest.id + " (kernel " + info.getProperty("running_kernel",
                info.getProperty("kernel", "unknown")) + ", " + qemuVersion(info) + ")";
        System.out.printf("[device tier] %s: container finished in %.1f s; guest JUnit exit code: %s%n", title, seconds,
                exitCode.isEmpty() ? "none" : exitCode);

        if (exitCode.isEmpty()) {
            String tail = printTail(console.isEmpty() ? live.all() : console, work);
            Throwable cause = launchFailure;
            return new GuestRun(DynamicTest.dynamicTest(title, () -> {
                throw new AssertionFailedError("the emulated FDP " + title + " did not run its device tests to the end"
                        + (cause != null ? ": " + causes(cause) : "") + "\nguest console (tail):\n" + tail, cause);
            }), title + ": did not finish", 0);
        }
        if (launchFailure != null) { // e.g. removing the exited container failed: the guest's results stand
            System.out.println("[device tier] warning: " + causes(launchFailure));
        }

        Map<String, List<GuestCase>> byClass = readReports(work.resolve("reports"));
        List<GuestVerdict.Result> results = byClass.values().stream().flatMap(List::stream)
                .map(c -> new GuestVerdict.Result(c.className() + "#" + c.name(), c.outcome(), c.message())).toList();
        long failed = count(results, GuestVerdict.Outcome.FAILED);
        long skipped = count(results, GuestVerdict.Outcome.SKIPPED);
        long passed = count(results, GuestVerdict.Outcome.PASSED);
        String summary = String.format("%s: %d results, %d passed, %d skipped, %d failed in %.0f s", title,
                results.size(), passed, skipped, failed, seconds);
        System.out.println("[device tier] " + summary);
        GuestVerdict verdict = GuestVerdict.of(guest, info, results, filter);
        if (failed > 0 || !verdict.failures().isEmpty()) {
            printTail(console, work);
        }

        List<DynamicNode> nodes = new ArrayList<>();
        byClass.forEach((cls, cases) -> nodes.add(DynamicContainer.dynamicContainer(
                cls.substring(cls.lastIndexOf('.') + 1),
                cases.stream().map(c -> DynamicTest.dynamicTest(c.name, c::replay)))));
        for (String problem : verdict.failures()) {
            String tail = tail(console, 25);
            nodes.add(DynamicTest.dynamicTest("guest " + guest.id + " run", () -> {
                throw new AssertionFailedError(problem + "\nguest console (tail):\n" + tail);
            }));
        }
        if (verdict.skipped() != null) {
            nodes.add(DynamicTest.dynamicTest("guest " + guest.id + " run", () -> Assumptions.abort(verdict.skipped())));
        }
        if (!"0".equals(exitCode) && failed == 0) {
            String tail = printTail(console, work);
            nodes.add(DynamicTest.dynamicTest("guest " + guest.id + " JUnit run", () -> {
                throw new AssertionFailedError("the guest's JUnit console launcher exited with " + exitCode
                        + " although no test case failed\nguest console (tail):\n" + tail);
            }));
        }
        return new GuestRun(DynamicContainer.dynamicContainer(title, nodes), summary,
                verdict.failures().isEmpty() ? passed : 0);
    }

    private static long count(List<GuestVerdict.Result> results, GuestVerdict.Outcome outcome) {
        return results.stream().filter(r -> r.outcome() == outcome).count();
    }

    /** "QEMU 10.0.2" from run-guest's {@code qemu=QEMU emulator version 10.0.2 (Debian ...)}. */
    private static String qemuVersion(Properties info) {
        String q = info.getProperty("qemu", "");
        Matcher m = Pattern.compile("version (\\S+)").matcher(q);
        return m.find() ? "QEMU " + m.group(1) : "QEMU unknown";
    }

    /** The FDP_* environment variables of this process (run-guest's settings, e.g. FDP_NVME_LBA=512). */
    private static Map<String, String> launcherSettings() {
        Map<String, String> env = new LinkedHashMap<>();
        System.getenv().forEach((k, v) -> {
            if (k.startsWith("FDP_") && !k.equals("FDP_GUEST")) {
                env.put(k, v);
            }
        });
        if (!env.isEmpty()) {
            System.out.println("[device tier] run-guest settings from the environment: " + env);
        }
        return env;
    }

    /** A setting from a system property (e.g. {@code mvn -Dfdpblock.device.include=...}) or the environment. */
    private static String setting(String property, String env) {
        String v = System.getProperty(property);
        if (v == null || v.isBlank()) {
            v = System.getenv(env);
        }
        return v == null ? "" : v.strip();
    }

    /**
     * The script the guest runs (in /fdp/work, as root, with FDPBLOCK_NVME_* and FDPBLOCK_GUEST set by the
     * guest's init): the guest's tag expression over the device tests of both modules, the tools' test
     * classes and the library's test jar ({@code libraryTests}, relative to the tools module), one JVM,
     * Jupiter only (the launcher's Vintage and Suite engines would scan the class path again for nothing).
     * Knobs: {@code filter} ({@code fdpblock.device.include} / FDPBLOCK_DEVICE_INCLUDE), a regular expression
     * on fully qualified class names (run only those device tests); {@code fdpblock.device.javaOptions} /
     * FDPBLOCK_DEVICE_JAVA_OPTIONS, more options for the guest's JVM.
     */
    static String guestCommand(GuestVerdict.Guest guest, String filter, String libraryTests) {
        String javaOptions = setting("fdpblock.device.javaOptions", "FDPBLOCK_DEVICE_JAVA_OPTIONS");
        String classPath = GUEST_CLASS_PATH;
        String scanRoots = scanRoots(libraryTests);
        return """
                #!/bin/sh
                # Written by EmulatedFdpDeviceTierTest: the device tests of guest %s (tags: %s), one JVM.
                cd /fdp/project || exit 125
                echo "fdp-guest: JUnit console launcher, tests tagged '%s' (FDPBLOCK_NVME_DEVICE=$FDPBLOCK_NVME_DEVICE)"
                exec /fdp/jdk/bin/java %s %s -Djava.io.tmpdir=/tmp \\
                  -cp '%s' org.junit.platform.console.ConsoleLauncher execute \\
                  --disable-banner --disable-ansi-colors --details=tree --include-engine=junit-jupiter \\
                  '--scan-class-path=%s' '--include-tag=%s' %s--reports-dir=/fdp/work/reports
                """.formatted(guest.id, guest.tags, guest.tags, GUEST_JAVA_OPTIONS, javaOptions, classPath, scanRoots,
                guest.tags, filter.isEmpty() ? "" : "'--include-classname=" + filter.replace("'", "") + "' ");
    }

    /** The guest JVM's class path, relative to the tools module (the guest's working directory). */
    static final String GUEST_CLASS_PATH = String.join(":",
            "target/device-tier/junit-platform-console-standalone.jar",
            "target/test-classes",
            "target/classes",
            "target/device-tier/lib/*");

    /**
     * Where the guest's launcher looks for tests: the tools' test classes and the library's test jar. Explicit
     * roots: without them the launcher scans only the directories of its class path, not its jars.
     */
    static String scanRoots(String libraryTests) {
        return String.join(":", "target/test-classes", libraryTests);
    }

    /** The library's test jar among the guest's jars (fdpblock-VERSION-tests.jar), or null. */
    static Path libraryTestJar(Path lib) throws IOException {
        if (!Files.isDirectory(lib)) {
            return null;
        }
        try (Stream<Path> s = Files.list(lib)) {
            return s.filter(p -> p.getFileName().toString().matches("fdpblock-.*-tests\\.jar")).findFirst().orElse(null);
        }
    }

    /** One test case as the guest's JUnit reported it; {@link #replay} gives the same outcome here. */
    record GuestCase(String className, String name, GuestVerdict.Outcome outcome, String message, String detail) {
        void replay() {
            switch (outcome) {
                case PASSED -> { }
                case SKIPPED -> Assumptions.abort("skipped in the guest: " + message);
                case FAILED -> {
                    AssertionFailedError e = new AssertionFailedError("failed in the guest: " + className + " "
                            + name + ": " + message + (detail.isBlank() ? "" : "\n--- guest stack trace ---\n" + detail));
                    e.setStackTrace(new StackTraceElement[0]); // the host's frames say nothing about the guest
                    throw e;
                }
            }
        }
    }

    /** The guest's legacy JUnit XML reports, test cases grouped by class in report order. */
    private static Map<String, List<GuestCase>> readReports(Path dir) throws Exception {
        Map<String, List<GuestCase>> byClass = new LinkedHashMap<>();
        List<Path> reports;
        try (Stream<Path> s = Files.list(dir)) {
            reports = s.filter(p -> p.getFileName().toString().matches("TEST-.*\\.xml")).sorted().toList();
        }
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        for (Path report : reports) {
            NodeList cases = f.newDocumentBuilder().parse(report.toFile()).getElementsByTagName("testcase");
            for (int i = 0; i < cases.getLength(); i++) {
                Element tc = (Element) cases.item(i);
                GuestVerdict.Outcome outcome = GuestVerdict.Outcome.PASSED;
                String message = "";
                String detail = "";
                for (String tag : List.of("failure", "error", "skipped")) {
                    NodeList n = tc.getElementsByTagName(tag);
                    if (n.getLength() > 0) {
                        Element e = (Element) n.item(0);
                        outcome = tag.equals("skipped") ? GuestVerdict.Outcome.SKIPPED : GuestVerdict.Outcome.FAILED;
                        detail = e.getTextContent().strip();
                        message = e.getAttribute("message");
                        if (message.isBlank()) {
                            message = detail.lines().findFirst().orElse(tag);
                        }
                        break;
                    }
                }
                byClass.computeIfAbsent(tc.getAttribute("classname"), k -> new ArrayList<>())
                        .add(new GuestCase(tc.getAttribute("classname"), tc.getAttribute("name"), outcome, message,
                                detail));
            }
        }
        return byClass;
    }

    /** The image that build.sh builds for the current contents of test-images/ (FDPBLOCK_TEST_IMAGE overrides). */
    private static String imageName(Path project) throws IOException, InterruptedException {
        String override = System.getenv("FDPBLOCK_TEST_IMAGE");
        if (override != null && !override.isBlank()) {
            return override.strip();
        }
        Process p = new ProcessBuilder("bash", project.resolve("test-images/build.sh").toString(), "--print-tag")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0 || out.isEmpty()) {
            throw new IOException("test-images/build.sh --print-tag failed: " + out);
        }
        return out.lines().reduce((a, b) -> b).orElseThrow();
    }

    /** Null when Testcontainers reaches a Docker engine, else why not. */
    private static String engineProblem() {
        String dockerHost = System.getenv("DOCKER_HOST");
        String who = isRoot() ? "" : "; not root, so make test could not install or start one";
        if ((dockerHost == null || dockerHost.isBlank()) && !Files.exists(Path.of("/var/run/docker.sock"))) {
            return "no /var/run/docker.sock and no DOCKER_HOST" + who;
        }
        try {
            if (DockerClientFactory.instance().isDockerAvailable()) {
                return null;
            }
        } catch (RuntimeException e) {
            return "Testcontainers: " + causes(e) + who;
        }
        return "Testcontainers found no usable Docker environment" + who;
    }

    private static boolean imagePresent(String image) {
        try {
            DockerClientFactory.instance().client().inspectImageCmd(image).exec();
            return true;
        } catch (NotFoundException e) {
            return false;
        }
    }

    /** build.sh's record of its last attempt (state=ok|unavailable|failed, image, reason), if any. */
    private static Properties buildStatus(Path file) throws IOException {
        Properties p = new Properties();
        if (Files.isRegularFile(file)) {
            try (var in = Files.newBufferedReader(file)) {
                p.load(in);
            }
        }
        return p;
    }

    /** Skips with the reason, unless build.sh recorded that building the tier failed: then that fails. */
    private static void skipOrFail(Properties status, String reason) {
        String state = status.getProperty("state", "");
        String recorded = status.getProperty("reason", "");
        if (state.equals("failed")) {
            throw new AssertionFailedError("device tier: " + reason + "; building it failed: " + recorded
                    + " (test-images/build.sh)");
        }
        skip(reason + (state.equals("unavailable") ? "; test-images/build.sh: " + recorded : ""));
    }

    private static void skip(String reason) {
        System.out.println("[device tier] SKIPPED: " + reason);
        throw new TierSkipped("device tier skipped: " + reason);
    }

    /** The tier cannot run on this machine; the message says why. */
    private static final class TierSkipped extends RuntimeException {
        private static final long serialVersionUID = 1L;

        TierSkipped(String reason) {
            super(reason, null, false, false);
        }
    }

    private static boolean isRoot() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("Uid:")).anyMatch(l -> l.split("\\s+")[1].equals("0"));
        } catch (IOException e) {
            return false;
        }
    }

    private static String causes(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(sb.isEmpty() ? "" : " <- ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return sb.toString();
    }

    private static String readOrEmpty(Path p) {
        try {
            return Files.isRegularFile(p) ? Files.readString(p, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            return "";
        }
    }

    /** Prints the console's last lines and returns the last few of them, for a failure message. */
    private static String printTail(String console, Path work) {
        System.out.println("[device tier] guest console (tail; all of it in " + work.resolve("console.log") + "):\n"
                + tail(console, CONSOLE_TAIL_LINES));
        return tail(console, 25);
    }

    private static String tail(String text, int n) {
        List<String> lines = text.lines().toList();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    /** Echoes the guest's progress lines (fdp-host:/fdp-guest:) live and keeps the whole console. */
    private static final class LineLogger implements Consumer<OutputFrame> {
        private final StringBuilder all = new StringBuilder();
        private final StringBuilder line = new StringBuilder();

        @Override
        public synchronized void accept(OutputFrame frame) {
            String s = frame.getUtf8String();
            all.append(s);
            for (char ch : s.toCharArray()) {
                if (ch == '\n') {
                    String l = line.toString().stripTrailing();
                    if (l.startsWith("fdp-guest:") || (l.startsWith("fdp-host:") && !l.startsWith("fdp-host: qemu-system"))) {
                        System.out.println("[device tier] " + l);
                    }
                    line.setLength(0);
                } else if (ch != '\r') {
                    line.append(ch);
                }
            }
        }

        synchronized String all() {
            return all.toString();
        }
    }
}
