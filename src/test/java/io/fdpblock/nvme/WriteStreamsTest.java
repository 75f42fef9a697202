package io.fdpblock.nvme;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Write-stream discovery against a fake sysfs tree (the layout of a 6.12 and of a 7.x kernel, a partition,
 * non-NVMe disks) and the placement-id-to-stream map from RUH Status, without a device. The device tier
 * checks the same against the emulated FDP namespace.
 */
@Tag("unit")
class WriteStreamsTest {
    private static final WriteStreams.FdpDiagnosis UNASKED = g -> {
        throw new AssertionError("the namespace must not be asked here (" + g + ")");
    };

    @TempDir
    Path sys;

    /** dev/block/MAJ:MIN -> devices/.../name, as sysfs links them; queue files only when given. */
    private Path blockDevice(String devNumber, String relative, Long maxStreams, Long granularity) throws IOException {
        Path node = Files.createDirectories(sys.resolve("devices/virtual/nvme-subsystem/nvme-subsys0").resolve(relative));
        Path queue = Files.createDirectories(node.resolve("queue"));
        Files.writeString(queue.resolve("logical_block_size"), "4096\n");
        if (maxStreams != null) {
            Files.writeString(queue.resolve("max_write_streams"), maxStreams + "\n");
        }
        if (granularity != null) {
            Files.writeString(queue.resolve("write_stream_granularity"), granularity + "\n");
        }
        Path link = Files.createDirectories(sys.resolve("dev/block")).resolve(devNumber);
        Files.createSymbolicLink(link, link.getParent().relativize(node));
        return node;
    }

    private WriteStreams.Probe probe(String devNumber, String kernel, WriteStreams.FdpDiagnosis d) {
        return WriteStreams.probeBlock(Path.of("/dev/nvme0n1"), sys, kernel, devNumber, d);
    }

    @Test
    void aSevenKernelsNamespaceWithStreamsIsAvailableWithItsLimits() throws IOException {
        blockDevice("259:1", "nvme0n1", 8L, 8388608L);
        WriteStreams.Probe p = probe("259:1", "7.3.4+deb13-amd64", UNASKED);
        assertThat(p.available()).as(p.describe()).isTrue();
        assertThat(p.blockName()).isEqualTo("nvme0n1");
        assertThat(p.maxStreams()).isEqualTo(8);
        assertThat(p.granularityBytes()).isEqualTo(8388608L);
        assertThat(p.describe()).isEqualTo("nvme0n1: 8 write streams, granularity 8388608 bytes (kernel 7.3.4+deb13-amd64)");
    }

    @Test
    void aKernelOlderThan616IsNamedWithTheVersionItNeeds() throws IOException {
        blockDevice("259:1", "nvme0n1", null, null); // 6.12: no such attribute at all
        WriteStreams.Probe p = probe("259:1", "6.12.48+deb12-amd64", UNASKED);
        assertThat(p.available()).isFalse();
        assertThat(p.unavailable()).contains("kernel 6.12.48+deb12-amd64 has no block-layer write streams")
                .contains("Linux >= 6.16").contains("uring_cmd");
        assertThat(p.maxStreams()).isZero();
    }

    @Test
    void zeroStreamsOnAnNvmeNamespaceAsksTheNamespaceWhyAndSaysIt() throws IOException {
        blockDevice("259:1", "nvme0n1", 0L, 0L);
        List<Path> asked = new ArrayList<>();
        WriteStreams.Probe p = probe("259:1", "7.3.4", g -> {
            asked.add(g);
            return "FDP is off on the namespace's endurance group 1";
        });
        assertThat(asked).containsExactly(Path.of("/dev/ng0n1"));
        assertThat(p.available()).isFalse();
        assertThat(p.unavailable()).isEqualTo("queue/max_write_streams of nvme0n1 is 0 (kernel 7.3.4): FDP is off on the"
                + " namespace's endurance group 1");
    }

    @Test
    void aNonNvmeDiskWithZeroStreamsIsNotAskedAndOneWithStreamsCannotBeMapped() throws IOException {
        blockDevice("254:0", "vda", 0L, 0L);
        WriteStreams.Probe vda = probe("254:0", "6.18.4", UNASKED);
        assertThat(vda.unavailable()).contains("max_write_streams of vda is 0").contains("not an NVMe namespace");
        blockDevice("8:16", "sdb", 4L, 1L << 20);
        WriteStreams.Probe sdb = probe("8:16", "6.18.4", UNASKED);
        assertThat(sdb.available()).isFalse();
        assertThat(sdb.unavailable()).contains("sdb has 4 write streams but is not an NVMe namespace");
    }

    @Test
    void aPartitionIsRefusedNamingTheWholeNamespace() throws IOException {
        Path part = blockDevice("259:2", "nvme0n1/nvme0n1p1", null, null);
        Files.writeString(part.resolve("partition"), "1\n");
        Files.delete(part.resolve("queue/logical_block_size"));
        Files.delete(part.resolve("queue"));
        WriteStreams.Probe p = probe("259:2", "7.3.4", UNASKED);
        assertThat(p.unavailable()).contains("is a partition (nvme0n1p1) of nvme0n1").contains("use /dev/nvme0n1");
    }

    @Test
    void aDeviceNumberWithoutSysfsEntryIsSaid() {
        assertThat(probe("259:9", "7.3.4", UNASKED).unavailable()).contains("259:9").contains("has no entry");
    }

    @Test
    void filesCharacterDevicesAndMissingPathsAreNamedBeforeSysfsIsRead() throws IOException {
        Path file = Files.writeString(sys.resolve("dev.img"), "x");
        assertThat(WriteStreams.probe(file, sys, "7.3.4", UNASKED).unavailable()).contains("is a regular file")
                .contains("/dev/nvmeXnY");
        assertThat(WriteStreams.probe(Path.of("/dev/null"), sys, "7.3.4", UNASKED).unavailable())
                .contains("is a character device").contains("uring_cmd");
        assertThat(WriteStreams.probe(sys.resolve("missing"), sys, "7.3.4", UNASKED).unavailable())
                .contains("does not exist");
    }

    @Test
    void kernelReleasesCompareByMajorAndMinor() {
        assertThat(WriteStreams.atLeast("6.12.48+deb12-amd64", 6, 16)).isFalse();
        assertThat(WriteStreams.atLeast("6.15.11", 6, 16)).isFalse();
        assertThat(WriteStreams.atLeast("6.16.0-rc1", 6, 16)).isTrue();
        assertThat(WriteStreams.atLeast("6.18.44-fc-v782", 6, 16)).isTrue();
        assertThat(WriteStreams.atLeast("7.3.4+deb13-amd64", 6, 16)).isTrue();
        assertThat(WriteStreams.atLeast("5.19.17", 6, 16)).isFalse();
        assertThat(WriteStreams.atLeast("unknown", 6, 16)).isFalse();
    }

    @Test
    void deviceNumbersDecodeAsGlibcDoes() {
        assertThat(WriteStreams.major(65024)).isEqualTo(254);
        assertThat(WriteStreams.minor(65024)).isZero();
        assertThat(WriteStreams.major(259L << 8 | 1)).isEqualTo(259);
        assertThat(WriteStreams.minor(259L << 8 | 1)).isEqualTo(1);
        long dev = (0x12345L & 0xfff) << 8 | (0x12345L & ~0xfffL) << 32 | (0x6789AL & 0xff) | (0x6789AL & ~0xffL) << 12;
        assertThat(WriteStreams.major(dev)).isEqualTo(0x12345);
        assertThat(WriteStreams.minor(dev)).isEqualTo(0x6789A);
    }

    @Test
    void theTwoNodesOfANamespaceNameEachOther() {
        assertThat(WriteStreams.genericDevice("nvme2n3")).isEqualTo(Path.of("/dev/ng2n3"));
        assertThat(WriteStreams.counterpart(Path.of("/dev/ng0n1"))).isEqualTo(Path.of("/dev/nvme0n1"));
        assertThat(WriteStreams.counterpart(Path.of("/dev/nvme10n2"))).isEqualTo(Path.of("/dev/ng10n2"));
        assertThat(WriteStreams.counterpart(Path.of("/dev/nvme0n1p1"))).isNull();
        assertThat(WriteStreams.counterpart(Path.of("/var/tmp/dev.img"))).isNull();
        assertThatThrownBy(() -> WriteStreams.genericDevice("vda")).hasMessageContaining("vda");
    }

    // ---- the map ----

    private static WriteStreams.Probe available(int max) {
        return new WriteStreams.Probe(Path.of("/dev/nvme0n1"), "7.3.4", "nvme0n1", max, 8388608L, null);
    }

    @Test
    void streamNIsTheNthIdOfRuhStatusWhateverTheIds() throws IOException {
        // RUH Status order, not id order: stream 1 places with 0x4003, stream 2 with 5, ...
        WriteStreams ws = WriteStreams.of(available(8), Path.of("/dev/ng0n1"), List.of(0x4003, 5, 2, 0));
        assertThat(ws.placementIds()).containsExactly(0x4003, 5, 2, 0);
        assertThat(ws.streamOf(0x4003)).isEqualTo(1);
        assertThat(ws.streamOf(5)).isEqualTo(2);
        assertThat(ws.streamOf(2)).isEqualTo(3);
        assertThat(ws.streamOf(0)).isEqualTo(4);
        assertThat(ws.streamOf(PlacementId.NONE_VALUE)).as("no placement id: no stream").isZero();
        assertThat(ws.streamOf(1)).as("an id RUH Status does not list").isEqualTo(-1);
        assertThat(ws.streamOf(0x4004)).isEqualTo(-1);
        assertThat(ws.streamOf(65535)).isEqualTo(-1);
        assertThat(ws.placementIdOf(3)).isEqualTo(2);
        assertThatThrownBy(() -> ws.placementIdOf(5)).hasMessageContaining("outside 1..4");
        assertThat(ws.describeMap()).isEqualTo("stream 1 -> placement id 16387, stream 2 -> placement id 5,"
                + " stream 3 -> placement id 2, stream 4 -> placement id 0");
        assertThat(ws.granularityBytes()).isEqualTo(8388608L);
        assertThat(ws.genericDevice()).isEqualTo(Path.of("/dev/ng0n1"));
    }

    @Test
    void idsBeyondTheKernelsStreamsAreNotReached() throws IOException {
        List<Integer> ten = IntStream.range(0, 10).boxed().toList();
        WriteStreams ws = WriteStreams.of(available(8), Path.of("/dev/ng0n1"), ten);
        assertThat(ws.placementIds()).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
        assertThat(ws.streamOf(7)).isEqualTo(8);
        assertThat(ws.streamOf(8)).isEqualTo(-1);
        assertThat(WriteStreams.of(available(300), Path.of("/dev/ng0n1"),
                IntStream.range(0, 300).boxed().toList()).placementIds()).as("the SQE byte reaches stream 255 at most")
                .hasSize(255);
    }

    @Test
    void anEmptyOrDuplicatedRuhStatusOrAnUnavailableProbeIsRefused() {
        assertThatThrownBy(() -> WriteStreams.of(available(8), Path.of("/dev/ng0n1"), List.of()))
                .isInstanceOf(IOException.class).hasMessageContaining("lists no placement id")
                .hasMessageContaining("FDP is off");
        assertThatThrownBy(() -> WriteStreams.of(available(8), Path.of("/dev/ng0n1"), List.of(1, 2, 1)))
                .isInstanceOf(IOException.class).hasMessageContaining("placement id 1 twice");
        WriteStreams.Probe none = new WriteStreams.Probe(Path.of("/dev/nvme0n1"), "6.12", "nvme0n1", 0, 0,
                "kernel 6.12 has no block-layer write streams");
        assertThatThrownBy(() -> WriteStreams.of(none, Path.of("/dev/ng0n1"), List.of(0, 1)))
                .isInstanceOf(IOException.class).hasMessage("kernel 6.12 has no block-layer write streams");
    }
}
