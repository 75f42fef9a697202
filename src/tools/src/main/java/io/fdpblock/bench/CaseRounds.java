package io.fdpblock.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the results of one case of {@code fdpblock bench} keep alike, whether ours is measured against fio
 * ({@link CaseResult}) or against our other ways of the same job ({@link PlacementResult}): the case, its
 * rounds in the order they ran, and why it was skipped, if it was.
 *
 * @param <R> one round's figures
 */
public abstract sealed class CaseRounds<R> permits CaseResult, PlacementResult {
    private final BenchCase benchCase;
    private final List<R> rounds = new ArrayList<>();
    private String skipped;

    CaseRounds(BenchCase benchCase) {
        this.benchCase = benchCase;
    }

    public BenchCase benchCase() {
        return benchCase;
    }

    public List<R> rounds() {
        return rounds;
    }

    public void add(R r) {
        rounds.add(r);
    }

    /** Why the case did not run, or null when it did. */
    public String skipped() {
        return skipped;
    }

    public void skip(String reason) {
        skipped = reason;
    }

    /** The unit of the case's primary figure: IOPS for 4 KiB, MB/s for 1 MiB. */
    public String throughputUnit() {
        return benchCase.judgedByIops() ? "IOPS" : "MB/s";
    }

    /**
     * The first entries of the case's JSON: what it is (id, label, kind), its job (with our engine and rings
     * when {@code oneEngine}: a case whose ways run on different engines has no one engine) and, under
     * {@code againstKey}, what it is measured against; then {@code skipped} when it was.
     */
    Map<String, Object> caseMap(boolean oneEngine, String againstKey) {
        BenchCase c = benchCase;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", c.id());
        m.put("label", c.label());
        m.put("kind", c.kind().name().toLowerCase(Locale.ROOT));
        if (oneEngine) {
            m.put("engine", c.engine().configName());
        }
        m.put("rw", c.rw());
        m.put("block_size", c.blockSize());
        m.put("queue_depth", c.queueDepth());
        if (oneEngine) {
            m.put("rings", c.rings());
        }
        m.put(againstKey, c.referenceLabel());
        if (skipped != null) {
            m.put("skipped", skipped);
        }
        return m;
    }
}
