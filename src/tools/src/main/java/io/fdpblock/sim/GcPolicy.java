package io.fdpblock.sim;

import java.util.Locale;

/** How the model picks the reclaim unit to garbage-collect (always among the full ones of a reclaim group). */
public enum GcPolicy {
    /** Fewest valid blocks. */
    GREEDY,
    /**
     * Rosenblum and Ousterhout's LFS cleaner (ACM TOCS 10(1), 1992): the highest
     * {@code (1 - u) * age / (1 + u)}, u the valid fraction, age the time since the unit was filled
     * (in host blocks written).
     */
    COST_BENEFIT,
    /** The unit filled longest ago (a circular log; Desnoyers' "LRU" cleaning). */
    FIFO;

    public static GcPolicy parse(String s) {
        return switch (s.trim().toLowerCase(Locale.ROOT).replace('_', '-')) {
            case "greedy" -> GREEDY;
            case "cost-benefit", "costbenefit", "cb" -> COST_BENEFIT;
            case "fifo", "lru" -> FIFO;
            default -> throw new IllegalArgumentException("garbage collection policy '" + s
                    + "' is not known: use greedy, cost-benefit or fifo");
        };
    }

    public String label() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
