package io.fdpblock.bench;

import java.util.Arrays;
import java.util.List;
import java.util.function.ToDoubleFunction;

/** Medians and percentiles of small samples (rounds, latencies). */
public final class Stats {
    private Stats() {}

    /** The median (mean of the middle two for an even count), ignoring NaN; NaN when nothing is left. */
    public static double median(double... values) {
        double[] v = Arrays.stream(values).filter(d -> !Double.isNaN(d)).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        int mid = v.length / 2;
        return v.length % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
    }

    public static <T> double median(List<T> items, ToDoubleFunction<T> f) {
        return median(items.stream().mapToDouble(f).toArray());
    }

    /**
     * The {@code p}-th percentile (0..100) of {@code sorted} by nearest rank; NaN for an empty array.
     */
    public static double percentile(long[] sorted, int count, double p) {
        if (count == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(p / 100.0 * count);
        return sorted[Math.max(0, Math.min(count - 1, rank - 1))];
    }

    /** ours / reference, NaN when either is missing or the reference is 0. */
    public static double ratio(double ours, double reference) {
        if (Double.isNaN(ours) || Double.isNaN(reference) || reference == 0) {
            return Double.NaN;
        }
        return ours / reference;
    }
}
