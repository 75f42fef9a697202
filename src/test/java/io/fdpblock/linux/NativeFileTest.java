package io.fdpblock.linux;

import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("host")
class NativeFileTest {
    private static final int BLOCK = 4096;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private static byte[] pattern(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 13 + seed);
        }
        return b;
    }

    @Test
    void openingAMissingFileNamesErrnoAndPath() {
        Path missing = dir.resolve("no-such-file");
        assertThatThrownBy(() -> NativeFile.open(missing, false, false, false))
                .isInstanceOf(Errno.NativeIOException.class)
                .hasMessageContaining("ENOENT")
                .hasMessageContaining(missing.toString())
                .hasMessageContaining("O_RDONLY")
                .satisfies(e -> {
                    Errno.NativeIOException n = (Errno.NativeIOException) e;
                    assertThat(n.errno()).isEqualTo(2);
                    assertThat(n.errnoName()).isEqualTo("ENOENT");
                    assertThat(n.call()).isEqualTo("open(" + missing + ", O_RDONLY)");
                });
        assertThat(missing).doesNotExist();
    }

    @Test
    void createMakesARegularFile() throws IOException {
        Path path = dir.resolve("created");
        try (NativeFile file = NativeFile.open(path, true, true, false)) {
            assertThat(file.kind()).isEqualTo(NativeFile.Kind.REGULAR);
            assertThat(file.size()).isZero();
            assertThat(file.isWritable()).isTrue();
            assertThat(file.isDirect()).isFalse();
            assertThat(file.path()).isEqualTo(path);
            assertThat(file.fd()).isGreaterThan(2);
        }
        assertThat(path).isRegularFile();
    }

    @Test
    void sizeOfAnExistingFile() throws IOException {
        Path path = dir.resolve("sized");
        Files.write(path, new byte[12345]);
        try (NativeFile file = NativeFile.open(path, false, false, false)) {
            assertThat(file.size()).isEqualTo(12345);
            assertThat(file.kind()).isEqualTo(NativeFile.Kind.REGULAR);
            assertThat(file.isWritable()).isFalse();
        }
    }

    @Test
    void kindsOfOtherFiles() throws IOException {
        try (NativeFile devNull = NativeFile.open(Path.of("/dev/null"), false, false, false)) {
            assertThat(devNull.kind()).isEqualTo(NativeFile.Kind.CHAR_DEVICE);
        }
        try (NativeFile directory = NativeFile.open(dir, false, false, false)) {
            assertThat(directory.kind()).isEqualTo(NativeFile.Kind.OTHER);
        }
    }

    @Test
    void pwriteThenPreadRoundTrip() throws IOException {
        Path path = dir.resolve("rw");
        byte[] data = pattern(3000, 1);
        try (NativeFile file = NativeFile.open(path, true, true, false);
             Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocateFrom(ValueLayout.JAVA_BYTE, data);
            assertThat(file.pwrite(out, 100)).isEqualTo(3000);
            assertThat(file.size()).isEqualTo(3100);

            MemorySegment in = arena.allocate(3000);
            assertThat(file.pread(in, 100)).isEqualTo(3000);
            assertThat(in.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(data);
            file.fdatasync();
        }
        byte[] onDisk = Files.readAllBytes(path);
        assertThat(onDisk).hasSize(3100);
        assertThat(Arrays.copyOfRange(onDisk, 0, 100)).containsOnly((byte) 0);
        assertThat(Arrays.copyOfRange(onDisk, 100, 3100)).isEqualTo(data);
    }

    @Test
    void readAtEndOfFileIsShort() throws IOException {
        Path path = dir.resolve("short");
        byte[] data = pattern(10_000, 7);
        Files.write(path, data);
        try (NativeFile file = NativeFile.open(path, false, false, false);
             Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(BLOCK);
            assertThat(file.pread(in, 8192)).isEqualTo(10_000 - 8192);
            assertThat(in.asSlice(0, 10_000 - 8192).toArray(ValueLayout.JAVA_BYTE))
                    .isEqualTo(Arrays.copyOfRange(data, 8192, 10_000));
            assertThat(file.pread(in, 10_000)).isZero();
            assertThat(file.pread(in, 50_000)).isZero();
        }
    }

    @Test
    void directIoRoundTripWithAlignedBuffers() throws IOException {
        try (NativeFile file = NativeFile.open(dir.resolve("direct"), true, true, true);
             Arena arena = Arena.ofConfined()) {
            assertThat(file.isDirect()).isTrue();
            int block = file.logicalBlockSize();
            assertThat(Integer.bitCount(block)).isEqualTo(1);
            assertThat(block).isBetween(512, 65536);

            MemorySegment out = arena.allocate(2 * BLOCK, BLOCK);
            out.copyFrom(MemorySegment.ofArray(pattern(2 * BLOCK, 3)));
            assertThat(file.pwrite(out, BLOCK)).isEqualTo(2 * BLOCK);
            MemorySegment in = arena.allocate(2 * BLOCK, BLOCK);
            assertThat(file.pread(in, BLOCK)).isEqualTo(2 * BLOCK);
            assertThat(in.mismatch(out)).isEqualTo(-1);
        }
    }

    @Test
    void misalignedDirectWriteFailsWithEinvalAndAnAlignmentHint() throws IOException {
        Path path = dir.resolve("misaligned");
        try (NativeFile file = NativeFile.open(path, true, true, true);
             Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(2 * BLOCK, BLOCK);
            MemorySegment misaligned = buf.asSlice(1, BLOCK);
            assertThatThrownBy(() -> file.pwrite(misaligned, 0))
                    .isInstanceOf(Errno.NativeIOException.class)
                    .hasMessageContaining("pwrite(" + path)
                    .hasMessageContaining("EINVAL")
                    .hasMessageContaining("aligned")
                    .satisfies(e -> assertThat(((Errno.NativeIOException) e).errno()).isEqualTo(Errno.EINVAL));
            assertThatThrownBy(() -> file.pwrite(buf.asSlice(0, BLOCK), 1))
                    .isInstanceOf(Errno.NativeIOException.class)
                    .hasMessageContaining("offset=1")
                    .hasMessageContaining("aligned");
            assertThat(file.size()).isZero();
        }
    }

    @Test
    void writingAReadOnlyFileFailsWithEbadf() throws IOException {
        Path path = dir.resolve("ro");
        Files.write(path, new byte[10]);
        try (NativeFile file = NativeFile.open(path, false, false, false);
             Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(10);
            assertThatThrownBy(() -> file.pwrite(buf, 0))
                    .isInstanceOf(Errno.NativeIOException.class)
                    .hasMessageContaining("EBADF")
                    .satisfies(e -> assertThat(((Errno.NativeIOException) e).errno()).isEqualTo(Errno.EBADF))
                    .extracting(Throwable::getMessage).asString().doesNotContain("aligned");
        }
    }

    @Test
    void closeTwiceIsHarmless() throws IOException {
        NativeFile file = NativeFile.open(dir.resolve("twice"), true, true, false);
        file.close();
        file.close();
    }
}
