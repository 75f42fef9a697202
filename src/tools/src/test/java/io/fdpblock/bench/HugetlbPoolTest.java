package io.fdpblock.bench;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** The hugetlb pages fio's like-for-like job takes, on stand-ins for /proc/meminfo and nr_hugepages. */
@Tag("unit")
class HugetlbPoolTest {
    @TempDir
    Path dir;

    private Path meminfo(long free, long reserved) throws IOException {
        return Files.writeString(dir.resolve("meminfo"), "MemTotal:       8000000 kB\nHugePages_Total:       "
                + free + "\nHugePages_Free:        " + free + "\nHugePages_Rsvd:        " + reserved
                + "\nHugePages_Surp:        0\nHugepagesize:       2048 kB\n");
    }

    private Path nrHugepages(long n) throws IOException {
        return Files.writeString(dir.resolve("nr_hugepages"), n + "\n");
    }

    @Test
    void pagesReservedForMappingsAreNotFree() throws IOException {
        HugetlbPool pool = new HugetlbPool(meminfo(10, 4), nrHugepages(10), true, Duration.ZERO);
        assertThat(pool.pages()).as("4 reserved: taken").isEqualTo(new HugetlbPool.Pages(6, 2L << 20, 4));
        assertThat(new HugetlbPool(dir.resolve("missing"), dir.resolve("missing-too"), true, Duration.ZERO).pages())
                .as("unreadable: none free").isEqualTo(new HugetlbPool.Pages(0, 2L << 20, 0));
    }

    @Test
    void enoughFreeTouchesNothing() throws IOException {
        Path nr = nrHugepages(12);
        try (HugetlbPool pool = new HugetlbPool(meminfo(12, 0), nr, true, Duration.ZERO)) {
            assertThat(pool.ensureFree(9)).isNull();
            assertThat(pool.reservation()).isNull();
            assertThat(pool.describe()).containsEntry("free_now", 12L).doesNotContainKey("nr_hugepages_before");
        }
        assertThat(Files.readString(nr)).isEqualTo("12\n");
    }

    @Test
    void withoutRootItSaysHowManyAreMissingAndTheCommandThatReservesThem() throws IOException {
        Path nr = nrHugepages(2);
        try (HugetlbPool pool = new HugetlbPool(meminfo(2, 0), nr, false, Duration.ZERO)) {
            String why = pool.ensureFree(9);
            assertThat(why).contains("9 hugetlb pages of 2048 KiB needed, 2 free", "runs as root",
                    "echo 9 > " + nr);
            assertThat(pool.describe()).containsEntry("root", false).containsEntry("not_reserved", why);
        }
        assertThat(Files.readString(nr)).as("never written").isEqualTo("2\n");
    }

    @Test
    void asRootItRaisesNrHugepagesByThePagesMissingAndSetsItBackOnClose() throws IOException {
        Path nr = nrHugepages(3);
        // the stand-in meminfo does not change when nr_hugepages does: the kernel "made" none
        HugetlbPool pool = new HugetlbPool(meminfo(3, 1), nr, true, Duration.ZERO);
        String why = pool.ensureFree(9);
        assertThat(Files.readString(nr)).as("3 + (9 - 2 free), then once more from what it reads: 10 + 7")
                .isEqualTo("17\n");
        assertThat(why).contains("9 hugetlb pages of 2048 KiB needed, 2 free", "raised from 3 to 17",
                "the kernel made only 2 free");
        assertThat(pool.reservation()).contains("raised from 3 to 17");
        assertThat(pool.describe()).containsEntry("nr_hugepages_before", 3L).containsEntry("nr_hugepages_raised_to", 17L);
        // again (a later round): raised from what nr_hugepages reads now (the kernel's reads back the pages it
        // made; the stand-in what was written), and still given back to the first value
        pool.ensureFree(9);
        assertThat(Files.readString(nr)).isEqualTo("31\n");
        pool.close();
        assertThat(Files.readString(nr)).isEqualTo("3\n");
        assertThat(pool.reservation()).isNull();
        Files.writeString(nr, "5\n");
        pool.close(); // nothing left to give back
        assertThat(Files.readString(nr)).isEqualTo("5\n");
    }

    @Test
    void pagesOfAJobThatJustEndedAreWaitedForNotReservedAgain() throws Exception {
        Path nr = nrHugepages(10);
        // right after a job on huge pages exits, its 8 pages are still taken; they come back a moment later
        Path info = Files.writeString(dir.resolve("meminfo"), "HugePages_Total:      10\nHugePages_Free:        2\n"
                + "HugePages_Rsvd:        0\nHugepagesize:       2048 kB\n");
        Thread comesBack = Thread.ofPlatform().start(() -> {
            try {
                Thread.sleep(200);
                Files.writeString(dir.resolve("meminfo.new"), "HugePages_Total:      10\nHugePages_Free:       10\n"
                        + "HugePages_Rsvd:        0\nHugepagesize:       2048 kB\n");
                Files.move(dir.resolve("meminfo.new"), info, StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        try (HugetlbPool pool = new HugetlbPool(info, nr, true, Duration.ofSeconds(30))) {
            assertThat(pool.ensureFree(10)).isNull();
            assertThat(pool.reservation()).as("nothing raised").isNull();
        }
        comesBack.join();
        assertThat(Files.readString(nr)).isEqualTo("10\n");
    }

    @Test
    @Timeout(60) // a wait of the settle time would hang here
    void aShortfallWithNoPageTakenIsNotWaitedFor() throws IOException {
        Path nr = nrHugepages(2);
        try (HugetlbPool pool = new HugetlbPool(meminfo(2, 0), nr, false, Duration.ofHours(1))) {
            assertThat(pool.ensureFree(9)).contains("9 hugetlb pages of 2048 KiB needed, 2 free");
        }
    }
}
