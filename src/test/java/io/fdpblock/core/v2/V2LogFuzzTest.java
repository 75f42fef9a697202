package io.fdpblock.core.v2;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.v2.LogReader;
import io.fdpblock.core.v2.Snapshots;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.fuzz.Fuzzing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The fdpblock_v2 metadata log as recovery replays it ({@link LogReader#replay}), on {@link V2FuzzDevice}'s
 * memory device whose superblocks are valid and whose log ring holds the input.
 *
 * <p>Input: a flags byte, the layout's incarnation (u64), the LSN to replay from (u64, made a
 * non-negative multiple of block_align: a snapshot header with another start is refused before replay,
 * see {@link V2SnapshotFuzzTest}), then the log ring from its first byte, zero-padded. Flag 1 sets the
 * body and header CRC32C of every block of the ring that starts with the chunk magic (in that order, the
 * body when it fits the ring), so that the fuzzer reaches the records behind them; flag 2 also writes a
 * valid empty snapshot starting at that LSN and opens a store on the device
 * ({@link V2FuzzDevice#openStore}).
 *
 * <p>Nothing may escape (the device is in memory: no I/O error) and replay must end (libFuzzer's timeout
 * catches a hang). Checked against an independent reading of the format over the ring's bytes: the log
 * is read chunk after chunk from the LSN given (a padding chunk sends it to the next lap of the ring)
 * and ends at the first chunk that lacks the magic, the incarnation, its own LSN or its header CRC, that
 * would cross the end of the ring or come within one ring of LSN 2^63, whose body fails its CRC, or
 * whose body is not exactly its count of records each one the store can have written (a put with a slot
 * below max slots, a size of 1 byte up to a slot's payload, a key of 1 to {@value PutRequest#MAX_KEY_BYTES}
 * bytes of valid UTF-8; a delete with a slot below max slots; a salt). Replay must hand over exactly the
 * records of the chunks before that one, in order (none of that chunk), and return its LSN.
 */
public class V2LogFuzzTest {
    static final int FIX_CRCS = 1;
    static final int OPEN = 2;
    static final int PREFIX = 17;
    private static final int PAD = -1;

    sealed interface Rec {}

    record Put(long h1, long h2, int slot, int size, int crc, int group, int saltId, String key) implements Rec {}

    record Delete(long h1, long h2, int slot) implements Rec {}

    record Salt(int id, String salt) implements Rec {}

    /** Where replay must stop and what it must hand over before. */
    record Replay(long end, List<Rec> records) {}

    @FuzzTest
    void log(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        int flags = input.length == 0 ? 0 : input[0];
        byte[] prefix = V2FuzzDevice.slice(input, 1, 16);
        V2Layout layout = V2FuzzDevice.layout(V2FuzzDevice.u64(prefix, 0));
        long fromLsn = V2FuzzDevice.u64(prefix, 8) & Long.MAX_VALUE & -layout.blockAlign();
        byte[] ring = V2FuzzDevice.slice(input, PREFIX, layout.logBytes());
        if ((flags & FIX_CRCS) != 0) {
            fixCrcs(ring, layout.blockAlign());
        }
        byte[] meta = V2FuzzDevice.image(layout);
        System.arraycopy(ring, 0, meta, (int) layout.logOffset(), ring.length);
        if ((flags & OPEN) != 0) {
            writeEmptySnapshot(meta, layout, fromLsn);
        }
        BlockDevice device = V2FuzzDevice.holding(meta);
        List<Rec> got = new ArrayList<>();
        long end;
        try {
            end = LogReader.replay(device, layout, fromLsn, new LogFormat.Visitor() {
                @Override
                public void put(long h1, long h2, int slot, int size, int crc, int group, int saltId, String key) {
                    if (slot < 0 || slot >= layout.maxSlots() || key.isEmpty()
                            || key.getBytes(StandardCharsets.UTF_8).length > PutRequest.MAX_KEY_BYTES) {
                        throw Fuzzing.wrong("put handed over", "slot " + slot + ", key of " + key.length() + " chars",
                                "a slot below " + layout.maxSlots() + ", a key of 1.." + PutRequest.MAX_KEY_BYTES + " bytes");
                    }
                    got.add(new Put(h1, h2, slot, size, crc, group, saltId, key));
                }

                @Override
                public void delete(long h1, long h2, int slot) {
                    got.add(new Delete(h1, h2, slot));
                }

                @Override
                public void salt(int id, String salt) {
                    got.add(new Salt(id, salt));
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("an I/O error from a memory device", e);
        }
        Replay want = replay(ring, layout, fromLsn);
        if (end != want.end() || !got.equals(want.records())) {
            throw Fuzzing.wrong("replay from LSN " + fromLsn, "end " + end + ", " + got,
                    "end " + want.end() + ", " + want.records());
        }
        if ((flags & OPEN) != 0) {
            V2FuzzDevice.openStore();
        }
    }

    /** The log as the format describes it, read over the ring's bytes. */
    static Replay replay(byte[] ring, V2Layout layout, long fromLsn) {
        int block = layout.blockAlign();
        long logBytes = layout.logBytes();
        List<Rec> out = new ArrayList<>();
        long lsn = fromLsn;
        while (lsn <= Long.MAX_VALUE - logBytes) {
            int off = (int) (lsn % logBytes);
            long lap = logBytes - off;
            if (!Arrays.equals(ring, off, off + 8, LogFormat.MAGIC, 0, 8) || Fuzzing.u64(ring, off + 8) != layout.incarnation()
                    || Fuzzing.u64(ring, off + 16) != lsn
                    || (int) Fuzzing.u32(ring, off + 36) != V2FuzzDevice.crc32c(ring, off, 36)) {
                break;
            }
            long records = Fuzzing.u32(ring, off + 28);
            if (records == Integer.toUnsignedLong(PAD)) {
                lsn += lap;
                continue;
            }
            long body = Fuzzing.u32(ring, off + 24);
            long size = OnDiskFormat.roundUp(LogFormat.CHUNK_HEADER + body, block);
            if (size > lap || V2FuzzDevice.crc32c(ring, off + LogFormat.CHUNK_HEADER, (int) body)
                    != (int) Fuzzing.u32(ring, off + 32)) {
                break;
            }
            List<Rec> recs = records(ring, off + LogFormat.CHUNK_HEADER, (int) body, records, layout);
            if (recs == null) {
                break;
            }
            out.addAll(recs);
            lsn += size;
        }
        return new Replay(lsn, out);
    }

    /** A chunk body's records, or null when it is not exactly {@code count} records the store can have written. */
    private static List<Rec> records(byte[] b, int from, int bodyBytes, long count, V2Layout layout) {
        int end = from + bodyBytes;
        int p = from;
        List<Rec> out = new ArrayList<>();
        for (long r = 0; r < count; r++) {
            if (p >= end) {
                return null;
            }
            switch (b[p]) {
                case LogFormat.PUT -> {
                    if (end - p < 35) {
                        return null;
                    }
                    int keyLen = Fuzzing.u16(b, p + 1);
                    long slot = Fuzzing.u32(b, p + 3);
                    long size = Fuzzing.u32(b, p + 7);
                    if (end - p - 35 < keyLen || slot >= layout.maxSlots() || size == 0
                            || size > layout.slotBytes() - layout.headerBytes() || keyLen == 0
                            || keyLen > PutRequest.MAX_KEY_BYTES) {
                        return null;
                    }
                    String key;
                    try {
                        key = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(b, p + 35, keyLen)).toString();
                    } catch (CharacterCodingException e) {
                        return null;
                    }
                    out.add(new Put(Fuzzing.u64(b, p + 19), Fuzzing.u64(b, p + 27), (int) slot, (int) size,
                            (int) Fuzzing.u32(b, p + 11), Fuzzing.u16(b, p + 15), Fuzzing.u16(b, p + 17), key));
                    p += 35 + keyLen;
                }
                case LogFormat.DELETE -> {
                    if (end - p < 21) {
                        return null;
                    }
                    long slot = Fuzzing.u32(b, p + 1);
                    if (slot >= layout.maxSlots()) {
                        return null;
                    }
                    out.add(new Delete(Fuzzing.u64(b, p + 5), Fuzzing.u64(b, p + 13), (int) slot));
                    p += 21;
                }
                case LogFormat.SALT -> {
                    if (end - p < 5) {
                        return null;
                    }
                    int len = Fuzzing.u16(b, p + 3);
                    if (end - p - 5 < len) {
                        return null;
                    }
                    out.add(new Salt(Fuzzing.u16(b, p + 1), new String(b, p + 5, len, StandardCharsets.UTF_8)));
                    p += 5 + len;
                }
                default -> {
                    return null;
                }
            }
        }
        return p == end ? out : null;
    }

    /** Flag 1: the CRCs of every block of the ring that starts with the chunk magic. */
    private static void fixCrcs(byte[] ring, int block) {
        for (int off = 0; off + block <= ring.length; off += block) {
            if (!Arrays.equals(ring, off, off + 8, LogFormat.MAGIC, 0, 8)) {
                continue;
            }
            long body = Fuzzing.u32(ring, off + 24);
            if ((int) Fuzzing.u32(ring, off + 28) != PAD && LogFormat.CHUNK_HEADER + body <= ring.length - off) {
                V2FuzzDevice.putU32(ring, off + 32, V2FuzzDevice.crc32c(ring, off + LogFormat.CHUNK_HEADER, (int) body));
            }
            V2FuzzDevice.putU32(ring, off + 36, V2FuzzDevice.crc32c(ring, off, 36));
        }
    }

    /** Snapshot seq 1 in area 0: no salt, no entry, the log from {@code startLsn} (what recovery replays). */
    private static void writeEmptySnapshot(byte[] meta, V2Layout layout, long startLsn) {
        int at = (int) layout.snapshotOffset(0);
        ByteBuffer h = ByteBuffer.wrap(meta, at, layout.blockAlign()).order(ByteOrder.LITTLE_ENDIAN);
        h.put(Snapshots.MAGIC).putLong(layout.incarnation()).putLong(1).putLong(startLsn).putLong(0).putLong(4)
                .putLong(0);
        int body = at + layout.blockAlign();
        V2FuzzDevice.putU32(meta, body, 0); // no salt
        V2FuzzDevice.putU32(meta, at + 56, V2FuzzDevice.crc32c(meta, body, 4));
        V2FuzzDevice.putU32(meta, at + 60, V2FuzzDevice.crc32c(meta, at, 60));
    }
}
