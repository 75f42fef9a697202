package io.fdpblock.device;

import io.fdpblock.linux.DeviceInUseException;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** One device striped over several files, each a real io_uring device with its own ring. */
@Tag("host")
class StripedBlockDeviceTest {
    static final long U = 64 << 10;
    static final long MEMBER = 1 << 20;
    static final long BASE = 128 << 10;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;
    final Arena arena = Arena.ofShared();
    final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
        arena.close();
    }

    List<Path> files(int n, long size) throws IOException {
        List<Path> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(BlockDevices.createFile(dir.resolve("m" + i + ".img"), size));
        }
        return out;
    }

    static DeviceOptions uring() {
        return DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 20, 0);
    }

    /** Members wrapped so that their submissions can be seen; {@code ids} non-null: they act as FDP devices. */
    List<FaultInjectingDevice> members(List<Path> files, List<List<Integer>> ids) throws IOException {
        List<FaultInjectingDevice> out = new ArrayList<>();
        for (int i = 0; i < files.size(); i++) {
            FaultInjectingDevice d = new FaultInjectingDevice(BlockDevices.open(files.get(i), uring()));
            if (ids != null && ids.get(i) != null) {
                d.emulatePlacement(ids.get(i), 0);
            }
            out.add(d);
        }
        return out;
    }

    StripedBlockDevice striped(List<? extends BlockDevice> members) {
        StripedBlockDevice d = StripedBlockDevice.of(List.copyOf(members), U, uring());
        open.add(d);
        return d;
    }

    MemorySegment pattern(long size, int seed) {
        MemorySegment s = arena.allocate(size, 4096);
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
        return s;
    }

    static byte[] readFile(Path file, long offset, long length) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate((int) length);
            while (b.hasRemaining() && ch.read(b, offset + b.position()) > 0) {
            }
            return b.array();
        }
    }

    static byte[] bytes(MemorySegment s, long from, long length) {
        return s.asSlice(from, length).toArray(ValueLayout.JAVA_BYTE);
    }

    @Test
    void aWriteAcrossThreeUnitsLandsOnThreeFilesAndReadsBackWhole() throws Exception {
        List<Path> files = files(3, MEMBER);
        StripedBlockDevice d = striped(members(files, null));
        d.startDataAt(BASE);
        assertThat(d.sizeBytes()).isEqualTo(3 * MEMBER);

        MemorySegment meta = pattern(U, 1);
        MemorySegment data = pattern(3 * U, 2);
        IoBatch b = new IoBatch();
        b.write(0, meta);
        b.write(BASE, data);
        d.execute(b);
        assertThat(b.result(1)).isEqualTo(3 * U);

        assertThat(readFile(files.get(0), 0, U)).isEqualTo(bytes(meta, 0, U)); // metadata: member 0, same offset
        assertThat(readFile(files.get(0), BASE, U)).isEqualTo(bytes(data, 0, U));
        assertThat(readFile(files.get(1), 0, U)).isEqualTo(bytes(data, U, U));
        assertThat(readFile(files.get(2), 0, U)).isEqualTo(bytes(data, 2 * U, U));

        MemorySegment back = arena.allocate(3 * U, 4096);
        b.reset();
        b.read(BASE, back);
        d.execute(b);
        assertThat(bytes(back, 0, 3 * U)).isEqualTo(bytes(data, 0, 3 * U));
    }

    @Test
    void theOtherMembersUseMember0sMetadataBytesForTheLastUnits() throws Exception {
        List<Path> files = files(3, MEMBER);
        StripedBlockDevice d = striped(members(files, null));
        d.startDataAt(BASE);
        long a = (MEMBER - BASE) / U; // 14 units on member 0
        assertThat(d.map(BASE + (3 * a - 1) * U)).containsExactly(2, (a - 1) * U);
        assertThat(d.map(BASE + 3 * a * U)).containsExactly(1, a * U);
        assertThat(d.map(BASE + (3 * a + 1) * U)).containsExactly(2, a * U);
        long last = d.sizeBytes() - U; // the logical size holds exactly every member's units
        assertThat(d.map(last)).containsExactly(2, MEMBER - U);

        MemorySegment s = pattern(U, 3);
        IoBatch b = new IoBatch();
        b.write(last, s);
        d.execute(b);
        assertThat(readFile(files.get(2), MEMBER - U, U)).isEqualTo(bytes(s, 0, U));
        b.reset();
        b.write(d.sizeBytes(), s);
        assertThatThrownBy(() -> d.execute(b)).isInstanceOf(IOException.class).hasMessageContaining("past the end");
    }

    @Test
    void beforeTheDataAreaIsNamedOnlyMember0IsReachableAtItsOwnOffsets() throws Exception {
        List<Path> files = files(2, MEMBER);
        StripedBlockDevice d = striped(members(files, null));
        MemorySegment s = pattern(U, 4);
        IoBatch b = new IoBatch();
        b.write(BASE, s);
        d.execute(b);
        assertThat(readFile(files.get(0), BASE, U)).isEqualTo(bytes(s, 0, U));
        b.reset();
        b.write(MEMBER, s);
        assertThatThrownBy(() -> d.execute(b)).hasMessageContaining("before the store named its data area");
        d.startDataAt(BASE);
        d.startDataAt(BASE); // the same again is fine
        assertThatThrownBy(() -> d.startDataAt(2 * BASE)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("already starts at " + BASE);
    }

    @Test
    void aDeallocateOfARunOfSlotsIsOneRangePerMember() throws Exception {
        List<FaultInjectingDevice> m = members(files(3, MEMBER), List.of(List.of(0), List.of(0), List.of(0)));
        StripedBlockDevice d = striped(m);
        d.startDataAt(BASE);
        IoBatch b = new IoBatch();
        b.deallocate(BASE + 3 * U, 6 * U); // units 3..8: each member twice, contiguous on it
        d.execute(b);
        assertThat(ranges(m.get(0))).containsExactly(List.of(BASE + U, 2 * U));
        assertThat(ranges(m.get(1))).containsExactly(List.of(U, 2 * U));
        assertThat(ranges(m.get(2))).containsExactly(List.of(U, 2 * U));
    }

    static List<List<Long>> ranges(FaultInjectingDevice d) {
        return d.deallocations().stream().map(r -> List.of(r[0], r[1])).toList();
    }

    @Test
    void aFlushReachesEveryMember() throws Exception {
        List<FaultInjectingDevice> m = members(files(3, MEMBER), null);
        StripedBlockDevice d = striped(m);
        d.flush();
        for (FaultInjectingDevice f : m) {
            assertThat(f.submissions()).singleElement().satisfies(s -> assertThat(s.offsets()).containsExactly(-1L));
        }
    }

    @Test
    void eachMemberWritesWithItsOwnPlacementIdAtTheSamePosition() throws Exception {
        List<FaultInjectingDevice> m = members(files(3, MEMBER),
                List.of(List.of(0, 1, 2, 3), List.of(10, 11, 12, 13), List.of(20, 21, 22)));
        StripedBlockDevice d = striped(m);
        d.startDataAt(BASE);
        assertThat(d.supportsPlacement()).isTrue();
        assertThat(d.placementIds()).containsExactly(0, 1, 2); // member 0's, as many as every member has
        IoBatch b = new IoBatch();
        b.write(BASE, pattern(3 * U, 5), PlacementId.of(2));
        d.execute(b);
        assertThat(m.get(0).submissions().getLast().placementIds()).containsExactly(2);
        assertThat(m.get(1).submissions().getLast().placementIds()).containsExactly(12);
        assertThat(m.get(2).submissions().getLast().placementIds()).containsExactly(22);

        b.reset();
        b.write(BASE, pattern(U, 6), PlacementId.of(3)); // member 2 has no fourth id
        m.forEach(FaultInjectingDevice::clearSubmissions);
        assertThatThrownBy(() -> d.execute(b)).hasMessageContaining("placement id 3").hasMessageContaining("[0, 1, 2]");
        m.forEach(f -> assertThat(f.submissions()).isEmpty());
    }

    @Test
    void aMemberWithoutPlacementIsNamed() throws Exception {
        List<Path> files = files(2, MEMBER);
        List<FaultInjectingDevice> m = members(files, Arrays.asList(List.of(0, 1), null));
        StripedBlockDevice d = striped(m);
        assertThat(d.supportsPlacement()).isFalse();
        assertThat(d.placementUnsupportedReason()).contains("member " + files.get(1));
    }

    @Test
    void aFailedPartFailsTheCallersOpOnlyOnceEveryPartCompleted() throws Exception {
        List<Path> files = files(3, MEMBER);
        List<FaultInjectingDevice> m = members(files, null);
        StripedBlockDevice d = striped(m);
        d.startDataAt(BASE);
        m.get(1).failNextCompletion();
        MemorySegment data = pattern(3 * U, 7);
        IoBatch b = new IoBatch();
        b.write(BASE, data);
        CompletableFuture<IoBatch> done = new CompletableFuture<>();
        d.submit(b, done::complete);
        done.get(10, TimeUnit.SECONDS);
        assertThat(b.failed(0)).isTrue();
        assertThat(b.failure(0)).hasMessageContaining(files.get(1).toString()).hasMessageContaining("injected");
        assertThat(b.buffersMayBeInUse()).isFalse();
        // the other parts were written, not abandoned
        assertThat(readFile(files.get(2), 0, U)).isEqualTo(bytes(data, 2 * U, U));
    }

    @Test
    void whenTheFirstPartCannotBeSubmittedNothingIsAndSubmitThrows() throws Exception {
        List<FaultInjectingDevice> m = members(files(3, MEMBER), null);
        StripedBlockDevice d = striped(m);
        d.startDataAt(BASE);
        m.get(0).failNextSubmit();
        IoBatch b = new IoBatch();
        b.write(BASE, pattern(3 * U, 8));
        assertThatThrownBy(() -> d.submit(b, x -> { })).hasMessageContaining("injected submission failure");
        assertThat(m.get(1).submissions()).isEmpty();
        assertThat(m.get(2).submissions()).isEmpty();
    }

    @Test
    void aLaterPartThatCannotBeSubmittedFailsItsOpsAndTheCallbackStillRunsOnce() throws Exception {
        List<FaultInjectingDevice> m = members(files(3, MEMBER), null);
        StripedBlockDevice d = striped(m);
        d.startDataAt(BASE);
        m.get(2).failNextSubmit();
        IoBatch b = new IoBatch();
        b.write(BASE, pattern(2 * U, 9)); // members 0 and 1
        b.write(BASE + 2 * U, pattern(U, 10)); // member 2
        AtomicInteger calls = new AtomicInteger();
        CompletableFuture<IoBatch> done = new CompletableFuture<>();
        d.submit(b, x -> {
            calls.incrementAndGet();
            done.complete(x);
        });
        done.get(10, TimeUnit.SECONDS);
        assertThat(calls).hasValue(1);
        assertThat(b.isComplete(0)).isTrue();
        assertThat(b.failure(1)).hasMessageContaining("injected submission failure");
    }

    @Test
    void openingOverAMemberInUseFailsNamingItAndReleasesTheOthers() throws Exception {
        List<Path> files = files(3, MEMBER);
        BlockDevice holder = BlockDevices.open(files.get(2), uring());
        open.add(holder);
        assertThatThrownBy(() -> StripedBlockDevice.open(files, uring(), U)).isInstanceOf(DeviceInUseException.class)
                .hasMessageContaining(files.get(2).toString());
        // the members opened before the failure were closed: their locks are free again
        BlockDevice again = BlockDevices.open(files.get(0), uring());
        open.add(again);
        open.add(BlockDevices.open(files.get(1), uring()));
    }

    @Test
    void membersOfDifferentSizesUseTheSmallestsUnits() throws Exception {
        List<Path> files = new ArrayList<>(files(1, MEMBER));
        files.add(BlockDevices.createFile(dir.resolve("big.img"), 2 * MEMBER + 4096));
        StripedBlockDevice d = StripedBlockDevice.open(files, uring(), U);
        open.add(d);
        assertThat(d.sizeBytes()).isEqualTo(2 * MEMBER);
    }
}
