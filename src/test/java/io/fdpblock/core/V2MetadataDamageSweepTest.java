package io.fdpblock.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;

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
import java.util.TreeSet;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Damage anywhere in an fdpblock_v2 store's metadata, one 4 KiB block at a time (zeroed, or one random
 * byte flipped): the open either recovers exactly the keys the store held at its clean close, each
 * with its bytes, or refuses the device and leaves it as it was; never fewer keys and healthy. A
 * refused device opens with {@code open_damaged}, unhealthy, the damage named.
 */
@Tag("host")
class V2MetadataDamageSweepTest {
    private static final long SLOT = 8192;
    private static final int SLOTS = 300;
    private static final int PAYLOAD = 4096;
    private static final int BLOCK = 4096;

    @Test
    void everyDamagedBlockIsRecoveredExactlyOrRefused(@TempDir Path dir) throws Exception {
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, SLOTS);
        long capacity = meta + SLOTS * SLOT;
        Path file = BlockDevices.createFile(dir.resolve("v2.img"), capacity);
        RawBlockCoreConfig config = RawBlockCoreConfig.builder(file.toString(), SLOT).capacityBytes(capacity)
                .metaTotalBytes(meta).ioEngine(IoEngine.POSIX).metaSyncIntervalMs(0).metaEnablePeriodic(false).build();
        TreeSet<String> held = new TreeSet<>();
        try (RawBlockCore core = RawBlockCore.open(config); Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(PAYLOAD * 10L, 4096);
            int next = 0;
            for (int round = 0; round < 26; round++) { // a commit a round (meta_sync_interval_ms 0): a chunk each
                List<PutRequest> puts = new ArrayList<>();
                for (int i = 0; i < 10; i++, next++) {
                    String key = key(next);
                    fill(buf.asSlice((long) i * PAYLOAD, PAYLOAD), key);
                    puts.add(PutRequest.of(key, buf.asSlice((long) i * PAYLOAD, PAYLOAD)));
                    held.add(key);
                }
                assertThat(core.put(puts)).containsOnly(true);
                if (round % 4 == 3) { // deletes, whose slots the next round reuses
                    List<String> gone = new ArrayList<>(held).subList(0, 6);
                    assertThat(core.delete(gone, false)).containsOnly(true);
                    gone.forEach(held::remove);
                }
                if (round == 5 || round == 9) {
                    core.checkpointNow(); // snapshots seq 1 and 2, one in each area; the log after the second
                }
            }
        }
        byte[] baseline = read(file, meta);
        SplittableRandom random = new SplittableRandom(23);
        int blocks = 0;
        int exact = 0;
        int refused = 0;
        List<String> wrong = new ArrayList<>();
        for (long off = 0; off < meta; off += BLOCK) {
            if (isZero(baseline, (int) off, BLOCK)) {
                continue;
            }
            for (int mode = 0; mode < 2; mode++) {
                byte[] damaged = baseline.clone();
                if (mode == 0) {
                    Arrays.fill(damaged, (int) off, (int) off + BLOCK, (byte) 0);
                } else {
                    int at = (int) off + random.nextInt(BLOCK);
                    damaged[at] ^= (byte) (1 << random.nextInt(8));
                }
                write(file, damaged);
                blocks++;
                String what = (mode == 0 ? "zeroed" : "a flipped byte in") + " block at " + off;
                try (RawBlockCore core = RawBlockCore.open(config)) {
                    String problem = holdsExactly(core, held);
                    if (problem != null) {
                        wrong.add(what + ": opened healthy with " + problem + " (" + core.status().get("recovery") + ")");
                    }
                    exact++;
                } catch (StoreRefusedException e) {
                    refused++;
                    if (!Arrays.equals(read(file, meta), damaged)) {
                        wrong.add(what + ": refused (" + e.getMessage() + ") but the metadata was changed");
                    }
                    try (RawBlockCore core = RawBlockCore.open(config.toBuilder().openDamaged(true).build())) {
                        if (Boolean.TRUE.equals(core.status().get("is_healthy"))
                                || core.status().get("metadata_damage") == null) {
                            wrong.add(what + ": open_damaged opened it healthy: " + core.status());
                        }
                    } catch (StoreRefusedException e2) {
                        if (e2.reason() == StoreRefusedException.Reason.DAMAGED) {
                            wrong.add(what + ": refused although open_damaged: " + e2.getMessage());
                        }
                    }
                }
            }
        }
        write(file, baseline);
        assertThat(wrong).as("damage taken for a smaller store, or refused with a change").isEmpty();
        assertThat(refused).as("damage to the log and snapshots is found, not only tolerated").isPositive();
        System.out.printf("fdpblock_v2 metadata damage sweep: %d damaged blocks tried, %d recovered exactly, %d refused%n",
                blocks, exact, refused);
    }

    /** null when the store holds exactly {@code keys}, each with its bytes; else what differs. */
    private static String holdsExactly(RawBlockCore core, TreeSet<String> keys) throws IOException {
        TreeSet<String> found = new TreeSet<>(core.keySizes().keySet());
        if (!found.equals(keys) || core.keyCount() != keys.size()) {
            TreeSet<String> missing = new TreeSet<>(keys);
            missing.removeAll(found);
            return core.keyCount() + " keys, " + missing.size() + " missing";
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(PAYLOAD, 4096);
            MemorySegment expected = arena.allocate(PAYLOAD, 4096);
            for (String k : keys) {
                buf.fill((byte) 0);
                if (!core.load(List.of(new LoadRequest(k, buf)))[0]) {
                    return "a miss on " + k;
                }
                fill(expected, k);
                if (buf.mismatch(expected) >= 0) {
                    return "other bytes for " + k;
                }
            }
        }
        return null;
    }

    private static String key(int i) {
        return KeyCodec.encode("sweep/model", 3, new byte[] {(byte) i, (byte) (i >> 8)}, i % 3 == 0 ? "" : "s" + i % 3, 0);
    }

    private static void fill(MemorySegment seg, String key) {
        SplittableRandom r = new SplittableRandom(key.hashCode());
        for (long i = 0; i < seg.byteSize(); i += 8) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
    }

    private static boolean isZero(byte[] b, int from, int len) {
        for (int i = from; i < from + len; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        return true;
    }

    private static byte[] read(Path file, long len) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate((int) len);
            while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
                // until full
            }
            return b.array();
        }
    }

    private static void write(Path file, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b, b.position());
            }
            ch.force(true);
        }
    }
}
