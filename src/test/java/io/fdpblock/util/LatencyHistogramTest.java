package io.fdpblock.util;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

@Tag("unit")
class LatencyHistogramTest {
    @Test
    void anEmptyHistogramReportsZero() {
        LatencyHistogram h = new LatencyHistogram();
        assertThat(h.valueAtPercentile(50)).isZero();
        assertThat(h.max()).isZero();
    }

    @Test
    void smallValuesAreExact() {
        LatencyHistogram h = new LatencyHistogram();
        IntStream.rangeClosed(1, 100).forEach(h::record);
        assertThat(h.valueAtPercentile(50)).isEqualTo(50);
        assertThat(h.valueAtPercentile(99)).isEqualTo(99);
        assertThat(h.valueAtPercentile(100)).isEqualTo(100);
        assertThat(h.max()).isEqualTo(100);
    }

    @Test
    void largeValuesAreWithinTheBucketWidth() {
        LatencyHistogram h = new LatencyHistogram();
        for (long v = 1; v <= 10_000; v++) {
            h.record(v * 1_000_003L); // microseconds to ten seconds, in nanoseconds
        }
        assertThat((double) h.valueAtPercentile(50)).isCloseTo(5_000 * 1_000_003.0, within(5_000 * 1_000_003.0 / 256));
        assertThat((double) h.valueAtPercentile(99.9)).isCloseTo(9_990 * 1_000_003.0, within(9_990 * 1_000_003.0 / 256));
        assertThat(h.max()).isEqualTo(10_000 * 1_000_003L);
        assertThat(h.valueAtPercentile(100)).isEqualTo(h.max());
    }

    @Test
    void aPercentileIsNeverAboveTheMaximumNorBelowTheValueItStandsFor() {
        LatencyHistogram h = new LatencyHistogram();
        h.record(Long.MAX_VALUE);
        h.record(-5); // counts as 0
        assertThat(h.valueAtPercentile(50)).isZero();
        assertThat(h.valueAtPercentile(99)).isEqualTo(Long.MAX_VALUE);
        h.record(1_000_001);
        assertThat(h.valueAtPercentile(60)).isBetween(1_000_001L, 1_000_001L + 1_000_001L / 256);
    }
}
