package io.fdpblock.testing;

import org.junit.jupiter.api.extension.AnnotatedElementContext;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDirFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code @TempDir(factory = DiskTempDirFactory.class)}: a temp dir on a disk-backed file system, so
 * O_DIRECT works. {@code /tmp} is tmpfs on many machines (tmpfs rejects O_DIRECT with EINVAL);
 * {@code /var/tmp} is disk-backed by convention. JUnit deletes the directory afterwards as usual.
 */
public final class DiskTempDirFactory implements TempDirFactory {
    private static final Path VAR_TMP = Path.of("/var/tmp");

    @Override
    public Path createTempDirectory(AnnotatedElementContext elementContext, ExtensionContext extensionContext)
            throws IOException {
        Path parent = Files.isDirectory(VAR_TMP) && Files.isWritable(VAR_TMP)
                ? VAR_TMP
                : Path.of(System.getProperty("java.io.tmpdir"));
        return Files.createTempDirectory(parent, "fdpblock-test-");
    }
}
