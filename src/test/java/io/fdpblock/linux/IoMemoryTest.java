package io.fdpblock.linux;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

@Tag("host")
class IoMemoryTest {
    private static final long MIB = 1 << 20;

    @Test
    void largeBuffersAreZeroedHugePageAlignedMappingsOfTheRoundedSize() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = IoMemory.allocate(arena, 5 * MIB);
            assertThat(m.byteSize()).isEqualTo(5 * MIB);
            assertThat(m.address() % IoMemory.HUGE_PAGE).isZero();
            for (long o = 0; o < m.byteSize(); o += 8) {
                if (m.get(ValueLayout.JAVA_LONG, o) != 0) {
                    throw new AssertionError("byte " + o + " of a new I/O buffer is not zero");
                }
            }
            m.set(ValueLayout.JAVA_LONG, 5 * MIB - 8, 0x1234_5678_9abc_def0L);
            assertThat(m.get(ValueLayout.JAVA_LONG, 5 * MIB - 8)).isEqualTo(0x1234_5678_9abc_def0L);
            Vma vma = vmaContaining(m.address());
            // the head and tail mapped for the alignment were given back: only [base, base + 6 MiB) stays
            assertThat(vma.start()).isEqualTo(m.address());
            assertThat(vma.end()).isEqualTo(m.address() + 6 * MIB);
        }
    }

    @Test
    void theKernelIsAskedForHugePagesWhereTheyAreOn() throws IOException {
        assumeThat(thpSetting()).as("transparent huge pages are off on this machine").isNotEqualTo("never");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = IoMemory.allocate(arena, 4 * MIB);
            assertThat(vmaContaining(m.address()).flags()).as("VmFlags of the mapping").contains("hg");
            assertThat(IoMemory.hugePages()).startsWith("transparent huge pages (");
        }
    }

    @Test
    void closingTheArenaUnmapsTheBuffer() throws IOException {
        long before = mappedBytes();
        for (int i = 0; i < 100; i++) {
            try (Arena arena = Arena.ofConfined()) {
                IoMemory.allocate(arena, 8 * MIB).set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
            }
        }
        // 1 GiB was mapped in all (8 MiB and the 2 MiB for alignment, 100 times): a leak would leave it mapped
        assertThat(mappedBytes() - before).isLessThan(256 * MIB);
    }

    @Test
    void smallBuffersComeFromTheArenaWithTheAlignmentAsked() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = IoMemory.allocate(arena, 64 * 1024, 8192);
            assertThat(m.byteSize()).isEqualTo(64 * 1024);
            assertThat(m.address() % 8192).isZero();
        }
    }

    @Test
    void badSizesAndAlignmentsAreRefusedWithTheValue() {
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> IoMemory.allocate(arena, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("0 bytes");
            assertThatThrownBy(() -> IoMemory.allocate(arena, MIB, 3000)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("3000");
            assertThatThrownBy(() -> IoMemory.allocate(arena, MIB, 4 * MIB))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4194304");
        }
    }

    private record Vma(long start, long end, String flags) {}

    private static Vma vmaContaining(long address) throws IOException {
        List<String> lines = Files.readAllLines(Path.of("/proc/self/smaps"));
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i);
            int dash = l.indexOf('-');
            int space = l.indexOf(' ');
            if (dash <= 0 || space < dash || !l.substring(0, dash).matches("[0-9a-f]+")) {
                continue;
            }
            long start = Long.parseUnsignedLong(l.substring(0, dash), 16);
            long end = Long.parseUnsignedLong(l.substring(dash + 1, space), 16);
            if (address >= start && address < end) {
                for (int j = i + 1; j < lines.size(); j++) {
                    if (lines.get(j).startsWith("VmFlags:")) {
                        return new Vma(start, end, lines.get(j).substring("VmFlags:".length()).trim());
                    }
                }
            }
        }
        throw new AssertionError("no mapping of this process contains 0x" + Long.toHexString(address));
    }

    /** VmSize of this process: every byte it has mapped. */
    private static long mappedBytes() throws IOException {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmSize:")) {
                return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new AssertionError("no VmSize in /proc/self/status");
    }

    private static String thpSetting() throws IOException {
        String s = Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled"));
        return s.substring(s.indexOf('[') + 1, s.indexOf(']'));
    }
}
