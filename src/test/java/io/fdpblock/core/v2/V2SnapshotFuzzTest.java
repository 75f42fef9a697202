package io.fdpblock.core.v2;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.core.SaltTable;
import io.fdpblock.core.v2.Snapshots;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.fuzz.Fuzzing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * fdpblock_v2 snapshots as recovery reads them from the device: the headers of both snapshot areas
 * ({@link Snapshots#headers}), then each body ({@link Snapshots#load}), on {@link V2FuzzDevice}'s memory
 * device whose superblocks are valid and whose snapshot areas hold the input.
 *
 * <p>Input: a flags byte, the layout's incarnation (u64, so that seeds taken from a real store keep
 * theirs), then the bytes of snapshot area 0 and on into area 1 (flag 4: from area 1), zero-padded.
 * Flags: 1 sets each written area's body CRC32C (over the body_bytes its header names, when they fit the
 * area), 2 then its header CRC32C, so that the fuzzer reaches the parsing behind them; 8 copies the area
 * to the other one (two snapshots); 16 then opens a store on the device ({@link V2FuzzDevice#openStore}).
 *
 * <p>Nothing may escape (the device is in memory: no I/O error). Checked against an independent reading
 * of the format over the bytes written: a header is listed exactly when it has the magic, the layout's
 * incarnation and its CRC, at most max slots entries, a body of 4 bytes up to the area, and a start LSN
 * the log can have (a multiple of block_align, not negative); the list is newest (highest seq) first;
 * a body loads exactly when it matches its CRC and holds the salt table (at most {@value SaltTable#MAX_IDS}
 * salts) and the entries its header counts, each with a slot below max slots and a size of 1 byte up to a
 * slot's payload; then the visitor gets exactly those salts and entries, in order, else nothing at all.
 */
public class V2SnapshotFuzzTest {
    static final int FIX_BODY_CRC = 1;
    static final int FIX_HEADER_CRC = 2;
    static final int AREA_1 = 4;
    static final int BOTH_AREAS = 8;
    static final int OPEN = 16;
    static final int PREFIX = 9;

    record Salt(int id, String salt) {}

    record Entry(long h1, long h2, int slot, int size, int crc, int group, int saltId) {}

    /** What a body hands over: salts then entries, or null when it must not load. */
    record Body(List<Salt> salts, List<Entry> entries) {}

    @FuzzTest
    void snapshot(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        int flags = input.length == 0 ? 0 : input[0];
        long incarnation = V2FuzzDevice.u64(V2FuzzDevice.slice(input, 1, 8), 0);
        V2Layout layout = V2FuzzDevice.layout(incarnation);
        byte[] meta = V2FuzzDevice.image(layout);
        int area = (flags & AREA_1) != 0 ? 1 : 0;
        int from = (int) layout.snapshotOffset(area);
        int end = (int) layout.logOffset();
        byte[] bytes = V2FuzzDevice.slice(input, PREFIX, end - from);
        System.arraycopy(bytes, 0, meta, from, bytes.length);
        fixCrcs(meta, layout, area, flags);
        if ((flags & BOTH_AREAS) != 0) {
            int size = (int) layout.snapshotBytes();
            System.arraycopy(meta, from, meta, (int) layout.snapshotOffset(1 - area), size);
        }
        BlockDevice device = V2FuzzDevice.holding(meta);
        try {
            checkDecoders(device, layout, meta);
        } catch (IOException e) {
            throw new UncheckedIOException("an I/O error from a memory device", e);
        }
        if ((flags & OPEN) != 0) {
            V2FuzzDevice.openStore();
        }
    }

    private static void checkDecoders(BlockDevice device, V2Layout layout, byte[] meta) throws IOException {
        List<Snapshots.Header> headers = Snapshots.headers(device, layout);
        List<Snapshots.Header> expected = new ArrayList<>();
        for (int area = 0; area < 2; area++) {
            Snapshots.Header h = header(meta, layout, area);
            if (h != null) {
                expected.add(h);
            }
        }
        expected.sort(Comparator.comparingLong(Snapshots.Header::seq).reversed());
        if (!headers.equals(expected)) {
            throw Fuzzing.wrong("snapshot headers", headers, expected);
        }
        for (Snapshots.Header h : headers) {
            List<Salt> salts = new ArrayList<>();
            List<Entry> entries = new ArrayList<>();
            boolean loaded = Snapshots.load(device, layout, h, new Snapshots.Visitor() {
                @Override
                public void salt(int id, String salt) {
                    salts.add(new Salt(id, salt));
                }

                @Override
                public void entry(long h1, long h2, int slot, int size, int crc, int group, int saltId) {
                    if (slot < 0 || slot >= layout.maxSlots() || size <= 0 || size > layout.slotBytes() - layout.headerBytes()) {
                        throw Fuzzing.wrong("entry handed over", "slot " + slot + ", size " + size, "a slot below "
                                + layout.maxSlots() + " and a size in 1.." + (layout.slotBytes() - layout.headerBytes()));
                    }
                    entries.add(new Entry(h1, h2, slot, size, crc, group, saltId));
                }
            });
            Body body = body(meta, layout, h);
            if (loaded != (body != null)) {
                throw Fuzzing.wrong("snapshot seq " + h.seq() + " in area " + h.area() + " loaded", loaded, body != null);
            }
            Body got = new Body(salts, entries);
            Body want = body != null ? body : new Body(List.of(), List.of());
            if (!got.equals(want)) {
                throw Fuzzing.wrong("what snapshot seq " + h.seq() + " handed over" + (loaded ? "" : " (not loaded)"),
                        got, want);
            }
        }
    }

    /** Flag 1: the body CRC of the area the input starts in; flag 2: then its header CRC. */
    private static void fixCrcs(byte[] meta, V2Layout layout, int area, int flags) {
        int at = (int) layout.snapshotOffset(area);
        int block = layout.blockAlign();
        long bodyBytes = Fuzzing.u64(meta, at + 40);
        if ((flags & FIX_BODY_CRC) != 0 && bodyBytes >= 0 && bodyBytes <= layout.snapshotBytes() - block) {
            V2FuzzDevice.putU32(meta, at + 56, V2FuzzDevice.crc32c(meta, at + block, (int) bodyBytes));
        }
        if ((flags & FIX_HEADER_CRC) != 0) {
            V2FuzzDevice.putU32(meta, at + 60, V2FuzzDevice.crc32c(meta, at, 60));
        }
    }

    /** The header of {@code area} as the format describes it, or null when it is not one to load. */
    private static Snapshots.Header header(byte[] meta, V2Layout layout, int area) {
        int at = (int) layout.snapshotOffset(area);
        if (!Arrays.equals(meta, at, at + 8, Snapshots.MAGIC, 0, 8) || Fuzzing.u64(meta, at + 8) != layout.incarnation()
                || (int) Fuzzing.u32(meta, at + 60) != V2FuzzDevice.crc32c(meta, at, 60)) {
            return null;
        }
        long startLsn = Fuzzing.u64(meta, at + 24);
        long entries = Fuzzing.u64(meta, at + 32);
        long body = Fuzzing.u64(meta, at + 40);
        if (entries < 0 || entries > layout.maxSlots() || body < 4 || body > layout.snapshotBytes() - layout.blockAlign()
                || startLsn < 0 || startLsn % layout.blockAlign() != 0) {
            return null;
        }
        return new Snapshots.Header(area, Fuzzing.u64(meta, at + 16), startLsn, entries, body,
                Fuzzing.u64(meta, at + 48), (int) Fuzzing.u32(meta, at + 56));
    }

    /** What the body of {@code h} must hand over, or null when it must not load. */
    private static Body body(byte[] meta, V2Layout layout, Snapshots.Header h) {
        int at = (int) (layout.snapshotOffset(h.area()) + layout.blockAlign());
        int end = at + (int) h.bodyBytes();
        if (V2FuzzDevice.crc32c(meta, at, (int) h.bodyBytes()) != h.bodyCrc()) {
            return null;
        }
        int p = at;
        if (end - p < 4) {
            return null;
        }
        long saltCount = Fuzzing.u32(meta, p);
        p += 4;
        if (saltCount > SaltTable.MAX_IDS) {
            return null;
        }
        List<Salt> salts = new ArrayList<>();
        for (long i = 0; i < saltCount; i++) {
            if (end - p < 4) {
                return null;
            }
            int id = Fuzzing.u16(meta, p);
            int len = Fuzzing.u16(meta, p + 2);
            p += 4;
            if (end - p < len) {
                return null;
            }
            salts.add(new Salt(id, new String(meta, p, len, StandardCharsets.UTF_8)));
            p += len;
        }
        List<Entry> entries = new ArrayList<>();
        for (long i = 0; i < h.entries(); i++) {
            if (end - p < V2Layout.SNAPSHOT_ENTRY_BYTES) {
                return null;
            }
            long slot = Fuzzing.u32(meta, p + 16);
            long size = Fuzzing.u32(meta, p + 20);
            if (slot >= layout.maxSlots() || size == 0 || size > layout.slotBytes() - layout.headerBytes()) {
                return null;
            }
            entries.add(new Entry(Fuzzing.u64(meta, p), Fuzzing.u64(meta, p + 8), (int) slot, (int) size,
                    (int) Fuzzing.u32(meta, p + 24), Fuzzing.u16(meta, p + 28), Fuzzing.u16(meta, p + 30)));
            p += V2Layout.SNAPSHOT_ENTRY_BYTES;
        }
        return new Body(salts, entries);
    }
}
