package io.fdpblock.core.v2;

import io.fdpblock.core.CoreFixture;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.v2.Snapshots;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoBatch;
import io.fdpblock.l2.KeyCodec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import io.fdpblock.device.IoEngine;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * Writes the seed inputs of the fdpblock_v2 fuzz targets from real stores: a store of
 * {@link V2FuzzDevice}'s geometry is driven through puts (keys with and without salts), deletes,
 * snapshots and a wrap of its log ring, and the bytes it left on the device become the targets' inputs
 * ({@code seed-*} under src/test/resources/io/fdpblock/core/v2/&lt;Class&gt;Inputs/&lt;method&gt;/). Not part of
 * the test run (the name does not end in Test); rerun when the format changes:
 * {@code mvn -o test -Dtest=V2FuzzSeeds -Dfdpblock.fuzz.writeSeeds=true -Dfdpblock.fuzz.skip=true}.
 * Each seed is checked to reach deep into its decoder (accepted, with records to hand over).
 */
@Tag("unit")
@EnabledIfSystemProperty(named = "fdpblock.fuzz.writeSeeds", matches = "true")
class V2FuzzSeeds {
    private static final Path RESOURCES = Path.of("src/test/resources/io/fdpblock/core/v2");

    @Test
    void writeSeeds() throws IOException {
        try (Arena arena = Arena.ofConfined(); BlockDevice device = BlockDevices.memory(V2FuzzDevice.CAPACITY,
                V2FuzzDevice.BLOCK)) {
            MemorySegment payload = arena.allocate(3000, 4096);
            for (int i = 0; i < payload.byteSize(); i++) {
                payload.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
            }
            RawBlockCoreConfig config = V2FuzzDevice.config().toBuilder().metaSyncIntervalMs(0).build();

            // A store that never took a snapshot: its log from LSN 0 holds salts, puts and deletes.
            try (RawBlockCore core = RawBlockCore.open(config, device)) {
                put(core, payload, 0, 5);
                core.delete(List.of(key(1), key(3)), false);
                put(core, payload, 5, 7);
            }
            byte[] meta = read(device);
            V2Layout layout = V2Layout.read(MemorySegment.ofArray(meta).asSlice(0, V2FuzzDevice.BLOCK));
            assertThat(layout).isEqualTo(V2FuzzDevice.layout(layout.incarnation()));
            byte[] superblock = Arrays.copyOf(meta, V2FuzzDevice.BLOCK);
            writeSeed("V2SuperblockFuzzTest", "superblock", "seed-store", concat(new byte[] {0}, superblock));
            byte[] log = logInput(meta, layout, 0);
            assertThat(V2LogFuzzTest.replay(ring(meta, layout), layout, 0).records()).hasSizeGreaterThan(8);
            writeSeed("V2LogFuzzTest", "log", "seed-store-no-snapshot", log);
            writeSeed("V2LogFuzzTest", "log", "seed-store-no-snapshot-open", withFlags(log, V2LogFuzzTest.OPEN));

            // Two snapshots (one per area), then more changes in the log after the newest.
            try (RawBlockCore core = RawBlockCore.open(config, device)) {
                core.checkpointNow();
                core.delete(List.of(key(0)), false);
                put(core, payload, 8, 9);
                core.checkpointNow();
                core.delete(List.of(key(2)), false);
                put(core, payload, 9, 10);
            }
            meta = read(device);
            List<Snapshots.Header> headers = Snapshots.headers(device, layout);
            assertThat(headers).hasSize(2);
            assertThat(headers.getFirst().entries()).isGreaterThan(3);
            byte[] areas = Arrays.copyOfRange(meta, (int) layout.snapshotOffset(0), (int) layout.logOffset());
            byte[] snapshot = concat(new byte[] {0}, le(layout.incarnation()), trimmed(areas));
            writeSeed("V2SnapshotFuzzTest", "snapshot", "seed-store-two", snapshot);
            writeSeed("V2SnapshotFuzzTest", "snapshot", "seed-store-two-open", withFlags(snapshot, V2SnapshotFuzzTest.OPEN));
            long newest = headers.getFirst().startLsn();
            assertThat(V2LogFuzzTest.replay(ring(meta, layout), layout, newest).records()).isNotEmpty();
            writeSeed("V2LogFuzzTest", "log", "seed-store-after-snapshot", logInput(meta, layout, newest));

            // Puts and deletes until the log ring has wrapped (a padding chunk at its end) with snapshots
            // freeing it; the replay from the older snapshot crosses the end of the ring.
            try (RawBlockCore core = RawBlockCore.open(config, device)) {
                ArrayDeque<String> live = new ArrayDeque<>();
                for (int i = 0; i < 10; i++) {
                    if (core.exists(List.of(key(i)), false)[0]) {
                        live.add(key(i));
                    }
                }
                for (int round = 0; round < 40; round++) {
                    List<String> gone = new ArrayList<>();
                    while (gone.size() < 3 && !live.isEmpty()) {
                        gone.add(live.poll());
                    }
                    core.delete(gone, false);
                    put(core, payload, 10 + round * 3, 13 + round * 3);
                    for (int i = 10 + round * 3; i < 13 + round * 3; i++) {
                        live.add(key(i));
                    }
                }
                assertThat(core.status().get("log_next_lsn")).isInstanceOfSatisfying(Long.class,
                        lsn -> assertThat(lsn).isGreaterThan(layout.logBytes()));
            }
            meta = read(device);
            headers = Snapshots.headers(device, layout);
            long oldest = headers.getLast().startLsn();
            V2LogFuzzTest.Replay wrapped = V2LogFuzzTest.replay(ring(meta, layout), layout, oldest);
            assertThat(wrapped.records()).isNotEmpty();
            assertThat(wrapped.end() / layout.logBytes()).isGreaterThan(oldest / layout.logBytes());
            writeSeed("V2LogFuzzTest", "log", "seed-store-wrapped", logInput(meta, layout, oldest));
            byte[] wrappedAreas = Arrays.copyOfRange(meta, (int) layout.snapshotOffset(0),
                    (int) layout.logOffset());
            writeSeed("V2SnapshotFuzzTest", "snapshot", "seed-store-after-wrap",
                    concat(new byte[] {0}, le(layout.incarnation()), trimmed(wrappedAreas)));
        }
        // The default geometry's superblock: 4 KiB blocks, the metadata area sized from the capacity.
        try (CoreFixture f = new CoreFixture(IoEngine.MEMORY, null, 64)) {
            f.open().close();
            byte[] block = read(f.device, 0, 4096);
            assertThat(V2Layout.read(MemorySegment.ofArray(block))).isNotNull();
            writeSeed("V2SuperblockFuzzTest", "superblock", "seed-store-4k", concat(new byte[] {0},
                    Arrays.copyOf(block, V2SuperblockFuzzTest.BLOCK)));
        }
    }

    private static String key(int i) {
        String salt = i % 3 == 0 ? "" : "tenant-" + (char) ('a' + i % 3);
        return KeyCodec.encode("org/model", 0, new byte[] {7, (byte) i, (byte) (i >> 8)}, salt, i % 2);
    }

    private static void put(RawBlockCore core, MemorySegment payload, int from, int to) throws IOException {
        for (int i = from; i < to; i++) {
            boolean[] ok = core.put(List.of(PutRequest.of(key(i), payload.asSlice(0, 1000 + i))));
            assertThat(ok).containsOnly(true);
        }
    }

    private static byte[] read(BlockDevice device) throws IOException {
        return read(device, 0, (int) V2FuzzDevice.META);
    }

    private static byte[] read(BlockDevice device, long offset, int size) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(size, 4096);
            IoBatch b = new IoBatch(1);
            b.read(offset, buf);
            device.execute(b);
            return buf.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static byte[] ring(byte[] meta, V2Layout layout) {
        return Arrays.copyOfRange(meta, (int) layout.logOffset(), (int) (layout.logOffset() + layout.logBytes()));
    }

    /** The log target's input: flags 0, the incarnation, the LSN to replay from, the ring without its trailing zeros. */
    private static byte[] logInput(byte[] meta, V2Layout layout, long fromLsn) {
        return concat(new byte[] {0}, le(layout.incarnation()), le(fromLsn), trimmed(ring(meta, layout)));
    }

    private static byte[] withFlags(byte[] input, int flags) {
        byte[] out = input.clone();
        out[0] = (byte) flags;
        return out;
    }

    private static byte[] trimmed(byte[] b) {
        int n = b.length;
        while (n > 0 && b[n - 1] == 0) {
            n--;
        }
        return Arrays.copyOf(b, n);
    }

    private static byte[] le(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        ByteBuffer out = ByteBuffer.allocate(n);
        for (byte[] p : parts) {
            out.put(p);
        }
        return out.array();
    }

    private static void writeSeed(String target, String method, String name, byte[] input) throws IOException {
        Path dir = RESOURCES.resolve(target + "Inputs").resolve(method);
        Files.createDirectories(dir);
        Files.write(dir.resolve(name), input);
    }
}
