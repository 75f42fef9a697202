package io.fdpblock.tools.util;

import java.util.Locale;

/** How the tools write sizes for people. */
public final class Sizes {
    private static final String[] UNITS = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

    private Sizes() {}

    /** Bytes in binary units, one decimal when not whole: 1 GiB, 768 KiB, 1.5 MiB, 77.9 GiB. */
    public static String human(long bytes) {
        double v = bytes;
        int u = 0;
        while (Math.abs(v) >= 1024 && u < UNITS.length - 1) {
            v /= 1024;
            u++;
        }
        return v == Math.rint(v) ? String.format(Locale.ROOT, "%d %s", (long) v, UNITS[u])
                : String.format(Locale.ROOT, "%.1f %s", v, UNITS[u]);
    }
}
