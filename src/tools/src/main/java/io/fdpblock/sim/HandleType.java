package io.fdpblock.sim;

import java.util.Locale;

/**
 * Reclaim unit handle types of NVMe FDP (FDP configuration log, RUH descriptor byte 0). They differ only
 * in where garbage collection puts the data it relocates.
 */
public enum HandleType {
    /**
     * Type 1: data written through different handles starts in different reclaim units, but garbage
     * collection may relocate it into a reclaim unit shared with data of other initially isolated handles.
     */
    INITIALLY_ISOLATED(1),
    /** Type 2: relocated data stays in reclaim units that hold only this handle's data. */
    PERSISTENTLY_ISOLATED(2);

    private final int code;

    HandleType(int code) {
        this.code = code;
    }

    /** The RUHT value of the FDP configuration log. */
    public int code() {
        return code;
    }

    /** @throws IllegalArgumentException for a code that is neither 1 nor 2 */
    public static HandleType ofCode(int code) {
        for (HandleType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new IllegalArgumentException("reclaim unit handle type " + code
                + " is not known: 1 = initially isolated, 2 = persistently isolated");
    }

    /** Parses {@code initially}, {@code persistently} (or the full names, or 1 / 2). */
    public static HandleType parse(String s) {
        String v = s.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        return switch (v) {
            case "initially", "initially_isolated", "ii", "1" -> INITIALLY_ISOLATED;
            case "persistently", "persistently_isolated", "pi", "2" -> PERSISTENTLY_ISOLATED;
            default -> throw new IllegalArgumentException("handle type '" + s
                    + "' is not known: use initially (initially isolated) or persistently (persistently isolated)");
        };
    }

    public String label() {
        return this == INITIALLY_ISOLATED ? "initially isolated" : "persistently isolated";
    }
}
