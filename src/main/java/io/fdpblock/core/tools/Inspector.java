package io.fdpblock.core.tools;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.core.Detection;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.ProbeContext;
import io.fdpblock.core.SaltTable;
import io.fdpblock.core.StoreFormats;
import io.fdpblock.core.v1.CheckpointCodec;
import io.fdpblock.core.v1.MetadataArea;
import io.fdpblock.core.v2.CompactIndex;
import io.fdpblock.core.v2.KeyListing;
import io.fdpblock.core.v2.LogReader;
import io.fdpblock.core.v2.Snapshots;
import io.fdpblock.core.v2.V2Format;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.core.v2.V2Recovery;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.l2.KeyCodec;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Reads what a store left on a device without changing it. lmcache_v1 ({@link #inspect}): both
 * checkpoint containers, the winning checkpoint's layout and entries, usage by cache salt, and
 * (optionally) every entry's slot header. fdpblock_v2 ({@link #inspectV2}): both superblocks, both
 * snapshot headers, the log after the snapshot recovery applies, and the keys recovery finds, by the
 * store's own decoders and recovery rules.
 */
public final class Inspector {
    private Inspector() {}

    /** One container as found. */
    public record Container(int index, long offset, boolean valid, long seq, long payloadBytes, String problem) {}

    /** A slot header that disagrees with its entry. */
    public record BadSlot(String key, long offset, String problem) {}

    /**
     * An lmcache_v1 device.
     *
     * @param damage container headers or payloads that no crash leaves (a damaged header, the newest
     *        checkpoint's payload failing its CRC): recovery refuses such a store, or falls back and says so
     */
    public record Report(List<Container> containers, Integer winner, Map<String, Object> layout, int keys,
            long payloadBytes, Map<String, long[]> bySalt, int slotsChecked, List<BadSlot> badSlots,
            List<String> damage) {
        public Report(List<Container> containers, Integer winner, Map<String, Object> layout, int keys,
                long payloadBytes, Map<String, long[]> bySalt, int slotsChecked, List<BadSlot> badSlots) {
            this(containers, winner, layout, keys, payloadBytes, bySalt, slotsChecked, badSlots, List.of());
        }
    }

    /** What of {@code read} is damage rather than a checkpoint write a crash cut short. */
    private static List<String> damageOf(List<MetadataArea.Container> read, MetadataArea.Container winner) {
        List<String> out = new ArrayList<>();
        for (MetadataArea.Container c : read) {
            if (c.state() == MetadataArea.State.DAMAGED) {
                out.add("container " + c.index() + " at offset " + c.offset() + ": " + c.problem());
            } else if (c.state() == MetadataArea.State.TORN && c.sealed() && winner != null
                    && c.header().seq() > winner.seq()) {
                out.add("container " + c.index() + " at offset " + c.offset() + " (seq " + c.header().seq()
                        + ", newer than the one applied): " + c.problem());
            }
        }
        return out;
    }

    /**
     * @param blockAlign where container 0's payload starts (the store's block_align)
     * @param metaTotalBytes the meta area size, used to find container 1 when container 0 says nothing
     */
    public static Report inspect(BlockDevice device, int blockAlign, long metaTotalBytes, boolean verify)
            throws IOException {
        List<MetadataArea.Container> read = MetadataArea.readAsRecorded(device, blockAlign, metaTotalBytes);
        List<Container> containers = new ArrayList<>();
        for (MetadataArea.Container c : read) {
            containers.add(new Container(c.index(), c.offset(), c.valid(), c.header().seq(),
                    c.header().payloadLength(), c.problem()));
        }
        List<MetadataArea.Container> valid = MetadataArea.newestFirst(read);
        if (valid.isEmpty()) {
            return new Report(containers, null, Map.of(), 0, 0, Map.of(), 0, List.of(), damageOf(read, null));
        }
        MetadataArea.Container winner = valid.get(0);
        CheckpointCodec.Decoded d = CheckpointCodec.decode(winner.payload());
        Map<String, Object> layout = new LinkedHashMap<>();
        for (String f : List.of("device_path", "capacity_bytes", "block_align", "header_bytes", "slot_bytes",
                "meta_total_bytes", "data_base_offset", "next_slot")) {
            JsonNode n = d.root().get(f);
            layout.put(f, n == null ? null : n.isNumber() ? (Object) n.asLong() : n.asText());
        }
        Map<String, long[]> bySalt = new TreeMap<>();
        long bytes = 0;
        for (CheckpointCodec.RawEntry e : d.entries()) {
            String salt;
            try {
                salt = KeyCodec.decode(e.key()).cacheSalt();
            } catch (IllegalArgumentException ex) {
                salt = "?";
            }
            long[] v = bySalt.computeIfAbsent(salt, k -> new long[2]);
            v[0]++;
            v[1] += e.size();
            bytes += e.size();
        }
        List<BadSlot> bad = new ArrayList<>();
        int checked = 0;
        if (verify) {
            int headerBytes = d.root().path("header_bytes").asInt(4096);
            try (Arena arena = Arena.ofShared()) {
                for (CheckpointCodec.RawEntry e : d.entries()) {
                    OnDiskFormat.SlotHeader h = OnDiskFormat.readSlotHeader(read(device, arena, e.offset(), headerBytes));
                    checked++;
                    String problem = OnDiskFormat.slotHeaderProblem(h, e.key(), e.size());
                    if (problem != null) {
                        bad.add(new BadSlot(e.key(), e.offset(), problem));
                    }
                }
            }
        }
        return new Report(containers, winner.index(), layout, d.entries().size(), bytes, bySalt, checked, bad,
                damageOf(read, winner));
    }

    // ------------------------------------------------------------------ fdpblock_v2

    /** One superblock copy as found; {@code layout} when valid. */
    public record Superblock(String copy, long offset, boolean valid, String problem, Map<String, Object> layout) {}

    /**
     * One snapshot area's header as found.
     *
     * @param bodyCrcOk whether the body matches its header's CRC32C (null without a valid header)
     * @param applied whether recovery loads this one
     */
    public record Snapshot(int area, long offset, boolean valid, String problem, long seq, long startLsn, long entries,
            long bodyBytes, long nextSlot, Boolean bodyCrcOk, boolean applied) {}

    /**
     * The log after the applied snapshot's start, as recovery replays it.
     *
     * @param end why the replay stopped at {@code endLsn}
     * @param tornTail whether the chunk there is one of the log's, cut off or damaged (ignored)
     */
    public record Log(long offset, long bytes, long startLsn, long endLsn, long chunks, long records, long puts,
            long deletes, long salts, String end, boolean tornTail) {}

    /**
     * An fdpblock_v2 device.
     *
     * @param keys the keys recovery finds, or null when it would refuse the store (its notes say why)
     */
    public record V2Report(List<Superblock> superblocks, Map<String, Object> layout, List<Snapshot> snapshots, Log log,
            List<String> notes, Integer keys, long payloadBytes, Map<String, long[]> bySalt, int slotsChecked,
            List<BadSlot> badSlots) {
        /** Recovery would open it, and every slot header checked names its entry's key. */
        public boolean healthy() {
            return keys != null && badSlots.isEmpty();
        }
    }

    /**
     * @param blockAlign where superblock copy B is looked for when copy A is not valid
     * @param verify read every entry's slot header: the key it names, checked against the entry
     * @return null when the device holds no fdpblock_v2 superblock (an lmcache_v1 container header at
     *         offset 0 wins: which format a device holds is told by the rule a store's open uses)
     */
    public static V2Report inspectV2(BlockDevice device, int blockAlign, boolean verify) throws IOException {
        StoreFormats.Found found = StoreFormats.find(ProbeContext.ofDevice(device, blockAlign, null));
        if (found == null || !found.format().name().equals(V2Format.NAME)) {
            return null;
        }
        V2Layout layout = found.detection().kind() == Detection.Kind.STORE ? V2Format.readSuperblock(device, blockAlign)
                : null;
        List<Superblock> supers = new ArrayList<>(2);
        int align = layout != null ? layout.blockAlign() : blockAlign;
        try (Arena arena = Arena.ofShared()) {
            for (int copy = 0; copy < 2; copy++) {
                long off = (long) copy * align;
                MemorySegment block = read(device, arena, off, align);
                V2Layout l = V2Layout.read(block);
                String problem = l != null ? null : V2Layout.hasMagic(block)
                        ? "damaged (bad CRC32C or impossible geometry)" : "no FDPBSB02 superblock";
                supers.add(new Superblock(copy == 0 ? "A" : "B", off, l != null, problem, l == null ? null : describe(l)));
            }
        }
        List<String> notes = new ArrayList<>();
        if (layout == null) {
            notes.add("both superblocks are damaged: the store's layout is unknown, and it would be refused");
            return new V2Report(supers, Map.of(), List.of(), null, notes, null, 0, Map.of(), 0, List.of());
        }
        if (supers.get(0).valid() && supers.get(1).valid() && !supers.get(0).layout().equals(supers.get(1).layout())) {
            notes.add("the two superblock copies differ; copy A is the one used");
        }
        List<Snapshots.Area> areas = Snapshots.areas(device, layout);
        List<Snapshots.Header> headers = Snapshots.headers(device, layout);
        int maxSlots = (int) layout.maxSlots();
        CompactIndex index = new CompactIndex(maxSlots);
        try {
            SaltTable salts = new SaltTable();
            V2Recovery.Outcome o = V2Recovery.run(device, layout, maxSlots, headers, index, salts);
            List<Snapshot> snapshots = new ArrayList<>(2);
            for (Snapshots.Area a : areas) {
                Snapshots.Header h = a.header();
                snapshots.add(h == null ? new Snapshot(a.area(), a.offset(), false, a.problem(), 0, 0, 0, 0, 0, null, false)
                        : new Snapshot(a.area(), a.offset(), true, null, h.seq(), h.startLsn(), h.entries(), h.bodyBytes(),
                                h.nextSlot(), Snapshots.bodyChecks(device, layout, h), h.equals(o.snapshot())));
            }
            notes.addAll(o.notes());
            LogReader.Replay r = o.log();
            Log log = new Log(layout.logOffset(), layout.logBytes(), o.startLsn(), r.endLsn(), r.chunks(), o.records(),
                    o.puts(), o.deletes(), o.saltRecords(), r.stop(), r.torn());
            if (o.snapshot() == null && !headers.isEmpty()) {
                notes.add("every snapshot fails its CRC: recovery would refuse the store");
                return new V2Report(supers, describe(layout), snapshots, log, notes, null, 0, Map.of(), 0, List.of());
            }
            if (headers.isEmpty() && areas.stream().anyMatch(Snapshots.Area::damaged)) {
                notes.add("DAMAGED: no snapshot header is valid and at least one is damaged: recovery would refuse"
                        + " the store (open_damaged opens what the log from LSN 0 still holds)");
                return new V2Report(supers, describe(layout), snapshots, log, notes, null, 0, Map.of(), 0, List.of());
            }
            if (o.logDamaged()) {
                LogReader.Beyond b = o.beyond();
                notes.add("DAMAGED: the log stops at LSN " + r.endLsn() + " (" + r.stop() + "), yet " + b.chunks()
                        + " intact chunks of later commits follow it (the first at LSN " + b.firstLsn() + ") with "
                        + b.puts() + " puts: recovery would refuse the store (open_damaged opens the " + index.size()
                        + " keys before the damage)");
                return new V2Report(supers, describe(layout), snapshots, log, notes, null, 0, Map.of(), 0, List.of());
            }
            Map<String, long[]> bySalt = new TreeMap<>();
            List<BadSlot> bad = new ArrayList<>();
            long[] totals = new long[2]; // payload bytes, slots checked
            long[] reused = {0};
            KeyListing.forEach(device, layout.dataBase(), layout.slotBytes(), layout.headerBytes(), index,
                    new ReentrantLock(), verify, (h1, h2, slot, size, crc, saltId, h) -> {
                        String salt = salts.salt(saltId);
                        long[] v = bySalt.computeIfAbsent(salt == null ? "?" : salt, k -> new long[2]);
                        v[0]++;
                        v[1] += size;
                        totals[0] += size;
                        if (h != null) {
                            totals[1]++;
                            String problem = KeyListing.headerProblem(h, h1, h2, size);
                            if (problem != null && h.magicOk() && h.key() != null && problem.startsWith("names ")) {
                                reused[0]++; // another key's header: the slot was reused before this delete was durable
                            } else if (problem != null) {
                                bad.add(new BadSlot(h.key() != null ? h.key() : "(slot " + slot + ")",
                                        layout.dataBase() + slot * layout.slotBytes(), problem));
                            }
                        }
                    });
            if (reused[0] > 0) {
                notes.add(reused[0] + " entries point at slots whose header names another key: the slot was given to"
                        + " that key before the entry's delete was durable (a crash or power loss soon after deletes);"
                        + " loads of these entries are misses (their CRC32C does not match), and nothing is lost");
            }
            return new V2Report(supers, describe(layout), snapshots, log, notes, index.size(), totals[0], bySalt,
                    (int) totals[1], bad);
        } finally {
            index.close();
        }
    }

    private static Map<String, Object> describe(V2Layout l) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("block_align", (long) l.blockAlign());
        m.put("header_bytes", (long) l.headerBytes());
        m.put("slot_bytes", l.slotBytes());
        m.put("capacity_bytes", l.capacityBytes());
        m.put("meta_total_bytes", l.metaTotalBytes());
        m.put("data_base", l.dataBase());
        m.put("snapshot_area_bytes", l.snapshotBytes());
        m.put("log_offset", l.logOffset());
        m.put("log_bytes", l.logBytes());
        m.put("max_slots", l.maxSlots());
        m.put("incarnation", String.format("%016x", l.incarnation()));
        return m;
    }

    private static MemorySegment read(BlockDevice device, Arena arena, long offset, long length) throws IOException {
        MemorySegment buf = arena.allocate(length, 4096);
        IoBatch b = new IoBatch(1);
        b.read(offset, buf);
        device.execute(b);
        return buf;
    }
}
