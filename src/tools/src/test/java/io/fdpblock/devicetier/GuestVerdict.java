package io.fdpblock.devicetier;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * Whether one guest's run of the device tier counts, beyond its individual test results: a tier that
 * ran nothing, or ran without its NVMe device, or skipped everything, must not pass.
 *
 * @param failures why this guest's run fails the tier (empty: it counts)
 * @param skipped why this guest's run is skipped rather than failed (only with a class-name filter), or null
 */
record GuestVerdict(List<String> failures, String skipped) {

    /** The guests of the tier: one image, the same emulated FDP device, each with its own kernel. */
    enum Guest {
        /** Debian's 6.12 kernel: every device test (those that need write streams skip there). */
        BASE("base", "device", "every device test"),
        /** A kernel >= 6.16 with block-layer write streams: only the tests that need them, none may skip. */
        STREAMS(DeviceGuest.STREAMS_GUEST, "device & " + DeviceGuest.WRITE_STREAMS_TAG, "the device tests tagged write-streams");

        final String id;
        /** The JUnit tag expression the guest's launcher runs. */
        final String tags;
        final String runs;

        Guest(String id, String tags, String runs) {
            this.id = id;
            this.tags = tags;
            this.runs = runs;
        }

        static Guest byId(String id) {
            for (Guest g : values()) {
                if (g.id.equals(id)) {
                    return g;
                }
            }
            throw new IllegalArgumentException("no device-tier guest '" + id + "': the guests are base and streams");
        }
    }

    enum Outcome { PASSED, FAILED, SKIPPED }

    /** One guest test result: {@code name} as class#method, its outcome and (for a skip or failure) why. */
    record Result(String name, Outcome outcome, String message) {}

    /**
     * @param info the guest's {@code guest.properties} (run-guest and the guest's init write it)
     * @param filter the class-name filter the guest ran with ("" = none): with one, a guest that ran
     *        nothing or only skips is skipped, not failed (the filter may simply match nothing there)
     */
    static GuestVerdict of(Guest guest, Properties info, List<Result> results, String filter) {
        List<String> failures = new ArrayList<>();
        String skipped = null;
        String who = "guest " + guest.id + " (kernel " + info.getProperty("running_kernel",
                info.getProperty("kernel", "unknown")) + ")";
        String nvme = info.getProperty("nvme");
        if (nvme == null || nvme.isBlank()) {
            failures.add(who + " has no NVMe device: " + (nvme == null ? "it did not record one (no nvme= in"
                    + " guest.properties: did it boot?)" : "/dev/ng0n1 never appeared (see its console)")
                    + "; every device test would skip there");
        }
        if (guest == Guest.STREAMS) {
            String streams = info.getProperty("write_streams", "none");
            if (!streams.matches("[1-9][0-9]*")) {
                failures.add(who + " reports no write streams (/sys/block/nvme0n1/queue/max_write_streams: " + streams
                        + "): it exists to run the tests that need them");
            }
        }
        long passed = results.stream().filter(r -> r.outcome() == Outcome.PASSED).count();
        String matching = filter.isEmpty() ? "" : " matching fdpblock.device.include=" + filter;
        if (results.isEmpty()) {
            String why = who + " reported no test results for " + guest.runs + matching;
            if (filter.isEmpty()) {
                failures.add(why + ": a device tier that runs nothing is a failure");
            } else {
                skipped = why;
            }
        } else if (passed == 0 && guest != Guest.STREAMS) {
            Result first = results.stream().filter(r -> r.outcome() == Outcome.SKIPPED).findFirst().orElse(null);
            if (first != null && results.stream().noneMatch(r -> r.outcome() == Outcome.FAILED)) {
                String why = who + ": every one of its " + results.size() + " results" + matching + " was skipped"
                        + " (the first, " + first.name() + ": " + first.message() + ")";
                if (filter.isEmpty()) {
                    failures.add(why + ": a device tier that skips everything tested nothing");
                } else {
                    skipped = why;
                }
            }
        }
        if (guest == Guest.STREAMS) {
            List<String> skips = results.stream().filter(r -> r.outcome() == Outcome.SKIPPED)
                    .map(r -> r.name() + " (" + r.message() + ")").toList();
            if (!skips.isEmpty()) {
                failures.add(who + " skipped " + skips.size() + " of " + results.size() + " tests; the tests that"
                        + " need write streams must run in this guest: " + String.join("; ", skips));
            }
        }
        return new GuestVerdict(List.copyOf(failures), failures.isEmpty() ? skipped : null);
    }
}
