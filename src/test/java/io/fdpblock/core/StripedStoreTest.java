package io.fdpblock.core;

import io.fdpblock.core.tools.Inspector;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.MemberLabel;
import io.fdpblock.device.StripedBlockDevice;
import io.fdpblock.linux.DeviceInUseException;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import java.util.Arrays;

/** One store over several files (device_paths), real io_uring on each. */
@Tag("host")
class StripedStoreTest {
    static final long SLOT = 64 << 10;
    static final long FILE = 4 << 20;
    /** Each member's first block is its label; its share of the store follows, in whole slots. */
    static final long LABEL = 4096;
    static final long SHARE = (FILE - LABEL) / SLOT * SLOT;

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

    List<Path> files(int n) throws IOException {
        List<Path> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(BlockDevices.createFile(dir.resolve("member" + i + ".img"), FILE));
        }
        return out;
    }

    static RawBlockCoreConfig.Builder config(List<Path> files, RawBlockCoreConfig.MetaFormat format) {
        RawBlockCoreConfig.Builder b = RawBlockCoreConfig.builder(files.stream().map(Path::toString).toList(), SLOT)
                .metaFormat(format).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
        return format == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? b.metaTotalBytes(1 << 20) : b;
    }

    RawBlockCore track(RawBlockCore core) {
        open.add(core);
        return core;
    }

    MemorySegment payload(String key, long size) {
        MemorySegment seg = arena.allocate(size, 4096);
        SplittableRandom r = new SplittableRandom(key.hashCode());
        for (long i = 0; i < size; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
        return seg;
    }

    static byte[] readFile(Path file, long offset, long length) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate((int) length);
            while (b.hasRemaining() && ch.read(b, offset + b.position()) > 0) {
            }
            return b.array();
        }
    }

    static int slotOf(RawBlockCore core, String key) {
        core.lock.lock();
        try {
            return core.index.get(new StoreKey(key)).slot();
        } finally {
            core.lock.unlock();
        }
    }

    /** Where the layout puts a slot (the rule, computed here, not asked of the device): {member, file offset}. */
    static long[] expectedPlace(RawBlockCore core, int slot, int n) {
        long a = (SHARE - core.dataBase) / SLOT; // slots member 0 holds after the metadata area
        assertThat((long) slot).as("these tests use the evenly striped slots").isLessThan(n * a);
        int m = slot % n;
        return new long[] {m, LABEL + (m == 0 ? core.dataBase : 0) + (long) (slot / n) * SLOT};
    }

    Map<String, MemorySegment> putKeys(RawBlockCore core, int count, int from) throws IOException {
        Map<String, MemorySegment> out = new LinkedHashMap<>();
        List<PutRequest> puts = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            String key = CoreFixture.key(i);
            MemorySegment p = payload(key, 4096L * (1 + i % 12) + 100 * (i % 40));
            out.put(key, p);
            puts.add(PutRequest.of(key, p));
        }
        assertThat(core.putWithOutcome(puts)).containsOnly(PutOutcome.STORED);
        return out;
    }

    void assertLoads(RawBlockCore core, Map<String, MemorySegment> keys) {
        List<LoadRequest> loads = new ArrayList<>();
        List<MemorySegment> dest = new ArrayList<>();
        for (var e : keys.entrySet()) {
            MemorySegment d = arena.allocate(SLOT, 4096);
            dest.add(d);
            loads.add(new LoadRequest(e.getKey(), d));
        }
        assertThat(core.load(loads)).containsOnly(true);
        int i = 0;
        for (var e : keys.entrySet()) {
            long size = e.getValue().byteSize();
            assertThat(dest.get(i++).asSlice(0, size).toArray(ValueLayout.JAVA_BYTE)).as(e.getKey())
                    .isEqualTo(e.getValue().toArray(ValueLayout.JAVA_BYTE));
        }
    }

    static Stream<Arguments> layouts() {
        return Stream.of(Arguments.of(RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, 2),
                Arguments.of(RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, 4),
                Arguments.of(RawBlockCoreConfig.MetaFormat.LMCACHE_V1, 3));
    }

    @ParameterizedTest
    @MethodSource("layouts")
    void payloadsLandInTheirMembersFilesAndAReopenRecoversEveryKey(RawBlockCoreConfig.MetaFormat format, int n)
            throws Exception {
        List<Path> files = files(n);
        RawBlockCoreConfig config = config(files, format).build();
        RawBlockCore core = RawBlockCore.open(config);
        Map<String, MemorySegment> keys;
        try {
            assertThat(core.device()).isInstanceOf(StripedBlockDevice.class);
            assertThat(core.dataBase).isBetween(1L << 20, SHARE - SLOT);
            long a = (SHARE - core.dataBase) / SLOT;
            assertThat(core.maxSlots()).isEqualTo(a + (n - 1) * (SHARE / SLOT)); // every member's share is used
            keys = putKeys(core, 3 * n, 0);
            Set<Long> membersUsed = new HashSet<>();
            for (var e : keys.entrySet()) {
                long[] place = expectedPlace(core, slotOf(core, e.getKey()), n);
                membersUsed.add(place[0]);
                long size = e.getValue().byteSize();
                assertThat(readFile(files.get((int) place[0]), place[1] + core.headerBytes, size)).as(e.getKey())
                        .isEqualTo(e.getValue().toArray(ValueLayout.JAVA_BYTE));
            }
            assertThat(membersUsed).hasSize(n);
            assertLoads(core, keys);
        } finally {
            core.close();
        }
        RawBlockCore again = track(RawBlockCore.open(config));
        assertThat(again.recovered).isNotNull();
        assertThat(again.keyCount()).isEqualTo(3 * n);
        assertLoads(again, keys);
        // and the store keeps working after recovery
        Map<String, MemorySegment> more = putKeys(again, n, 1000);
        assertLoads(again, more);
    }

    @Test
    void inspectDecodesAStripedV1StoresCheckpointFromTheFirstDevice() throws Exception {
        List<Path> files = files(3);
        RawBlockCoreConfig config = config(files, RawBlockCoreConfig.MetaFormat.LMCACHE_V1).build();
        try (RawBlockCore core = RawBlockCore.open(config)) {
            putKeys(core, 7, 0);
            core.checkpointNow();
        }
        List<BlockDevice> members = new ArrayList<>();
        for (Path f : files) {
            members.add(BlockDevices.openReadOnly(f));
        }
        MemberLabel label = ((MemberLabel.Read.Label) MemberLabel.read(members.get(0))).label();
        try (BlockDevice striped = StripedBlockDevice.labelled(members, label, DeviceOptions.of(IoEngine.POSIX)
                .withBuffers(1 << 20, 0))) { // the metadata is on the first member, after its label
            Inspector.Report r = Inspector.inspect(striped, 4096, 1 << 20, false);
            assertThat(r.keys()).isEqualTo(7);
            assertThat(r.layout().get("device_path")).isEqualTo(files.get(0).toString());
        }
    }

    /** Members over real io_uring files that record what they are sent; ids non-null: FDP-like. */
    StripedBlockDevice striped(List<Path> files, List<List<Integer>> ids, List<FaultInjectingDevice> out)
            throws IOException {
        return striped(files, ids, out, config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2).build());
    }

    StripedBlockDevice striped(List<Path> files, List<List<Integer>> ids, List<FaultInjectingDevice> out,
            RawBlockCoreConfig config) throws IOException {
        for (int i = 0; i < files.size(); i++) {
            FaultInjectingDevice d = new FaultInjectingDevice(BlockDevices.open(files.get(i),
                    DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 20, 0)));
            if (ids.get(i) != null) {
                d.emulatePlacement(ids.get(i), 0);
            }
            out.add(d);
        }
        StripedBlockDevice d = StripeMembers.open(config, List.copyOf(out), DeviceOptions.of(IoEngine.IO_URING));
        open.add(d);
        return d;
    }

    @Test
    void aDeleteDeallocatesTheSlotOnTheMemberThatHoldsIt() throws Exception {
        List<Path> files = files(3);
        List<FaultInjectingDevice> members = new ArrayList<>();
        StripedBlockDevice device = striped(files, List.of(List.of(0, 1), List.of(0, 1), List.of(0, 1)), members);
        RawBlockCore core = track(RawBlockCore.open(config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)
                .metaSyncIntervalMs(0).build(), device));
        Map<String, MemorySegment> keys = putKeys(core, 9, 0);
        List<String> gone = List.copyOf(keys.keySet()).subList(2, 6);
        Map<String, long[]> placeOf = new LinkedHashMap<>();
        keys.keySet().forEach(k -> placeOf.put(k, expectedPlace(core, slotOf(core, k), 3)));
        members.forEach(m -> m.deallocations().clear());

        assertThat(core.delete(gone, false)).containsOnly(true);
        core.close(); // a closing store commits its log and releases the freed slots

        for (String k : keys.keySet()) {
            long[] place = placeOf.get(k);
            List<long[]> ranges = members.get((int) place[0]).deallocations();
            boolean covered = ranges.stream().anyMatch(r -> r[0] <= place[1] && place[1] + SLOT <= r[0] + r[1]);
            assertThat(covered).as(k + " on member " + place[0] + " at " + place[1]).isEqualTo(gone.contains(k));
        }
        for (FaultInjectingDevice m : members) { // no deallocation reaches past a member's own slots
            assertThat(m.deallocations()).allSatisfy(r -> assertThat(r[0] + r[1]).isLessThanOrEqualTo(FILE));
        }
    }

    @Test
    void eachMemberWritesItsOwnPlacementIdForTheStoresId() throws Exception {
        List<Path> files = files(3);
        List<FaultInjectingDevice> members = new ArrayList<>();
        StripedBlockDevice device = striped(files,
                List.of(List.of(0, 1, 2, 3), List.of(40, 41, 42, 43), List.of(70, 71, 72, 73)), members);
        RawBlockCore core = track(RawBlockCore.open(config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)
                .fdpEnabled(true).build(), device));
        assertThat(core.dataPlacementIds()).containsExactly(1, 2, 3); // member 0's, its default id left out
        members.forEach(FaultInjectingDevice::clearSubmissions);
        List<PutRequest> puts = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            String key = CoreFixture.key(i);
            puts.add(PutRequest.of(key, payload(key, 8192)).withPlacement(2));
        }
        assertThat(core.put(puts)).containsOnly(true);
        int[] own = {2, 42, 72};
        for (int m = 0; m < 3; m++) {
            List<Integer> ids = members.get(m).submissions().stream().flatMap(s -> s.placementIds().stream()).toList();
            assertThat(ids).as("member " + m).contains(own[m]);
            if (m == 0) { // metadata (log records) goes without a directive, and to member 0 only
                assertThat(ids).isSubsetOf(own[0], PlacementId.NONE_VALUE);
            } else {
                assertThat(ids).as("member " + m).containsOnly(own[m]);
            }
        }
    }

    @Test
    void fdpEnabledRefusesAMemberWithoutPlacementNamingIt() throws Exception {
        List<Path> files = files(2);
        List<FaultInjectingDevice> members = new ArrayList<>();
        StripedBlockDevice device = striped(files, Arrays.asList(List.of(0, 1, 2), null), members);
        assertThatThrownBy(() -> RawBlockCore.open(config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)
                .fdpEnabled(true).build(), device)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fdp_enabled").hasMessageContaining("member " + files.get(1));
    }

    @Test
    void aMemberInUseByAnotherStoreFailsTheOpenAndTheOthersAreReleased() throws Exception {
        List<Path> files = files(3);
        RawBlockCore other = track(RawBlockCore.open(RawBlockCoreConfig.builder(files.get(2).toString(), SLOT)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build()));
        RawBlockCoreConfig config = config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2).build();
        assertThatThrownBy(() -> RawBlockCore.open(config)).isInstanceOf(DeviceInUseException.class)
                .hasMessageContaining(files.get(2).toString());
        for (Path p : files.subList(0, 2)) { // opened before the failure, closed again: free to take
            BlockDevices.open(p, DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 20, 0)).close();
        }
        other.close();
        // once the other store let go, its device is still its store: not taken for a blank member
        assertThatThrownBy(() -> RawBlockCore.open(config)).isInstanceOf(StoreRefusedException.class)
                .hasMessageContaining("member 2 (" + files.get(2) + ") holds data there");
        track(RawBlockCore.open(config.toBuilder().format(true).build())).close(); // unless it may be discarded
    }

    @Test
    void aMissingMemberIsRefusedByNameAndNotCreated() throws Exception {
        List<Path> files = new ArrayList<>(files(1));
        Path missing = dir.resolve("missing.img");
        files.add(missing);
        assertThatThrownBy(() -> RawBlockCore.open(config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)
                .capacityBytes(2 * FILE).build())).isInstanceOf(IOException.class)
                .hasMessageContaining("device_paths: " + missing + " does not exist");
        assertThat(Files.exists(missing)).isFalse();
        BlockDevices.open(files.get(0), DeviceOptions.of(IoEngine.IO_URING).withBuffers(1 << 20, 0)).close();
    }

    @Test
    void configTakesDevicePathsAsAListAndRefusesBothForms() {
        RawBlockCoreConfig c = RawBlockCoreConfig.fromJson("{\"device_paths\": [\"/dev/a\", \"/dev/b\"],"
                + " \"slot_bytes\": 65536}");
        assertThat(c.devicePaths()).containsExactly("/dev/a", "/dev/b");
        assertThat(c.devicePath()).isEqualTo("/dev/a");
        assertThat(c.toBuilder().build().devicePaths()).containsExactly("/dev/a", "/dev/b");
        assertThat(RawBlockCoreConfig.fromJson("{\"device_path\": \"/dev/a\", \"slot_bytes\": 65536}").devicePaths())
                .containsExactly("/dev/a");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_path\": \"/dev/a\", \"device_paths\":"
                + " [\"/dev/b\"], \"slot_bytes\": 65536}")).hasMessageContaining("device_path (/dev/a)")
                .hasMessageContaining("device_paths ([/dev/b])").hasMessageContaining("both set");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_paths\": \"/dev/a\", \"slot_bytes\": 65536}"))
                .hasMessageContaining("device_paths").hasMessageContaining("must be a list");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_paths\": [], \"slot_bytes\": 65536}"))
                .hasMessageContaining("device_paths = []");
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_paths\": [\"/dev/a\", \"/dev/a\"],"
                + " \"slot_bytes\": 65536}")).hasMessageContaining("names /dev/a twice");
    }
}
