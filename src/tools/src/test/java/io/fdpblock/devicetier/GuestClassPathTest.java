package io.fdpblock.devicetier;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The device tier's guest class path, checked on the host without a guest: the JUnit console launcher, with
 * the class path and scan roots the guest gets (prepared by Maven's process-test-classes phase), discovers
 * the device tests of both modules, the tools' and the library's (from its test jar).
 */
@Tag("host")
class GuestClassPathTest {
    @Test
    void theGuestsLauncherFindsTheDeviceTestsOfTheToolsAndOfTheLibrary() throws Exception {
        Path module = Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath();
        Path libraryTests = EmulatedFdpDeviceTierTest.libraryTestJar(module.resolve("target/device-tier/lib"));
        Path launcher = module.resolve("target/device-tier/junit-platform-console-standalone.jar");
        assumeTrue(libraryTests != null && Files.exists(launcher),
                "target/device-tier/ is prepared by Maven (process-test-classes)");

        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", EmulatedFdpDeviceTierTest.GUEST_CLASS_PATH,
                "org.junit.platform.console.ConsoleLauncher", "discover", "--disable-banner", "--disable-ansi-colors",
                "--details=tree", "--include-engine=junit-jupiter",
                "--scan-class-path=" + EmulatedFdpDeviceTierTest.scanRoots(module.relativize(libraryTests).toString()),
                "--include-tag=device")
                .directory(module.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(2, TimeUnit.MINUTES)).as("the launcher ends").isTrue();
        assertThat(p.exitValue()).as("launcher exit code; output:%n%s", out).isZero();
        assertThat(out).as("the tools' device tests and the library's")
                .contains("OperatorSurfaceDeviceTest", "PipelinedIoReopenDeviceTest", "SimDeviceTest",
                        "GuestSmokeTest", "FdpNvmeDeviceTest", "WriteStreamBlockDeviceNvmeDeviceTest")
                .doesNotContain("GuestVerdictTest", "CliBadInputTest"); // not device tests
    }
}
