package io.fdpblock.core;

import io.fdpblock.l2.KeyCodec;
import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads what a store left on a device without changing it: both checkpoint containers, the winning
 * checkpoint's layout and entries, usage by cache salt, and (optionally) every entry's slot header.
 */
public final class Inspector {
    private Inspector() {}

    /** One container as found. */
    public record Container(int index, long offset, boolean valid, long seq, long payloadBytes, String problem) {}

    /** A slot header that disagrees with its entry. */
    public record BadSlot(String key, long offset, String problem) {}

    public record Report(List<Container> containers, Integer winner, Map<String, Object> layout, int keys,
            long payloadBytes, Map<String, long[]> bySalt, int slotsChecked, List<BadSlot> badSlots) {}

    /**
     * @param blockAlign where container 0's payload starts (the store's block_align)
     * @param metaTotalBytes the meta area size, used to find container 1 when container 0 says nothing
     */
    public static Report inspect(BlockDevice device, int blockAlign, long metaTotalBytes, boolean verify)
            throws IOException {
        List<MetadataArea.Container> read = new MetadataArea(device, blockAlign, metaTotalBytes).readContainers();
        if (read.get(0).valid()) { // container 0's checkpoint knows where container 1 is
            JsonNode root = CheckpointCodec.decode(read.get(0).payload()).root();
            long meta = root.path("meta_total_bytes").asLong(metaTotalBytes);
            int align = root.path("block_align").asInt(blockAlign);
            if ((meta != metaTotalBytes || align != blockAlign) && align >= 512 && Integer.bitCount(align) == 1
                    && meta >= 4L * align && meta <= device.sizeBytes()) {
                read = new MetadataArea(device, align, meta).readContainers();
            }
        }
        List<Container> containers = new ArrayList<>();
        for (MetadataArea.Container c : read) {
            containers.add(new Container(c.index(), c.offset(), c.valid(), c.header().seq(),
                    c.header().payloadLength(), c.problem()));
        }
        List<MetadataArea.Container> valid = MetadataArea.newestFirst(read);
        if (valid.isEmpty()) {
            return new Report(containers, null, Map.of(), 0, 0, Map.of(), 0, List.of());
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
                    String problem = MetadataArea.slotHeaderProblem(h, e.key(), e.size());
                    if (problem != null) {
                        bad.add(new BadSlot(e.key(), e.offset(), problem));
                    }
                }
            }
        }
        return new Report(containers, winner.index(), layout, d.entries().size(), bytes, bySalt, checked, bad);
    }

    private static MemorySegment read(BlockDevice device, Arena arena, long offset, long length) throws IOException {
        MemorySegment buf = arena.allocate(length, 4096);
        IoBatch b = new IoBatch(1);
        b.read(offset, buf);
        device.execute(b);
        return buf;
    }
}
