package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What open does with what a device holds. Never formats by itself: a new device (metadata area all
 * zeros, or only the empty first checkpoint a new store commits, cut off before its header) starts
 * empty; a valid checkpoint is applied
 * (the newest first, the older one when the newest cannot be applied, said in the note); a checkpoint
 * written with another layout, foreign bytes, or checkpoints that are all unreadable refuse the open
 * and write nothing. {@code "format": true} is the only way to discard a device's contents.
 */
final class Recovery {
    /** Slot headers read per batch when verifying. */
    private static final int VERIFY_BATCH = 256;

    /**
     * The outcome.
     *
     * @param damage what was found damaged and opened anyway ({@code open_damaged}), or null
     * @param lostKeys durable keys known lost to that damage (-1: unknown how many)
     */
    record Result(long seq, String note, int recoveredKeys, int droppedKeys, boolean fellBack, String damage,
            long lostKeys) {
        Result(long seq, String note, int recoveredKeys, int droppedKeys, boolean fellBack) {
            this(seq, note, recoveredKeys, droppedKeys, fellBack, null, 0);
        }
    }

    private final RawBlockCoreConfig config;
    private final BlockDevice device;
    private final MetadataArea area;
    private final CheckpointCodec.Layout layout;
    private final HeapKeyIndex index;
    private final SaltTable salts;
    private final SlotAllocator slots;
    private final long dataBase;
    private final long slotBytes;
    private final int headerBytes;
    private final int blockAlign;

    Recovery(RawBlockCoreConfig config, BlockDevice device, MetadataArea area, CheckpointCodec.Layout layout,
            HeapKeyIndex index, SlotAllocator slots, SaltTable salts) {
        this.salts = salts;
        this.config = config;
        this.device = device;
        this.area = area;
        this.layout = layout;
        this.index = index;
        this.slots = slots;
        this.dataBase = layout.dataBaseOffset();
        this.slotBytes = layout.slotBytes();
        this.headerBytes = layout.headerBytes();
        this.blockAlign = layout.blockAlign();
    }

    Result run() throws IOException {
        if (config.format()) {
            area.format();
            slots.rebuild(0, new boolean[0], null);
            String note = "formatted as asked (format: true): whatever " + device.path() + " held is discarded";
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "raw_block: " + note);
            return new Result(0, note, 0, 0, false);
        }
        List<MetadataArea.Container> containers = area.readContainers();
        List<MetadataArea.Container> valid = MetadataArea.newestFirst(containers);
        if (valid.isEmpty()) {
            return newStore(area.classify(containers));
        }
        if (!config.loadCheckpointOnInit()) {
            throw new StoreRefusedException(StoreRefusedException.Reason.WOULD_DISCARD, device.path() + " holds a store"
                    + " (checkpoint seq " + valid.get(0).seq() + "); load_checkpoint_on_init = false would discard it:"
                    + " set it to true to recover it, or set \"format\": true to start over (its keys are then lost)");
        }
        List<String> notes = new ArrayList<>();
        for (MetadataArea.Container c : containers) {
            // a damaged checkpoint newer than every valid one: whatever is applied is a fall-back
            if (!c.valid() && c.header().magicOk() && c.seq() > valid.get(0).seq()) {
                notes.add("container " + c.index() + " (seq " + c.seq() + "): " + c.problem());
            }
        }
        for (MetadataArea.Container c : valid) {
            String where = "container " + c.index() + " (seq " + c.seq() + ")";
            CheckpointCodec.Decoded decoded;
            try {
                decoded = CheckpointCodec.decode(c.payload());
            } catch (IOException | RuntimeException e) {
                notes.add(where + ": unreadable JSON (" + e.getMessage() + ")");
                continue;
            }
            CheckpointCodec.Mismatch mismatch = CheckpointCodec.layoutMismatch(decoded.root(), layout);
            if (mismatch != null) {
                throw new StoreRefusedException(StoreRefusedException.Reason.LAYOUT_MISMATCH, "raw_block on "
                        + device.path() + ": the store's checkpoint (" + where + ") was written with another layout: "
                        + mismatch + ". Nothing was changed: open it with " + mismatch.field() + " = "
                        + mismatch.stored() + ", or set \"format\": true to discard it");
            }
            Long next = decoded.nextSlot();
            if (next == null || next < 0 || next > slots.maxSlots()) {
                notes.add(where + ": next_slot " + next + " is outside 0.." + slots.maxSlots());
                continue;
            }
            return apply(decoded, c, notes);
        }
        throw new StoreRefusedException(StoreRefusedException.Reason.UNREADABLE, "raw_block on " + device.path()
                + ": the store's checkpoints cannot be applied (" + String.join("; ", notes) + "). Nothing was"
                + " changed; \"format\": true starts over (its keys are then lost)");
    }

    private Result newStore(MetadataArea.Contents contents) throws IOException {
        String note = switch (contents) {
            case MetadataArea.Contents.Zeros z -> "new store: the metadata area is all zeros";
            case MetadataArea.Contents.UncommittedCheckpoint u -> "new store: its empty first checkpoint was cut off"
                    + " before its header, so nothing had been committed yet";
            case MetadataArea.Contents.Unreadable u -> throw new StoreRefusedException(
                    StoreRefusedException.Reason.UNREADABLE, "raw_block on " + device.path() + ": the store's"
                    + " checkpoints cannot be read (" + u.problems() + "). Nothing was changed; \"format\": true starts"
                    + " over (its keys are then lost)");
            case MetadataArea.Contents.Foreign f -> throw new StoreRefusedException(
                    StoreRefusedException.Reason.FOREIGN_DATA, "raw_block on " + device.path() + ": the metadata area"
                    + " holds data this store did not write (non-zero bytes at offset " + f.offset() + ": " + f.firstBytes()
                    + "), e.g. a file system or another program's data. Nothing was changed; if the device may be"
                    + " overwritten, set \"format\": true");
        };
        slots.rebuild(0, new boolean[0], null);
        RawBlockCore.LOG.log(System.Logger.Level.INFO, "raw_block on " + device.path() + ": " + note);
        return new Result(0, note, 0, 0, false);
    }

    private Result apply(CheckpointCodec.Decoded decoded, MetadataArea.Container from, List<String> notes)
            throws IOException {
        int maxSlots = slots.maxSlots();
        boolean[] used = new boolean[maxSlots];
        int skipped = 0;
        int highest = -1;
        long maxPayload = slotBytes - headerBytes;
        for (CheckpointCodec.RawEntry re : decoded.entries()) {
            long rel = re.offset() - dataBase;
            if (!validKey(re.key()) || rel < 0 || rel % slotBytes != 0 || rel / slotBytes >= maxSlots
                    || re.size() <= 0 || re.size() > maxPayload || used[(int) (rel / slotBytes)]) {
                skipped++;
                continue;
            }
            int slot = (int) (rel / slotBytes);
            used[slot] = true;
            highest = Math.max(highest, slot);
            index.put(re.key(), slot, (int) re.size(), 0, false, re.meta(), salts.idOf(SaltTable.saltOf(re.key())));
        }
        int nextSlot = (int) Math.max(decoded.nextSlot(), highest + 1);
        int dropped = config.metaVerifyOnLoad() ? verifySlotHeaders(used) : 0;
        slots.rebuild(nextSlot, used, null);
        boolean fellBack = !notes.isEmpty();
        String note = "recovered " + index.size() + " keys from checkpoint seq " + from.seq()
                + (skipped > 0 ? ", skipped " + skipped + " bad entries" : "")
                + (dropped > 0 ? ", dropped " + dropped + " whose slot header disagreed" : "")
                + (fellBack ? "; fell back to container " + from.index() + " because the newer one could not be"
                        + " applied: " + String.join("; ", notes) : "");
        RawBlockCore.LOG.log(fellBack ? System.Logger.Level.WARNING : System.Logger.Level.INFO, "raw_block on "
                + device.path() + ": " + note);
        return new Result(from.seq(), note, index.size(), dropped, fellBack);
    }

    private static boolean validKey(String key) {
        try {
            PutRequest.checkKey(key);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * Reads every entry's slot header; drops entries whose magic, identity or length disagree and takes
     * the payload CRC from headers that carry one.
     *
     * @return how many were dropped
     */
    private int verifySlotHeaders(boolean[] used) throws IOException {
        List<Map.Entry<String, StoreIndex.Found>> all = new ArrayList<>();
        index.forEach((k, e) -> all.add(Map.entry(k, e)));
        int dropped = 0;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate((long) VERIFY_BATCH * headerBytes, blockAlign);
            IoBatch b = new IoBatch(VERIFY_BATCH);
            for (int from = 0; from < all.size(); from += VERIFY_BATCH) {
                int to = Math.min(all.size(), from + VERIFY_BATCH);
                b.reset();
                for (int i = from; i < to; i++) {
                    b.read(dataBase + (long) all.get(i).getValue().slot() * slotBytes,
                            buf.asSlice((long) (i - from) * headerBytes, headerBytes));
                }
                device.execute(b); // uninterruptible: the arena outlives every read
                for (int i = from; i < to; i++) {
                    String key = all.get(i).getKey();
                    StoreIndex.Found e = all.get(i).getValue();
                    OnDiskFormat.SlotHeader h = OnDiskFormat.readSlotHeader(
                            buf.asSlice((long) (i - from) * headerBytes, headerBytes));
                    if (MetadataArea.slotHeaderProblem(h, key, e.size()) != null) {
                        index.remove(key, true);
                        used[e.slot()] = false;
                        dropped++;
                    } else if (h.hasCrc()) {
                        index.setCrc(key, h.crc32c());
                    }
                }
            }
        }
        if (dropped > 0) {
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "raw_block on " + device.path() + ": dropped " + dropped
                    + " recovered keys whose slot header disagrees (magic, identity or length)");
        }
        return dropped;
    }
}
