package io.fdpblock.cli;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

import static org.assertj.core.api.Assertions.assertThat;

/** The launcher script (src/main/scripts/fdpblock) reached directly and through symlinks. */
@Tag("unit")
class LauncherTest {
    @TempDir
    Path dir;

    private Path install() throws Exception {
        Path real = Files.createDirectories(dir.resolve("project/target"));
        Path script = Files.copy(Path.of("src/main/scripts/fdpblock"), real.resolve("fdpblock"));
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        Manifest mf = new Manifest();
        mf.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        mf.getMainAttributes().put(Attributes.Name.MAIN_CLASS, LauncherProbe.class.getName());
        String entry = LauncherProbe.class.getName().replace('.', '/') + ".class";
        try (JarOutputStream jar = new JarOutputStream(Files.newOutputStream(real.resolve("fdpblock.jar")), mf);
             InputStream cls = LauncherProbe.class.getClassLoader().getResourceAsStream(entry)) {
            jar.putNextEntry(new JarEntry(entry));
            cls.transferTo(jar);
            jar.closeEntry();
        }
        return script;
    }

    private record Ran(int code, String out) {}

    private Ran run(Path launcher, String... args) throws Exception {
        String[] cmd = new String[args.length + 1];
        cmd[0] = launcher.toString();
        System.arraycopy(args, 0, cmd, 1, args.length);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new Ran(p.exitValue(), out);
    }

    @Test
    void throughASymlinkAndAChainOfThemTheLauncherFindsTheJarNextToTheScript() throws Exception {
        Path script = install();
        Path bin = Files.createDirectories(dir.resolve("home/bin"));
        Path link = Files.createSymbolicLink(bin.resolve("fdpblock"), Path.of("../../project/target/fdpblock"));
        Path chain = Files.createSymbolicLink(dir.resolve("fb"), link);
        for (Path launcher : new Path[] {script, link, chain}) {
            Ran r = run(launcher, "selftest", "--x");
            assertThat(r.code()).as("%s: %s", launcher, r.out()).isZero();
            assertThat(r.out()).contains("probe ran with [selftest, --x]");
        }
    }

    @Test
    void aMissingJarIsNamedWhereTheLauncherLooked() throws Exception {
        Path script = install();
        Files.delete(script.resolveSibling("fdpblock.jar"));
        Path link = Files.createSymbolicLink(dir.resolve("fdpblock"), script);
        Ran r = run(link);
        assertThat(r.code()).isEqualTo(3);
        assertThat(r.out()).contains(script.toRealPath().resolveSibling("fdpblock.jar") + " is missing")
                .contains("make build");
    }
}
