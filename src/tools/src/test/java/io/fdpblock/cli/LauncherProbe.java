package io.fdpblock.cli;

import java.util.Arrays;

/** Test-only main that the launcher test packs into a jar: says it ran, with its arguments. */
public final class LauncherProbe {
    private LauncherProbe() {}

    public static void main(String[] args) {
        System.out.println("probe ran with " + Arrays.toString(args));
    }
}
