package io.fdpblock.core.v1;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.core.ForeignData;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.nvme.PlacementId;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.zip.CRC32;

/**
 * The mirrored checkpoint containers at the start of a device (LMCache raw_block state v1): reading
 * and checking them, choosing which to trust, telling a new device from a foreign one, writing a
 * checkpoint in the order that makes it durable, and checking a slot header against its entry. The
 * store and the read-only inspector share this one reading of the format.
 */
public final class MetadataArea {
    /** The start of a v1 checkpoint payload: how the store recognises its own never-committed checkpoint. */
    private static final byte[] V1_PAYLOAD_PREFIX = "{\"version\":".getBytes(StandardCharsets.US_ASCII);
    /** Read granularity here; a buffer of it also serves {@link ForeignData#firstIn}. */
    private static final int SCAN_CHUNK = ForeignData.SCAN_CHUNK;

    private final BlockDevice device;
    private final int blockAlign;
    private final long metaTotalBytes;
    private final long containerBytes;

    public MetadataArea(BlockDevice device, int blockAlign, long metaTotalBytes) {
        this.device = device;
        this.blockAlign = blockAlign;
        this.metaTotalBytes = metaTotalBytes;
        this.containerBytes = metaTotalBytes / 2 / blockAlign * blockAlign;
    }

    long containerBytes() {
        return containerBytes;
    }

    /** Bytes of checkpoint payload one container holds. */
    public long payloadRoom() {
        return containerBytes - blockAlign;
    }

    public long containerOffset(int c) {
        return c * containerBytes;
    }

    /** What a container's header block says, as far as recovery is concerned. */
    public enum State {
        /** A header whose payload checks out: a committed checkpoint. */
        VALID,
        /**
         * An intact header (fdpblock's, or LMCache's) whose payload does not match it: the payload of a
         * newer checkpoint was being written over it, or the payload was damaged.
         */
        TORN,
        /** Bytes 0..63 all zero: never written, or zeroed. */
        BLANK,
        /** fdpblock's reserved header: nothing was ever committed here. */
        RESERVED,
        /** A header block that no write of a checkpoint leaves: garbage, a broken seal, a header that disagrees with it. */
        DAMAGED
    }

    /**
     * One container as read.
     *
     * @param sealed the header carries fdpblock's seal and agrees with it: fdpblock wrote it, payload first
     * @param payload the checked payload, or null when {@link #problem} says why not
     * @param unchecked a TORN container's payload as read (its header's length), which failed its CRC-32
     */
    public record Container(int index, long offset, ContainerFormat.ContainerHeader header, State state, boolean sealed,
            byte[] payload, byte[] unchecked, String problem) {
        public boolean valid() {
            return problem == null;
        }

        public long seq() {
            return header.seq();
        }

        String where() {
            return "container " + index + " (header at offset " + offset + ")";
        }
    }

    /** Reads both containers: header plausibility, then the payload and its CRC-32. */
    public List<Container> readContainers() throws IOException {
        List<Container> out = new ArrayList<>(2);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment blocks = arena.allocate(2L * blockAlign, blockAlign);
            IoBatch b = new IoBatch(2);
            b.read(0, blocks.asSlice(0, blockAlign));
            b.read(containerBytes, blocks.asSlice(blockAlign, blockAlign));
            device.execute(b);
            for (int c = 0; c < 2; c++) {
                ContainerFormat.ContainerHeader h = ContainerFormat.readContainerHeader(
                        blocks.asSlice((long) c * blockAlign, blockAlign));
                out.add(check(c, h));
            }
        }
        return out;
    }

    private Container check(int c, ContainerFormat.ContainerHeader h) throws IOException {
        long off = containerOffset(c);
        ContainerFormat.Seal seal = h.seal();
        if (h.blank()) {
            return new Container(c, off, h, State.BLANK, false, null, null, "no header (its bytes are all zeros)");
        }
        if (seal != null && !seal.intact()) {
            return damaged(c, h, "its fdpblock seal (bytes " + ContainerFormat.SEAL_OFFSET + ".."
                    + (ContainerFormat.SEAL_OFFSET + ContainerFormat.SEAL_BYTES - 1) + ") fails its CRC32C");
        }
        if (seal != null && seal.reserved() && h.headZero()) {
            return new Container(c, off, h, State.RESERVED, false, null, null, "reserved by fdpblock, no checkpoint"
                    + " committed yet");
        }
        // a seal that disagrees with bytes 12..31: damage, unless a writer that knows no seal (LMCache)
        // rewrote bytes 0..31 with a header of its own that checks out against its payload
        boolean sealed = seal != null && !seal.reserved() && h.sealMatches() && h.magicOk();
        boolean sealDisagrees = seal != null && !seal.reserved() && !sealed; // over a reserved one: LMCache's
        if (!h.magicOk()) {
            return damaged(c, h, "no LMCIDX01 header");
        }
        if (!h.plausible(payloadRoom())) {
            return damaged(c, h, "implausible header (version " + h.version() + ", seq " + h.seq() + ", payload length "
                    + h.payloadLength() + " of at most " + payloadRoom() + ")");
        }
        byte[] read = read(off + blockAlign, Math.min(payloadRoom(), h.payloadLength() + ContainerFormat.TRAILER_BYTES));
        byte[] payload = Arrays.copyOf(read, (int) h.payloadLength());
        CRC32 crc = new CRC32();
        crc.update(payload);
        boolean crcOk = (int) crc.getValue() == h.crc32();
        if (sealDisagrees) {
            if (crcOk && (seal.payloadLength() != h.payloadLength() || seal.crc32() != h.crc32())) {
                sealed = false; // LMCache's header over a block we had sealed: its own, and it checks out
            } else {
                return damaged(c, h, "the header (seq " + h.seq() + ", length " + h.payloadLength() + ", CRC-32 "
                        + hex32(h.crc32()) + ") disagrees with its fdpblock seal (seq " + seal.seq() + ", length "
                        + seal.payloadLength() + ", CRC-32 " + hex32(seal.crc32()) + ")");
            }
        }
        if (!crcOk) {
            return new Container(c, off, h, State.TORN, sealed, null, payload, "payload fails its CRC-32");
        }
        if (sealed) {
            ContainerFormat.Trailer t = read.length >= h.payloadLength() + ContainerFormat.TRAILER_BYTES
                    ? ContainerFormat.readTrailer(MemorySegment.ofArray(read).asSlice(h.payloadLength())) : null;
            if (t != null && (t.seq() != h.seq() || t.jsonLength() != h.payloadLength() || t.jsonCrc32() != h.crc32())) {
                return damaged(c, h, "the header (seq " + h.seq() + ", length " + h.payloadLength() + ") disagrees with"
                        + " its payload's trailer (seq " + t.seq() + ", length " + t.jsonLength() + ")");
            }
        }
        return new Container(c, off, h, State.VALID, sealed, payload, null, null);
    }

    private Container damaged(int c, ContainerFormat.ContainerHeader h, String problem) {
        return new Container(c, containerOffset(c), h, State.DAMAGED, false, null, null, problem);
    }

    static String hex32(int v) {
        return String.format("0x%08x", v);
    }

    /**
     * A checkpoint found by its trailer in a container whose header cannot say what it holds: its JSON
     * is complete (the trailer's CRC-32 checks out against it).
     */
    record Orphan(int container, long seq, byte[] json) {}

    /**
     * Reads the payload area of container {@code c} up to the first zero byte (checkpoint JSON holds
     * none) and the trailer there.
     *
     * @return the checkpoint, or null when there is no intact trailer whose CRC-32 matches the JSON
     *     before it, or the trailer's seq does not belong in this container
     */
    Orphan orphan(int c) throws IOException {
        long base = containerOffset(c) + blockAlign;
        long room = payloadRoom();
        ByteArrayOutputStream json = new ByteArrayOutputStream();
        long end = -1;
        for (long pos = 0; pos < room && end < 0; pos += SCAN_CHUNK) {
            byte[] chunk = read(base + pos, Math.min(SCAN_CHUNK, room - pos));
            int z = 0;
            while (z < chunk.length && chunk[z] != 0) {
                z++;
            }
            json.write(chunk, 0, z);
            if (z < chunk.length) {
                end = pos + z;
            }
        }
        if (end <= 0 || end + ContainerFormat.TRAILER_BYTES > room) {
            return null;
        }
        long at = base + end;
        long start = at / blockAlign * blockAlign;
        byte[] around = read(start, OnDiskFormat.roundUp(at + ContainerFormat.TRAILER_BYTES - start, blockAlign));
        ContainerFormat.Trailer t = ContainerFormat.readTrailer(MemorySegment.ofArray(around).asSlice(at - start));
        byte[] bytes = json.toByteArray();
        CRC32 crc = new CRC32();
        crc.update(bytes);
        if (t == null || t.jsonLength() != end || t.jsonCrc32() != (int) crc.getValue() || t.seq() <= 0
                || (t.seq() - 1) % 2 != c) {
            return null;
        }
        return new Orphan(c, t.seq(), bytes);
    }

    /** Whether container {@code c}'s payload area starts like checkpoint JSON. */
    boolean holdsCheckpointJson(int c) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            return startsWithOurPayload(containerOffset(c) + blockAlign, arena.allocate(blockAlign, blockAlign));
        }
    }

    /** The valid containers, newest (highest seq) first. */
    public static List<Container> newestFirst(List<Container> containers) {
        return containers.stream().filter(Container::valid).sorted(Comparator.comparingLong(Container::seq).reversed())
                .toList();
    }

    /** What an area without a valid container holds. */
    public sealed interface Contents {
        /** Never written: a new store. */
        record Zeros() implements Contents {}

        /** The empty checkpoint a new store commits first, cut off before its header: nothing was committed. */
        record UncommittedCheckpoint() implements Contents {}

        /** Our container headers, none of them usable: an existing store that cannot be read. */
        record Unreadable(String problems) implements Contents {}

        /** Bytes this store did not write (another store's format, a file system, a partition table...). */
        record Foreign(ForeignData found) implements Contents {}
    }

    /** Classifies an area in which {@code containers} (from {@link #readContainers()}) has no valid one. */
    Contents classify(List<Container> containers) throws IOException {
        StringBuilder problems = new StringBuilder();
        boolean anyMagic = false;
        for (Container c : containers) {
            // a header, or a seal, of ours (a reserved one commits nothing: the area may still be new)
            ContainerFormat.Seal seal = c.header().seal();
            anyMagic |= c.header().magicOk() || (seal != null && seal.intact() && !seal.reserved());
            problems.append(problems.isEmpty() ? "" : "; ").append("container ").append(c.index()).append(": ")
                    .append(c.problem());
        }
        if (anyMagic) {
            return new Contents.Unreadable(problems.toString());
        }
        boolean uncommitted = false;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(SCAN_CHUNK, blockAlign);
            for (int c = 0; c < 2; c++) {
                long header = containerOffset(c);
                Contents foreign = containers.get(c).state() == State.RESERVED ? null
                        : foreignIn(header, header + blockAlign, buf);
                if (foreign != null) {
                    return foreign;
                }
                long payload = header + blockAlign;
                if (startsWithOurPayload(payload, buf)) {
                    // A store commits an empty checkpoint (seq 1, container 0) before anything else, and
                    // format zeroes the start of both payloads: any other JSON of ours without its header
                    // is a committed store whose headers were destroyed, never something to start over on.
                    String headless = c == 0 ? headlessCheckpointProblem(payload, buf) : "checkpoint JSON without"
                            + " its header (only checkpoints after the first go there)";
                    if (headless != null) {
                        return new Contents.Unreadable(problems + "; container " + c + "'s payload area holds "
                                + headless + ": the store's container headers were overwritten or zeroed");
                    }
                    uncommitted = true; // the rest of this payload area is our JSON (and older bytes of ours)
                    continue;
                }
                foreign = foreignIn(payload, header + containerBytes, buf);
                if (foreign != null) {
                    return foreign;
                }
            }
            Contents foreign = foreignIn(2 * containerBytes, metaTotalBytes, buf);
            if (foreign != null) {
                return foreign;
            }
        }
        return uncommitted ? new Contents.UncommittedCheckpoint() : new Contents.Zeros();
    }

    /** @return the first non-zero byte of [{@code from}, {@code to}) as {@link Contents.Foreign}, or null */
    private Contents foreignIn(long from, long to, MemorySegment buf) throws IOException {
        ForeignData found = ForeignData.firstIn(device, from, to, buf);
        return found == null ? null : new Contents.Foreign(found);
    }

    /**
     * Reads the checkpoint JSON that starts at {@code offset} (up to its first zero byte, within 1 MiB).
     *
     * @return null when it is the empty checkpoint a new store commits first, else what it is
     */
    private String headlessCheckpointProblem(long offset, MemorySegment buf) throws IOException {
        MemorySegment chunk = buf.asSlice(0, Math.min(SCAN_CHUNK, payloadRoom()));
        IoBatch b = new IoBatch(1);
        b.read(offset, chunk);
        device.execute(b);
        long end = firstZero(chunk);
        if (end < 0) {
            return "checkpoint JSON of more than " + chunk.byteSize() + " bytes without its header";
        }
        try {
            int entries = CheckpointCodec.decode(chunk.asSlice(0, end).toArray(ValueLayout.JAVA_BYTE)).entries().size();
            return entries == 0 ? null : "a checkpoint of " + entries + " keys without its header";
        } catch (IOException | RuntimeException e) {
            String why = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
            return "checkpoint JSON without its header that does not parse (" + why + ")";
        }
    }

    private static long firstZero(MemorySegment seg) {
        for (long i = 0; i < seg.byteSize(); i++) {
            if (seg.get(ValueLayout.JAVA_BYTE, i) == 0) {
                return i;
            }
        }
        return -1;
    }

    private boolean startsWithOurPayload(long offset, MemorySegment buf) throws IOException {
        MemorySegment block = buf.asSlice(0, blockAlign);
        IoBatch b = new IoBatch(1);
        b.read(offset, block);
        device.execute(b);
        for (int i = 0; i < V1_PAYLOAD_PREFIX.length; i++) {
            if (block.get(ValueLayout.JAVA_BYTE, i) != V1_PAYLOAD_PREFIX[i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * Writes checkpoint {@code seq} into its container ({@code (seq - 1) % 2}): the payload (the JSON,
     * then fdpblock's trailer when it fits), a flush (the payload, and every slot written before it, is
     * durable), then the header that commits it, and a flush. A crash at any point leaves the other
     * container as the newest valid one, and this container's header as it was.
     *
     * <p>A container whose header block is all zeros gets a reserved header before its payload (flushed
     * first), and a new store's first checkpoint reserves container 1's in the same batch as its payload,
     * so that once anything was committed a header of zeros is damage, never an interrupted write.
     * Container 0 is the exception for the first checkpoint: its empty payload without a header is a
     * store that was never committed.
     */
    public void write(long seq, byte[] payload, PlacementId placement) throws IOException {
        if (payload.length > payloadRoom()) {
            throw new IOException("checkpoint " + seq + " of " + payload.length + " bytes does not fit a container of "
                    + payloadRoom());
        }
        int target = (int) ((seq - 1) % 2);
        int other = 1 - target;
        long base = containerOffset(target);
        CRC32 crc = new CRC32();
        crc.update(payload);
        boolean trailer = payload.length + ContainerFormat.TRAILER_BYTES <= payloadRoom();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment headers = arena.allocate(2L * blockAlign, blockAlign);
            IoBatch b = new IoBatch(2);
            b.read(containerOffset(0), headers.asSlice(0, blockAlign));
            b.read(containerOffset(1), headers.asSlice(blockAlign, blockAlign));
            device.execute(b);
            boolean[] blank = new boolean[2];
            for (int c = 0; c < 2; c++) {
                blank[c] = ContainerFormat.readContainerHeader(headers.asSlice((long) c * blockAlign, blockAlign))
                        .blank();
            }
            MemorySegment reserved = arena.allocate(blockAlign, blockAlign);
            ContainerFormat.writeReservedHeader(reserved);
            b.reset();
            if (blank[target] && seq > 1) {
                b.write(base, reserved, placement);
                device.execute(b);
                device.flush();
                b.reset();
            }
            long len = payload.length + (trailer ? ContainerFormat.TRAILER_BYTES : 0);
            MemorySegment data = arena.allocate(OnDiskFormat.roundUp(len, blockAlign), blockAlign);
            MemorySegment.copy(payload, 0, data, ValueLayout.JAVA_BYTE, 0, payload.length);
            if (trailer) {
                ContainerFormat.writeTrailer(data, payload.length, seq, payload.length, (int) crc.getValue());
            }
            b.write(base + blockAlign, data, placement);
            if (seq == 1 && blank[other]) {
                b.write(containerOffset(other), reserved, placement);
            }
            device.execute(b); // waits for the completion, whatever happens: the arena outlives the I/O
            device.flush();
            MemorySegment header = arena.allocate(blockAlign, blockAlign);
            ContainerFormat.writeContainerHeader(header, seq, payload.length, (int) crc.getValue());
            b.reset();
            b.write(base, header, placement);
            device.execute(b);
            device.flush();
        }
    }

    /**
     * Formats the area, as asked by {@code "format": true}: zeroes all of it (headers first), so that it
     * reads as a new device's: no checkpoint, and no old JSON that {@link #classify} would take for a store
     * whose headers were destroyed. A crash part way leaves the old store, a refusal (format again) or
     * the zeroed area, never an old checkpoint's keys in a store opened as new.
     */
    void format() throws IOException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment zero = arena.allocate(SCAN_CHUNK, blockAlign);
            IoBatch b = new IoBatch(2);
            b.write(containerOffset(0), zero.asSlice(0, blockAlign));
            b.write(containerOffset(1), zero.asSlice(0, blockAlign));
            device.execute(b);
            device.flush(); // no checkpoint any more, before the payloads go
            IoBatch each = new IoBatch(1);
            for (long off = 0; off < metaTotalBytes; off += SCAN_CHUNK) {
                each.reset();
                each.write(off, zero.asSlice(0, Math.min(SCAN_CHUNK, metaTotalBytes - off)));
                device.execute(each);
            }
            device.flush();
        }
    }

    private byte[] read(long offset, long length) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(OnDiskFormat.roundUp(length, blockAlign), blockAlign);
            IoBatch b = new IoBatch(1);
            b.read(offset, buf);
            device.execute(b);
            return buf.asSlice(0, length).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /**
     * Both containers, found where container 0's checkpoint says they lie when it is valid (its
     * {@code block_align} and {@code meta_total_bytes}), else where the given sizes put them.
     */
    public static List<Container> readAsRecorded(BlockDevice device, int blockAlign, long metaTotalBytes)
            throws IOException {
        List<Container> read = new MetadataArea(device, blockAlign, metaTotalBytes).readContainers();
        if (read.get(0).valid()) { // container 0's checkpoint knows where container 1 is
            JsonNode root = CheckpointCodec.decode(read.get(0).payload()).root();
            long meta = root.path("meta_total_bytes").asLong(metaTotalBytes);
            int align = root.path("block_align").asInt(blockAlign);
            if ((meta != metaTotalBytes || align != blockAlign) && align >= 512 && Integer.bitCount(align) == 1
                    && meta >= 4L * align && meta <= device.sizeBytes()) {
                read = new MetadataArea(device, align, meta).readContainers();
            }
        }
        return read;
    }
}
