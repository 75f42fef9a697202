package io.fdpblock.uring;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("unit")
class RingOptionsTest {

    @Test
    void defaultsAndWithers() {
        RingOptions o = RingOptions.of(64);
        assertThat(o).isEqualTo(new RingOptions(64, false, true, 0));
        assertThat(o.withBigEntries(true)).isEqualTo(new RingOptions(64, true, true, 0));
        assertThat(o.withTaskrunHints(false)).isEqualTo(new RingOptions(64, false, false, 0));
        assertThat(o.withSqPoll(50)).isEqualTo(new RingOptions(64, false, true, 50));
    }

    @Test
    void entriesOutOfRangeAreRejected() {
        assertThatThrownBy(() -> RingOptions.of(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1..32768");
        assertThatThrownBy(() -> RingOptions.of(RingOptions.MAX_ENTRIES + 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("32769");
        assertThat(RingOptions.of(RingOptions.MAX_ENTRIES).entries()).isEqualTo(32768);
    }

    @Test
    void negativeSqPollIdleIsRejected() {
        assertThatThrownBy(() -> RingOptions.of(8).withSqPoll(-1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
    }
}
