package io.fdpblock.bench;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

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
        HugetlbPool pool = new HugetlbPool(meminfo(10, 4), nrHugepages(10), true);
        assertThat(pool.pages()).isEqualTo(new HugetlbPool.Pages(6, 2L << 20));
        assertThat(new HugetlbPool(dir.resolve("missing"), dir.resolve("missing-too"), true).pages())
                .as("unreadable: none free").isEqualTo(new HugetlbPool.Pages(0, 2L << 20));
    }

    @Test
    void enoughFreeTouchesNothing() throws IOException {
        Path nr = nrHugepages(12);
        try (HugetlbPool pool = new HugetlbPool(meminfo(12, 0), nr, true)) {
            assertThat(pool.ensureFree(9)).isNull();
            assertThat(pool.reservation()).isNull();
            assertThat(pool.describe()).containsEntry("free_now", 12L).doesNotContainKey("nr_hugepages_before");
        }
        assertThat(Files.readString(nr)).isEqualTo("12\n");
    }

    @Test
    void withoutRootItSaysHowManyAreMissingAndTheCommandThatReservesThem() throws IOException {
        Path nr = nrHugepages(2);
        try (HugetlbPool pool = new HugetlbPool(meminfo(2, 0), nr, false)) {
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
        HugetlbPool pool = new HugetlbPool(meminfo(3, 1), nr, true);
        String why = pool.ensureFree(9);
        assertThat(Files.readString(nr)).as("3 + (9 - 2 free)").isEqualTo("10\n");
        assertThat(why).contains("9 hugetlb pages of 2048 KiB needed, 2 free", "raised from 3 to 10",
                "the kernel made only 2 free");
        assertThat(pool.reservation()).contains("raised from 3 to 10");
        assertThat(pool.describe()).containsEntry("nr_hugepages_before", 3L).containsEntry("nr_hugepages_raised_to", 10L);
        // again (a later round): raised from what nr_hugepages reads now (the kernel's reads back the pages it
        // made; the stand-in what was written), and still given back to the first value
        pool.ensureFree(9);
        assertThat(Files.readString(nr)).isEqualTo("17\n");
        pool.close();
        assertThat(Files.readString(nr)).isEqualTo("3\n");
        assertThat(pool.reservation()).isNull();
        Files.writeString(nr, "5\n");
        pool.close(); // nothing left to give back
        assertThat(Files.readString(nr)).isEqualTo("5\n");
    }
}
