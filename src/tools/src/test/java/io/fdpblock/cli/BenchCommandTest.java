package io.fdpblock.cli;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code bench --device}: one namespace's generic and block device, given once or twice. */
@Tag("unit")
class BenchCommandTest {
    private static final Path NG = Path.of("/dev/ng0n1");
    private static final Path NVME = Path.of("/dev/nvme0n1");

    @Test
    void eitherNodeGivesTheOtherAndBothAreTakenInAnyOrder() {
        assertThat(BenchCommand.namespaceNodes(List.of(NG))).containsExactly(NG, NVME);
        assertThat(BenchCommand.namespaceNodes(List.of(NVME))).containsExactly(NG, NVME);
        assertThat(BenchCommand.namespaceNodes(List.of(NVME, NG))).containsExactly(NG, NVME);
        Path byId = Path.of("/dev/disk/by-id/nvme-fdp"); // named otherwise: taken as the generic device, nothing derived
        assertThat(BenchCommand.namespaceNodes(List.of(byId))).containsExactly(byId, null);
        assertThat(BenchCommand.namespaceNodes(null)).containsExactly(null, null);
    }

    @Test
    void twoDevicesOfTheSameKindAreRefused() {
        assertThatThrownBy(() -> BenchCommand.namespaceNodes(List.of(NVME, Path.of("/dev/nvme1n1"))))
                .hasMessageContaining("a block device was given already (/dev/nvme0n1)");
        assertThatThrownBy(() -> BenchCommand.namespaceNodes(List.of(NG, Path.of("/dev/ng1n1"))))
                .hasMessageContaining("a generic device was given already (/dev/ng0n1)");
    }
}
