package io.fdpblock.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A loop block device over a file ({@code losetup}), for the scale benchmark: a regular file reports
 * its file system's block size (4 KiB on ext4) as the device's logical block size, so a store on it
 * needs {@code block_align} 4096 and 8 KiB slots; the same file behind a loop device has
 * 512-byte blocks, so 1 KiB slots, and ten million entries write 10 GB instead of 80. The loop driver
 * writes through the page cache of the file (its default, buffered mode). Needs root.
 */
final class LoopDevice implements AutoCloseable {
    private final Path device;
    private boolean detached;
    /** Detaches it when the JVM is stopped first (SIGINT, SIGTERM): no loop device is left holding the file. */
    private final Thread hook;

    private LoopDevice(Path device) {
        this.device = device;
        this.hook = new Thread(() -> {
            try {
                close(); // while the store still has it open, the kernel detaches it at the last close
            } catch (IOException e) {
                System.err.println("fdpblock: " + e.getMessage());
            }
        }, "fdpblock-loop-detach");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Whether this process may attach loop devices (root, and losetup on the PATH). */
    static boolean available() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return false;
        }
        try {
            return run(List.of("losetup", "--version")).code() == 0;
        } catch (IOException e) {
            return false;
        }
    }

    /** Attaches {@code file} to the first free loop device. */
    static LoopDevice attach(Path file) throws IOException {
        Result r = run(List.of("losetup", "--find", "--show", "--sector-size", "512", file.toString()));
        if (r.code() != 0 || !r.out().startsWith("/dev/loop")) {
            throw new IOException("losetup --find --show " + file + " failed (exit " + r.code() + "): " + r.out().strip()
                    + "; run as root, or use --no-loop (4 KiB blocks, 8 KiB slots) or --device");
        }
        return new LoopDevice(Path.of(r.out().strip()));
    }

    Path path() {
        return device;
    }

    /** Detaches the loop device (its file stays). Idempotent. */
    @Override
    public synchronized void close() throws IOException {
        if (detached) {
            return;
        }
        Result r = run(List.of("losetup", "--detach", device.toString()));
        if (r.code() != 0) {
            throw new IOException("losetup --detach " + device + " failed (exit " + r.code() + "): " + r.out().strip()
                    + "; detach it by hand");
        }
        detached = true;
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: this is the hook
        }
    }

    private record Result(int code, String out) {}

    private static Result run(List<String> command) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not finish within 60 s");
            }
            return new Result(p.exitValue(), out);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(String.join(" ", command) + " was interrupted", e);
        }
    }
}
