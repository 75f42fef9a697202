package io.fdpblock.devicetier;

import io.fdpblock.devicetier.GuestVerdict.Guest;
import io.fdpblock.devicetier.GuestVerdict.Outcome;
import io.fdpblock.devicetier.GuestVerdict.Result;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import org.assertj.core.api.Assertions;

/** The device tier cannot pass empty: the rules that judge one guest's run beyond its test results. */
@Tag("unit")
class GuestVerdictTest {
    private static Properties info(String nvme, String writeStreams) {
        Properties p = new Properties();
        p.setProperty("guest", "x");
        p.setProperty("running_kernel", "6.12.95+deb12-amd64");
        if (nvme != null) {
            p.setProperty("nvme", nvme);
        }
        p.setProperty("write_streams", writeStreams);
        return p;
    }

    private static final Properties BASE_OK = info("/dev/ng0n1 /dev/nvme0n1", "none");
    private static final Properties STREAMS_OK = info("/dev/ng0n1 /dev/nvme0n1", "8");
    private static final Result PASS = new Result("a.B#one", Outcome.PASSED, "");
    private static final Result SKIP = new Result("a.B#two", Outcome.SKIPPED, "no write streams here");
    private static final Result FAIL = new Result("a.B#three", Outcome.FAILED, "expected 8");

    @Test
    void aBaseGuestWithItsDeviceAndOnePassCounts() {
        GuestVerdict v = GuestVerdict.of(Guest.BASE, BASE_OK, List.of(PASS, SKIP), "");
        assertThat(v.failures()).isEmpty();
        assertThat(v.skipped()).isNull();
    }

    @Test
    void aGuestWithoutItsNvmeDeviceFailsEvenIfSomethingPassed() {
        GuestVerdict v = GuestVerdict.of(Guest.BASE, info("", "none"), List.of(PASS), "");
        assertThat(v.failures()).singleElement().asString().contains("has no NVMe device")
                .contains("/dev/ng0n1 never appeared").contains("6.12.95+deb12-amd64");
        GuestVerdict unrecorded = GuestVerdict.of(Guest.BASE, info(null, "none"), List.of(PASS), "");
        assertThat(unrecorded.failures()).singleElement().asString().contains("did not record one");
    }

    @Test
    void everyResultASkipFailsWithTheFirstReason() {
        GuestVerdict v = GuestVerdict.of(Guest.BASE, BASE_OK, List.of(SKIP, SKIP), "");
        assertThat(v.failures()).singleElement().asString().contains("every one of its 2 results")
                .contains("a.B#two: no write streams here").contains("tested nothing");
    }

    @Test
    void noResultsFail() {
        assertThat(GuestVerdict.of(Guest.BASE, BASE_OK, List.of(), "").failures()).singleElement().asString()
                .contains("reported no test results").contains("runs nothing");
    }

    @Test
    void withAClassNameFilterAnEmptyOrAllSkippedGuestIsSkippedNotFailed() {
        GuestVerdict empty = GuestVerdict.of(Guest.BASE, BASE_OK, List.of(), "io\\.fdpblock\\.nvme\\..*");
        assertThat(empty.failures()).isEmpty();
        assertThat(empty.skipped()).contains("matching fdpblock.device.include=io\\.fdpblock\\.nvme\\..*");
        GuestVerdict skips = GuestVerdict.of(Guest.BASE, BASE_OK, List.of(SKIP), "x");
        assertThat(skips.failures()).isEmpty();
        assertThat(skips.skipped()).contains("every one of its 1 results");
        // but a missing device is a failure whatever the filter
        assertThat(GuestVerdict.of(Guest.BASE, info("", "none"), List.of(), "x").failures()).hasSize(1);
    }

    @Test
    void realFailuresAreLeftToTheirOwnResults() {
        assertThat(GuestVerdict.of(Guest.BASE, BASE_OK, List.of(FAIL, SKIP), "").failures()).isEmpty();
    }

    @Test
    void theStreamsGuestMustRunEveryTestItIsGivenAndReportWriteStreams() {
        assertThat(GuestVerdict.of(Guest.STREAMS, STREAMS_OK, List.of(PASS), "").failures()).isEmpty();
        GuestVerdict skipped = GuestVerdict.of(Guest.STREAMS, STREAMS_OK, List.of(PASS, SKIP), "");
        assertThat(skipped.failures()).singleElement().asString().contains("skipped 1 of 2 tests")
                .contains("a.B#two (no write streams here)");
        // a skip there fails even under a filter: that guest exists to run those tests
        assertThat(GuestVerdict.of(Guest.STREAMS, STREAMS_OK, List.of(SKIP), "x").failures()).hasSize(1);
        GuestVerdict noStreams = GuestVerdict.of(Guest.STREAMS, info("/dev/ng0n1 /dev/nvme0n1", "none"),
                List.of(PASS), "");
        assertThat(noStreams.failures()).singleElement().asString().contains("reports no write streams")
                .contains("max_write_streams: none");
        assertThat(GuestVerdict.of(Guest.STREAMS, info("/dev/ng0n1 /dev/nvme0n1", "0"), List.of(PASS), "")
                .failures()).hasSize(1);
    }

    @Test
    void guestsAreNamedAndTheirTagExpressionsSelectTheirTests() {
        assertThat(Guest.byId("base").tags).isEqualTo("device");
        assertThat(Guest.byId("streams").tags).isEqualTo("device & " + DeviceGuest.WRITE_STREAMS_TAG);
        assertThat(Guest.STREAMS.id).isEqualTo(DeviceGuest.STREAMS_GUEST);
        Assertions.assertThatThrownBy(() -> Guest.byId("trixie"))
                .hasMessageContaining("'trixie'").hasMessageContaining("base and streams");
    }
}
