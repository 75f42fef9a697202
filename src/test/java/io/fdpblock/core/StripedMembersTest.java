package io.fdpblock.core;

import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.MemberLabel;
import io.fdpblock.device.StripedBlockDevice;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import io.fdpblock.device.DeviceOptions;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The members of a striped store know their store: a list of device_paths that is not the store's
 * members in its order (swapped, foreign, blank, added, missing) is refused by name and left as it was.
 */
@Tag("host")
class StripedMembersTest {
    static final long SLOT = 64 << 10;
    static final long FILE = 4 << 20;

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;
    final Arena arena = Arena.ofShared();

    @AfterEach
    void tearDown() {
        arena.close();
    }

    Path file(String name, long size) throws IOException {
        return BlockDevices.createFile(dir.resolve(name + ".img"), size);
    }

    static RawBlockCoreConfig.Builder config(List<Path> files, RawBlockCoreConfig.MetaFormat format) {
        RawBlockCoreConfig.Builder b = RawBlockCoreConfig.builder(files.stream().map(Path::toString).toList(), SLOT)
                .metaFormat(format).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
        return format == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? b.metaTotalBytes(1 << 20) : b;
    }

    MemorySegment payload(String key, long size) {
        MemorySegment seg = arena.allocate(size, 4096);
        SplittableRandom r = new SplittableRandom(key.hashCode());
        for (long i = 0; i < size; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
        return seg;
    }

    /** A store over {@code files} holding {@code count} keys from {@code from}, closed again. */
    Map<String, MemorySegment> store(List<Path> files, RawBlockCoreConfig.MetaFormat format, int count, int from)
            throws IOException {
        Map<String, MemorySegment> keys = new LinkedHashMap<>();
        try (RawBlockCore core = RawBlockCore.open(config(files, format).build())) {
            List<PutRequest> puts = new ArrayList<>();
            for (int i = from; i < from + count; i++) {
                String key = CoreFixture.key(i);
                MemorySegment p = payload(key, 4096L * (1 + i % 5) + 77);
                keys.put(key, p);
                puts.add(PutRequest.of(key, p));
            }
            assertThat(core.putWithOutcome(puts)).containsOnly(PutOutcome.STORED);
            core.checkpointNow();
        }
        return keys;
    }

    void assertHolds(List<Path> files, RawBlockCoreConfig.MetaFormat format, Map<String, MemorySegment> keys)
            throws IOException {
        try (RawBlockCore core = RawBlockCore.open(config(files, format).build())) {
            assertThat(core.keyCount()).isEqualTo(keys.size());
            List<LoadRequest> loads = new ArrayList<>();
            List<MemorySegment> dest = new ArrayList<>();
            for (String k : keys.keySet()) {
                MemorySegment d = arena.allocate(SLOT, 4096);
                dest.add(d);
                loads.add(new LoadRequest(k, d));
            }
            assertThat(core.load(loads)).containsOnly(true);
            int i = 0;
            for (MemorySegment p : keys.values()) {
                assertThat(dest.get(i++).asSlice(0, p.byteSize()).mismatch(p)).isEqualTo(-1);
            }
        }
    }

    static byte[] bytes(Path file) throws IOException {
        return Files.readAllBytes(file);
    }

    static List<byte[]> bytes(List<Path> files) throws IOException {
        List<byte[]> out = new ArrayList<>();
        for (Path f : files) {
            out.add(bytes(f));
        }
        return out;
    }

    void assertUnchanged(List<Path> files, List<byte[]> before) throws IOException {
        for (int i = 0; i < files.size(); i++) {
            assertThat(bytes(files.get(i))).as(files.get(i) + " byte for byte").isEqualTo(before.get(i));
        }
    }

    void assertRefused(List<Path> given, RawBlockCoreConfig.Builder config, String... inMessage) {
        var t = assertThatThrownBy(() -> RawBlockCore.open(config.build()).close())
                .isInstanceOf(StoreRefusedException.class)
                .satisfies(e -> assertThat(((StoreRefusedException) e).reason())
                        .isEqualTo(StoreRefusedException.Reason.WRONG_MEMBERS))
                .hasMessageContaining("Nothing was changed");
        for (String s : inMessage) {
            t.hasMessageContaining(s);
        }
        t.hasMessageNotContaining("capacity_bytes =").hasMessageNotContaining("\"format\": true");
    }

    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.MetaFormat.class)
    void membersInSwappedOrderAreRefusedAndBothStayByteForByteAsTheyWere(RawBlockCoreConfig.MetaFormat format)
            throws Exception {
        List<Path> files = List.of(file("a", FILE), file("b", FILE));
        Map<String, MemorySegment> keys = store(files, format, 1, 0); // slot 1, at the start of b, is unused
        List<byte[]> before = bytes(files);
        List<Path> swapped = List.of(files.get(1), files.get(0));

        assertRefused(swapped, config(swapped, format), "member 0 (" + files.get(1) + "): holds",
                "'s member 1, expected", "member 1 (" + files.get(0) + ")",
                "in the store's order they are [" + files.get(0) + ", " + files.get(1) + "]");
        assertUnchanged(files, before);
        assertHolds(files, format, keys); // in the right order it is the same store
    }

    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.MetaFormat.class)
    void aMemberOfAnotherStripedStoreIsRefusedNamingWhatItHolds(RawBlockCoreConfig.MetaFormat format)
            throws Exception {
        List<Path> one = List.of(file("a", FILE), file("b", FILE));
        List<Path> other = List.of(file("c", FILE), file("d", FILE));
        Map<String, MemorySegment> keys = store(one, format, 20, 0);
        store(other, format, 20, 100);
        List<byte[]> before = bytes(List.of(one.get(0), other.get(1)));
        List<Path> mixed = List.of(one.get(0), other.get(1));

        assertRefused(mixed, config(mixed, format), "member 1 (" + other.get(1) + "): holds member 1 of 2 of striped"
                + " store ", "expected store ", "'s member 1", "is not among the devices given");
        assertUnchanged(mixed, before);
        assertHolds(one, format, keys);
    }

    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.MetaFormat.class)
    void aBlankReplacementIsRefused(RawBlockCoreConfig.MetaFormat format) throws Exception {
        List<Path> files = List.of(file("a", FILE), file("b", FILE));
        Map<String, MemorySegment> keys = store(files, format, 20, 0);
        Path blank = file("blank", FILE);
        List<Path> replaced = List.of(files.get(0), blank);
        List<byte[]> before = bytes(replaced);

        assertRefused(replaced, config(replaced, format), "member 1 (" + blank + "): blank", "expected store ",
                "'s member 1");
        assertUnchanged(replaced, before);
        // a blank first member with the store's second behind it is no new store either
        List<Path> firstBlank = List.of(blank, files.get(1));
        assertRefused(firstBlank, config(firstBlank, format), "member 0 (" + blank + "): blank", "'s member 0 is not"
                + " among the devices given");
        assertUnchanged(List.of(blank), List.of(before.get(1)));
        assertHolds(files, format, keys);
    }

    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.MetaFormat.class)
    void anAddedMemberIsRefusedEvenWithTheCapacityTheStoreWasCreatedWith(RawBlockCoreConfig.MetaFormat format)
            throws Exception {
        List<Path> files = List.of(file("a", FILE), file("b", FILE));
        Map<String, MemorySegment> keys = store(files, format, 20, 0);
        long capacity;
        try (RawBlockCore core = RawBlockCore.open(config(files, format).build())) {
            capacity = core.capacityBytes();
        }
        List<Path> added = List.of(files.get(0), files.get(1), file("c", FILE));
        List<byte[]> before = bytes(added);

        assertRefused(added, config(added, format), "3 devices are given, the striped store ",
                " has 2 members", "member 2 (" + added.get(2) + "): blank", "the store has no member 2");
        assertRefused(added, config(added, format).capacityBytes(capacity), "3 devices are given");
        assertUnchanged(added, before);
        assertHolds(files, format, keys);
    }

    @Test
    void aMissingMemberIsRefusedAndAMemberAloneIsNotTakenForAStore() throws Exception {
        RawBlockCoreConfig.MetaFormat format = RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2;
        List<Path> files = List.of(file("a", FILE), file("b", FILE), file("c", FILE));
        Map<String, MemorySegment> keys = store(files, format, 20, 0);
        List<byte[]> before = bytes(files);

        List<Path> two = files.subList(0, 2);
        assertRefused(two, config(two, format), "2 devices are given, the striped store ", " has 3 members",
                "'s member 2 is not among the devices given");
        for (Path alone : files) { // one member alone is no store of its own, in either format
            for (RawBlockCoreConfig.MetaFormat f : RawBlockCoreConfig.MetaFormat.values()) {
                RawBlockCoreConfig.Builder single = RawBlockCoreConfig.builder(alone.toString(), SLOT).metaFormat(f)
                        .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
                assertRefused(List.of(alone), f == format ? single : single.metaTotalBytes(1 << 20),
                        "raw_block on " + alone + ": it is member " + files.indexOf(alone) + " of 3 of striped store",
                        "device_paths listing its 3 members");
            }
        }
        assertUnchanged(files, before);
        assertHolds(files, format, keys);
    }

    @Test
    void twoFilesOf128MiBMakeAStoreInEitherFormat() throws Exception {
        long size = 128L << 20;
        List<Path> files = List.of(file("a", size), file("b", size));
        RawBlockCoreConfig.Builder v2 = RawBlockCoreConfig.builder(files.stream().map(Path::toString).toList(), SLOT)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
        Map<String, MemorySegment> keys = new LinkedHashMap<>();
        try (RawBlockCore core = RawBlockCore.open(v2.build())) {
            List<PutRequest> puts = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                String key = CoreFixture.key(i);
                keys.put(key, payload(key, 50_000));
                puts.add(PutRequest.of(key, keys.get(key)));
            }
            assertThat(core.putWithOutcome(puts)).containsOnly(PutOutcome.STORED);
        }
        assertHolds(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, keys);

        // lmcache_v1's default metadata area (256 MiB) cannot lie on a 128 MiB first member: refused, naming what fits
        List<Path> others = List.of(file("c", size), file("d", size));
        RawBlockCoreConfig v1 = RawBlockCoreConfig.builder(others.stream().map(Path::toString).toList(), SLOT)
                .metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1).ioEngine(IoEngine.IO_URING)
                .metaEnablePeriodic(false).build();
        long share = (size - 4096) / SLOT * SLOT;
        assertThatThrownBy(() -> RawBlockCore.open(v1).close()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("268435456 bytes (meta_total_bytes) do not fit the share of " + share)
                .hasMessageContaining("Nothing was written: use members of at least " + (4096 + (256L << 20) + SLOT))
                .hasMessageContaining("or a meta_total_bytes below " + share);
        for (Path p : others) {
            assertZeros(p);
        }
        try (RawBlockCore core = RawBlockCore.open(v1.toBuilder().metaTotalBytes(64L << 20).build())) {
            assertThat(core.maxSlots()).isEqualTo((share - (64L << 20)) / SLOT + share / SLOT);
        }
    }

    @Test
    void aStoreLabelsEveryMemberBeforeItsFirstWrite() throws Exception {
        List<Path> files = List.of(file("a", FILE), file("b", FILE), file("c", FILE));
        store(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, 3, 0);
        long id = -1;
        for (int i = 0; i < 3; i++) {
            MemberLabel.Read r = MemberLabel.decode(MemorySegment.ofArray(readAt(files.get(i), 0, 4096)));
            assertThat(r).isInstanceOf(MemberLabel.Read.Label.class);
            MemberLabel l = ((MemberLabel.Read.Label) r).label();
            assertThat(l.committed()).isTrue();
            assertThat(l.index()).isEqualTo(i);
            assertThat(l.count()).isEqualTo(3);
            assertThat(l.stripeBytes()).isEqualTo(SLOT);
            assertThat(l.dataOffset()).isEqualTo(4096);
            assertThat(l.memberBytes()).isEqualTo((FILE - 4096) / SLOT * SLOT);
            id = i == 0 ? l.idHigh() : id;
            assertThat(l.idHigh()).isEqualTo(id);
        }
        // the bytes themselves, as docs/on-device-format.md gives them
        byte[] b = readAt(files.get(1), 0, 4096);
        ByteBuffer le = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(new String(b, 0, 8, StandardCharsets.US_ASCII)).isEqualTo("FDPBML01");
        assertThat(le.getInt(8)).isEqualTo(1);
        assertThat(le.getInt(12)).isEqualTo(2);
        assertThat(le.getInt(32)).isEqualTo(1);
        assertThat(le.getInt(36)).isEqualTo(3);
        CRC32C crc = new CRC32C();
        crc.update(b, 0, 72);
        assertThat(le.getInt(72)).isEqualTo((int) crc.getValue());
        for (int i = 76; i < 4096; i++) {
            assertThat(b[i]).isZero();
        }
        // the fdpblock_v2 superblock follows member 0's label
        assertThat(new String(readAt(files.get(0), 4096, 8), StandardCharsets.US_ASCII))
                .isEqualTo("FDPBSB02");
    }

    @Test
    void aStoreRefusedBeforeItsFirstWriteLeavesBlankMembersBlank() throws Exception {
        List<Path> files = List.of(file("a", FILE), file("b", FILE));
        // a metadata area larger than the first member's share (4 MiB less its label, in whole slots)
        assertThatThrownBy(() -> RawBlockCore.open(config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)
                .metaTotalBytes(5 << 20).build()).close()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("do not fit the share of " + (FILE - SLOT));
        for (Path p : files) {
            assertZeros(p);
        }
    }

    /** A power loss while the labels are written: every state it can leave is refused or created again. */
    @Test
    void aCreationCutShortIsCreatedAgainAndNeverOpensWithWrongMembers() throws Exception {
        List<Path> files = List.of(file("a", FILE), file("b", FILE), file("c", FILE));
        long share = (FILE - 4096) / SLOT * SLOT;
        MemberLabel x = new MemberLabel(11, 12, true, 0, 3, SLOT, share, 4096, 1_000);
        // cut after member 1's prepared label: member 0 has none, so no store was committed: created again
        writeLabel(files.get(1), x.asMember(1, false));
        Map<String, MemorySegment> keys = store(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, 5, 0);
        MemberLabel created = label(files.get(0));
        assertThat(created.sameStore(x)).isFalse();
        assertThat(label(files.get(1)).sameStore(created)).isTrue();
        assertHolds(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, keys);

        // cut after member 0's committed label, before the others': the store is whole, its labels finished
        writeLabel(files.get(1), created.asMember(1, false));
        writeLabel(files.get(2), created.asMember(2, false));
        assertHolds(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, keys);
        store(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2, 1, 50); // its first write finishes them
        assertThat(label(files.get(1)).committed()).isTrue();
        assertThat(label(files.get(2)).committed()).isTrue();

        // prepared labels of one creation beside a committed store's member 0: refused by name
        writeLabel(files.get(2), x.asMember(2, false));
        List<byte[]> before = bytes(files);
        assertRefused(files, config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2), "member 2 (" + files.get(2)
                + "): holds member 2 of 3 of striped store " + x.storeId());
        assertUnchanged(files, before);
    }

    @Test
    void newMembersThatHoldDataAreRefusedUntouched() throws Exception {
        List<Path> files = List.of(file("a", FILE), file("b", FILE));
        try (FileChannel ch = FileChannel.open(files.get(1), StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap("some file system".getBytes()), 100);
        }
        List<byte[]> before = bytes(files);
        assertThatThrownBy(() -> RawBlockCore.open(config(files, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2).build())
                .close()).isInstanceOf(StoreRefusedException.class)
                .hasMessageContaining("member 1 (" + files.get(1) + ") holds data there")
                .hasMessageContaining("Nothing was changed");
        assertUnchanged(files, before);
    }

    /**
     * A store written before labels: each member's share from offset 0. It opens as before (with a
     * warning); its first member given second is refused, not taken for a new store.
     */
    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.MetaFormat.class)
    void aStoreWrittenBeforeLabelsOpensAsBeforeAndSwappedIsRefused(RawBlockCoreConfig.MetaFormat format)
            throws Exception {
        long size = (FILE - 4096) / SLOT * SLOT + 4096; // the labelled share is then the unlabelled one
        List<Path> files = List.of(file("a", size), file("b", size));
        Map<String, MemorySegment> keys = store(files, format, 20, 0);
        for (Path p : files) { // the bytes an unlabelled store would have: each share at offset 0
            byte[] b = bytes(p);
            byte[] shifted = new byte[b.length];
            System.arraycopy(b, 4096, shifted, 0, b.length - 4096);
            Files.write(p, shifted);
        }
        assertHolds(files, format, keys);
        assertThat(MemberLabel.decode(MemorySegment.ofArray(readAt(files.get(1), 0, 4096))))
                .as("opening it wrote no label").isNotInstanceOf(MemberLabel.Read.Label.class);

        List<byte[]> before = bytes(files);
        List<Path> swapped = List.of(files.get(1), files.get(0));
        assertThatThrownBy(() -> RawBlockCore.open(config(swapped, format).build())
                .close()).isInstanceOf(StoreRefusedException.class)
                .hasMessageContaining("member 1 (" + files.get(0) + ") holds data there")
                .hasMessageContaining("list the store's first member first");
        assertUnchanged(files, before);
        // a member added to it: the size the store records is not these members', refused without advice to
        // open it with the old capacity
        List<Path> added = List.of(files.get(0), files.get(1), file("c", size));
        assertThatThrownBy(() -> RawBlockCore.open(config(added, format).build())
                .close()).isInstanceOf(StoreRefusedException.class).hasMessageContaining("a member was added")
                .hasMessageNotContaining("capacity_bytes =");
        assertUnchanged(files, before);
    }

    @Test
    void aSingleDeviceStoreIsLaidOutAsBefore() throws Exception {
        for (RawBlockCoreConfig.MetaFormat f : RawBlockCoreConfig.MetaFormat.values()) {
            Path p = file("single-" + f, FILE);
            RawBlockCoreConfig.Builder b = RawBlockCoreConfig.builder(p.toString(), SLOT).metaFormat(f)
                    .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
            try (RawBlockCore core = RawBlockCore.open((f == RawBlockCoreConfig.MetaFormat.LMCACHE_V1
                    ? b.metaTotalBytes(1 << 20) : b).build())) {
                assertThat(core.device()).isNotInstanceOf(StripedBlockDevice.class);
                assertThat(core.dataBase).isEqualTo(f == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? 1 << 20
                        : core.dataBase);
            }
            assertThat(new String(readAt(p, 0, 8), StandardCharsets.US_ASCII))
                    .isEqualTo(f == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? "LMCIDX01" : "FDPBSB02");
        }
    }

    static void assertZeros(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(1 << 20);
            long pos = 0;
            for (int n; (n = ch.read(b.clear(), pos)) > 0; pos += n) {
                for (int i = 0; i < n; i++) {
                    if (b.get(i) != 0) {
                        throw new AssertionError(file + " was written: a non-zero byte at " + (pos + i));
                    }
                }
            }
        }
    }

    static byte[] readAt(Path file, long offset, int length) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(length);
            while (b.hasRemaining() && ch.read(b, offset + b.position()) > 0) {
            }
            return b.array();
        }
    }

    static MemberLabel label(Path file) throws IOException {
        return ((MemberLabel.Read.Label) MemberLabel.decode(MemorySegment.ofArray(readAt(file, 0, 4096)))).label();
    }

    static void writeLabel(Path file, MemberLabel l) throws IOException {
        try (var d = BlockDevices.open(file, DeviceOptions.of(IoEngine.POSIX).withBuffers(1 << 20, 0))) {
            l.write(d);
        }
    }
}
