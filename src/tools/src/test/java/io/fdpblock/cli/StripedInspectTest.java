package io.fdpblock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fdpblock.core.PutOutcome;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;
import io.fdpblock.testing.DiskTempDirFactory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code fdpblock inspect} of a store over several devices ({@code device_paths}): given all of them, in the
 * store's order, it checks every slot header on the member that holds it; given the first alone, the slots
 * of the other members do not check out (which is why it takes them all).
 */
@Tag("host")
class StripedInspectTest {
    private static final long SLOT = 64 << 10;
    private static final long FILE = 4 << 20;
    private static final int KEYS = 12;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.MetaFormat.class)
    void everySlotHeaderIsCheckedOnItsMember(RawBlockCoreConfig.MetaFormat format) throws Exception {
        List<Path> files = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            files.add(BlockDevices.createFile(dir.resolve("member" + i + ".img"), FILE));
        }
        RawBlockCoreConfig.Builder b = RawBlockCoreConfig.builder(files.stream().map(Path::toString).toList(), SLOT)
                .metaFormat(format).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
        if (format == RawBlockCoreConfig.MetaFormat.LMCACHE_V1) {
            b.metaTotalBytes(1 << 20);
        }
        try (RawBlockCore core = RawBlockCore.open(b.build()); Arena arena = Arena.ofShared()) {
            List<PutRequest> puts = new ArrayList<>();
            for (int i = 0; i < KEYS; i++) {
                MemorySegment p = arena.allocate(8192, 4096);
                p.fill((byte) i);
                puts.add(PutRequest.of(KeyCodec.encode("org/m", 1, new byte[] {(byte) i}, "", 0), p));
            }
            assertThat(core.putWithOutcome(puts)).containsOnly(PutOutcome.STORED);
            core.checkpointNow();
        }
        String[] all = files.stream().map(Path::toString).toArray(String[]::new);

        CliRunner.Outcome striped = CliRunner.run(concat("inspect", all));
        assertThat(striped.code()).as(striped.out() + striped.err()).isZero();
        assertThat(striped.out()).contains("slot headers: " + KEYS + " checked, 0 disagree");

        CliRunner.Outcome firstAlone = CliRunner.run("inspect", all[0]);
        assertThat(firstAlone.code()).as("the other members' slots are not on the first device").isEqualTo(1);

        // a damaged slot header on the third member is found there (its label, the first block, intact)
        try (FileChannel ch = FileChannel.open(files.get(2), StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate((int) (FILE - SLOT)), 4096);
        }
        CliRunner.Outcome damaged = CliRunner.run(concat("inspect", all));
        assertThat(damaged.code()).isEqualTo(1);
        assertThat(damaged.out()).containsPattern("slot headers: " + KEYS + " checked, [1-9]\\d* disagree");
    }

    private List<Path> store(String prefix, int members, int keys) throws Exception {
        List<Path> files = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            files.add(BlockDevices.createFile(dir.resolve(prefix + i + ".img"), FILE));
        }
        RawBlockCoreConfig.Builder b = RawBlockCoreConfig.builder(files.stream().map(Path::toString).toList(), SLOT)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
        try (RawBlockCore core = RawBlockCore.open(b.build()); Arena arena = Arena.ofShared()) {
            List<PutRequest> puts = new ArrayList<>();
            for (int i = 0; i < keys; i++) {
                MemorySegment p = arena.allocate(8192, 4096);
                p.fill((byte) i);
                puts.add(PutRequest.of(KeyCodec.encode("org/m", 1, new byte[] {(byte) i}, prefix, 0), p));
            }
            assertThat(core.putWithOutcome(puts)).containsOnly(PutOutcome.STORED);
        }
        return files;
    }

    /** A member of another store, a blank one, or the right ones out of order: reported by name, exit 1. */
    @Test
    void membersThatAreNotTheStoresInItsOrderAreReported() throws Exception {
        List<Path> one = store("one", 2, 30);
        List<Path> other = store("other", 2, 30);
        Path blank = BlockDevices.createFile(dir.resolve("blank.img"), FILE);

        CliRunner.Outcome ok = CliRunner.run("inspect", one.get(0).toString(), one.get(1).toString());
        assertThat(ok.code()).as(ok.out() + ok.err()).isZero();
        assertThat(ok.out()).contains("slot headers: 30 checked, 0 disagree");

        CliRunner.Outcome foreign = CliRunner.run("inspect", one.get(0).toString(), other.get(1).toString());
        assertThat(foreign.code()).as(foreign.out() + foreign.err()).isEqualTo(1);
        assertThat(foreign.out()).contains("not the members of one striped store in its order")
                .contains("member 1 (" + other.get(1) + "): holds member 1 of 2 of striped store ")
                .doesNotContain("0 disagree");

        CliRunner.Outcome swapped = CliRunner.run("inspect", one.get(1).toString(), one.get(0).toString());
        assertThat(swapped.code()).isEqualTo(1);
        assertThat(swapped.out()).contains("in the store's order they are [" + one.get(0) + ", " + one.get(1) + "]");

        CliRunner.Outcome replaced = CliRunner.run("inspect", one.get(0).toString(), blank.toString());
        assertThat(replaced.code()).isEqualTo(1);
        assertThat(replaced.out()).contains("member 1 (" + blank + "): blank");

        CliRunner.Outcome alone = CliRunner.run("inspect", one.get(1).toString());
        assertThat(alone.code()).isEqualTo(1);
        assertThat(alone.out()).contains(one.get(1) + " is member 1 of 2 of striped store ")
                .contains("give all 2 members");
    }

    private static String[] concat(String first, String[] rest) {
        String[] out = new String[rest.length + 1];
        out[0] = first;
        System.arraycopy(rest, 0, out, 1, rest.length);
        return out;
    }
}
