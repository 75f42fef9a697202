package io.fdpblock.cli;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A child process for {@link CliProcessTest}: a {@link Scratch} whose temp dir (under args[0]) takes
 * seconds to make, as a slow file system would, announced on stdout so that the test can send its
 * signal while it is being made; then it stands for a job that runs until stopped.
 */
final class ScratchChild {
    private ScratchChild() {}

    public static void main(String[] args) throws Exception {
        Path parent = Path.of(args[0]);
        try (Scratch s = new Scratch(System.err, null, () -> {
            Path d = Files.createTempDirectory(parent, "fdpblock-child-");
            Files.createFile(d.resolve("probe"));
            System.out.println("making " + d);
            System.out.flush();
            try {
                Thread.sleep(3000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return d;
        })) {
            s.dir();
            System.out.println("made");
            System.out.flush();
            Thread.sleep(120_000);
        }
    }
}
