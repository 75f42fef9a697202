package io.fdpblock.tools.util;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Figures of this machine's memory, from /proc/meminfo. */
public final class Meminfo {
    private Meminfo() {}

    /** The field {@code name} of /proc/meminfo (e.g. MemTotal, MemAvailable) in bytes, or -1 when unknown. */
    public static long bytes(String name) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith(name + ":")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // unknown
        }
        return -1;
    }
}
