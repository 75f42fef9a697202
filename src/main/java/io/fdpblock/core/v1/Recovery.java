package io.fdpblock.core.v1;

import io.fdpblock.core.ForeignData;
import io.fdpblock.core.LayoutMismatch;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.RecoveryResult;
import io.fdpblock.core.SaltTable;
import io.fdpblock.core.SlotAllocator;
import io.fdpblock.core.StoreIndex;
import io.fdpblock.core.StoreKey;
import io.fdpblock.core.StoreRefusedException;
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
 * empty; the newest valid checkpoint is applied. Damage is never taken for an empty or smaller store:
 * a newer checkpoint that the other container's header, seal or trailer shows was committed and is
 * damaged refuses the open ({@code DAMAGED}) unless {@code open_damaged} asks for what is readable; an
 * older checkpoint is applied in its place only when a crash explains it, or, on LMCache's headers
 * (which carry no check), reported as a fall-back. A checkpoint written with another layout, foreign
 * bytes, or checkpoints that are all unreadable refuse the open; a refused open writes nothing.
 * {@code "format": true} is the only way to discard a device's contents.
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

    RecoveryResult run() throws IOException {
        if (config.format()) {
            area.format();
            slots.rebuild(0, new boolean[0], null);
            String note = "formatted as asked (format: true): whatever " + device.path() + " held is discarded";
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "raw_block: " + note);
            return new RecoveryResult(0, note, 0, 0, false);
        }
        List<MetadataArea.Container> containers = area.readContainers();
        List<MetadataArea.Container> valid = MetadataArea.newestFirst(containers);
        if (valid.isEmpty()) {
            MetadataArea.Contents contents = area.classify(containers);
            if (contents instanceof MetadataArea.Contents.Unreadable u) {
                MetadataArea.Orphan newest = null;
                for (MetadataArea.Container c : containers) {
                    MetadataArea.Orphan o = area.orphan(c.index());
                    newest = o != null && (newest == null || o.seq() > newest.seq()) ? o : newest;
                }
                if (newest != null && !config.openDamaged()) {
                    throw new StoreRefusedException(StoreRefusedException.Reason.UNREADABLE, "raw_block on "
                            + device.path() + ": the store's checkpoints cannot be read (" + u.problems() + "). Nothing"
                            + " was changed; container " + newest.container() + "'s payload (offset "
                            + (area.containerOffset(newest.container()) + blockAlign) + ") still holds the complete"
                            + " checkpoint seq " + newest.seq() + ": \"open_damaged\": true opens it (reported as"
                            + " damaged), or restore the device from a copy; \"format\": true starts over (its keys are"
                            + " then lost)");
                }
                if (newest != null) {
                    Findings f = new Findings();
                    f.damage = "the store's checkpoints cannot be read (" + u.problems() + ")";
                    f.salvage = newest;
                    Decoded d = decodeAndCheck(newest.json(), "container " + newest.container() + "'s payload (seq "
                            + newest.seq() + ")");
                    if (d.problem() == null) {
                        return apply(d.decoded(), newest.seq(), newest.container(), f, -1);
                    }
                }
            }
            return newStore(contents);
        }
        if (!config.loadCheckpointOnInit()) {
            throw new StoreRefusedException(StoreRefusedException.Reason.WOULD_DISCARD, device.path() + " holds a store"
                    + " (checkpoint seq " + valid.get(0).seq() + "); load_checkpoint_on_init = false would discard it:"
                    + " set it to true to recover it, or set \"format\": true to start over (its keys are then lost)");
        }
        Findings f = new Findings();
        MetadataArea.Container best = valid.get(0);
        MetadataArea.Container other = containers.get(1 - best.index());
        if (!other.valid()) {
            judgeOther(other, best, f);
        }
        Decoded newest = decodeAndCheck(best.payload(), "container " + best.index() + " (seq " + best.seq() + ")");
        if (other.valid() && !best.sealed() && newest.decoded() != null) {
            olderByNextSlot(best, newest.decoded(), other, f);
        }
        if (newest.problem() != null && best.sealed() && f.damage == null) {
            // fdpblock wrote it with its payload checked before the header: unreadable JSON is damage
            f.damage = best.where() + " commits checkpoint seq " + best.seq() + " and its payload (offset "
                    + (best.offset() + blockAlign) + ") checks out against its CRC-32, yet it cannot be applied: "
                    + newest.problem();
            f.newer = newest.decoded();
        }
        if (f.damage != null && !config.openDamaged()) {
            throw new StoreRefusedException(StoreRefusedException.Reason.DAMAGED, "raw_block on " + device.path()
                    + ": the metadata is damaged: " + f.damage + ". Opening it would lose durable keys, so nothing was"
                    + " changed: set \"open_damaged\": true to open what is readable (the status then reports the"
                    + " damage and the keys lost, and the store stays unhealthy), or restore the device from a copy;"
                    + " \"format\": true discards the store (its keys are then lost)");
        }
        if (f.salvage != null) { // open_damaged: the newer checkpoint's payload is complete, so it is what is readable
            Decoded d = decodeAndCheck(f.salvage.json(), "container " + f.salvage.container() + "'s payload (seq "
                    + f.salvage.seq() + ")");
            if (d.problem() == null) {
                return apply(d.decoded(), f.salvage.seq(), f.salvage.container(), f, 0);
            }
        }
        for (MetadataArea.Container c : valid) {
            Decoded d = c == best ? newest : decodeAndCheck(c.payload(), "container " + c.index() + " (seq " + c.seq()
                    + ")");
            if (d.problem() != null) {
                if (c != best || f.damage == null) {
                    f.fallbacks.add("container " + c.index() + " (seq " + c.seq() + "): " + d.problem());
                }
                continue;
            }
            return apply(d.decoded(), c.seq(), c.index(), f, f.damage == null ? 0 : -1);
        }
        throw new StoreRefusedException(StoreRefusedException.Reason.UNREADABLE, "raw_block on " + device.path()
                + ": the store's checkpoints cannot be applied (" + (f.damage != null ? f.damage + "; " : "")
                + String.join("; ", f.fallbacks) + "). Nothing was"
                + " changed; \"format\": true starts over (its keys are then lost)");
    }

    /** What recovery found besides the checkpoint it applies. */
    private static final class Findings {
        /** Said in the note: interrupted writes, which lose nothing. */
        final List<String> notes = new ArrayList<>();
        /** Damage that loses nothing (an older checkpoint's header), said at WARNING. */
        final List<String> warnings = new ArrayList<>();
        /** Why an older checkpoint than one on the device may be what is applied: a fall-back, reported. */
        final List<String> fallbacks = new ArrayList<>();
        /** Corruption that refuses the open unless open_damaged: what, where. */
        String damage;
        /** The damaged newer checkpoint as far as it parses, to count the keys lost; null when it does not. */
        CheckpointCodec.Decoded newer;
        /** The damaged newer checkpoint's complete payload, found by its trailer: what open_damaged applies. */
        MetadataArea.Orphan salvage;
    }

    /** A payload decoded and checked against this store's layout; {@code problem} says why it cannot be applied. */
    private record Decoded(CheckpointCodec.Decoded decoded, String problem) {}

    /** @throws StoreRefusedException the checkpoint was written with another layout */
    private Decoded decodeAndCheck(byte[] payload, String where) throws StoreRefusedException {
        CheckpointCodec.Decoded decoded;
        try {
            decoded = CheckpointCodec.decode(payload);
        } catch (IOException | RuntimeException e) {
            return new Decoded(null, "unreadable JSON (" + String.valueOf(e.getMessage()).lines().findFirst().orElse("")
                    + ")");
        }
        LayoutMismatch mismatch = CheckpointCodec.layoutMismatch(decoded.root(), layout);
        if (mismatch != null) {
            throw mismatch.refusal(device.path(), "the store's checkpoint (" + where + ") was written");
        }
        Long next = decoded.nextSlot();
        if (next == null || next < 0 || next > slots.maxSlots()) {
            return new Decoded(decoded, "next_slot " + next + " is outside 0.." + slots.maxSlots());
        }
        return new Decoded(decoded, null);
    }

    /**
     * Judges the container that is not the newest valid one ({@code best}), when it is not valid either:
     * an interrupted write (noted), damage that loses nothing (a warning), a possible fall-back
     * (LMCache's headers, which carry no check of their own) or damage that would lose the newer
     * checkpoint it held.
     */
    private void judgeOther(MetadataArea.Container x, MetadataArea.Container best, Findings f) throws IOException {
        long payloadAt = x.offset() + blockAlign;
        switch (x.state()) {
            case TORN -> {
                if (x.seq() < best.seq()) {
                    MetadataArea.Orphan o = area.orphan(x.index());
                    f.notes.add("container " + x.index() + " (seq " + x.seq() + ", older): " + x.problem()
                            + (o != null && o.seq() > best.seq() ? ": it holds checkpoint seq " + o.seq() + " whose header"
                                    + " was never written (a checkpoint cut off by a crash)" : ": an interrupted checkpoint"
                                    + " write, or damage to the older checkpoint; nothing newer is lost"));
                } else if (x.sealed()) {
                    f.damage = x.where() + " commits checkpoint seq " + x.seq() + " (" + x.header().payloadLength()
                            + " bytes, CRC-32 " + MetadataArea.hex32(x.header().crc32()) + "), newer than container "
                            + best.index() + "'s seq " + best.seq() + ", but its payload (offset " + payloadAt + ") fails"
                            + " that CRC-32; fdpblock writes a payload before its header, so this is damage, not an"
                            + " interrupted write";
                    try {
                        f.newer = CheckpointCodec.decode(x.unchecked());
                    } catch (IOException | RuntimeException e) {
                        f.newer = null; // how many keys it held cannot be told
                    }
                } else {
                    f.fallbacks.add("container " + x.index() + " (seq " + x.seq() + "): " + x.problem() + " (a header"
                            + " LMCache wrote: it writes a header and its payload together, so a crash can leave one"
                            + " without the other)");
                }
            }
            case RESERVED -> {
                // reserved before any payload went there: whatever it holds was never committed
                MetadataArea.Orphan o = area.orphan(x.index());
                f.notes.add("container " + x.index() + " is reserved, nothing was committed there"
                        + (o != null ? ": it holds checkpoint seq " + o.seq() + " whose header was never written (a"
                                + " checkpoint cut off by a crash)" : ""));
            }
            case BLANK -> {
                if (best.index() == 0 && best.seq() == 1) { // container 1 may never have had a header
                    MetadataArea.Orphan o = area.orphan(1);
                    if (o != null) { // fdpblock reserves a header before any payload of its goes there
                        damagedHeader(x, best, o, f);
                    } else if (area.holdsCheckpointJson(1)) {
                        f.fallbacks.add("container 1 holds checkpoint JSON without a header: the first checkpoint"
                                + " written there was cut off before its header, or its header was zeroed");
                    }
                    return;
                }
                damagedHeader(x, best, area.orphan(x.index()), f);
            }
            case DAMAGED -> damagedHeader(x, best, area.orphan(x.index()), f);
            case VALID -> { }
        }
    }

    /**
     * LMCache's header carries no check of its own, so a flipped byte in its seq can make the older
     * checkpoint look newest. {@code next_slot} never decreases from one checkpoint to the next: when the
     * other valid checkpoint has a higher one, the one applied by its seq may be the older, and that is
     * reported as a fall-back.
     */
    private void olderByNextSlot(MetadataArea.Container best, CheckpointCodec.Decoded applied,
            MetadataArea.Container other, Findings f) {
        Long mine = applied.nextSlot();
        Long theirs;
        try {
            theirs = CheckpointCodec.decode(other.payload()).nextSlot();
        } catch (IOException | RuntimeException e) {
            return; // not applicable anyway
        }
        if (mine != null && theirs != null && theirs > mine) {
            f.fallbacks.add("container " + best.index() + " (seq " + best.seq() + ", a header LMCache wrote, which"
                    + " carries no check) is the newest by its seq, but container " + other.index() + " (seq "
                    + other.seq() + ") has the higher next_slot (" + theirs + " > " + mine + "), which never decreases:"
                    + " one of the two seqs may be damaged");
        }
    }

    /**
     * A container whose header block should hold a checkpoint's header (the other one's seq says a
     * checkpoint was committed there) but is damaged; {@code o} is the checkpoint its trailer shows.
     */
    private void damagedHeader(MetadataArea.Container x, MetadataArea.Container best, MetadataArea.Orphan o, Findings f)
            throws IOException {
        String what = x.where() + ": " + x.problem();
        long payloadAt = x.offset() + blockAlign;
        if (o != null && o.seq() < best.seq()) {
            f.warnings.add(what + "; its payload (offset " + payloadAt + ") is the older checkpoint seq " + o.seq()
                    + ", so nothing is lost (the next checkpoint into that container rewrites the header)");
        } else if (o != null) {
            f.damage = what + ", yet its payload (offset " + payloadAt + ", " + o.json().length + " bytes) is the"
                    + " complete checkpoint seq " + o.seq() + ", newer than container " + best.index() + "'s seq "
                    + best.seq() + ": fdpblock only ever replaces a header with the next checkpoint's, so this is"
                    + " damage, not an interrupted write";
            f.salvage = o;
        } else if (area.holdsCheckpointJson(x.index())) {
            f.fallbacks.add(what + "; its payload area holds checkpoint JSON without fdpblock's trailer (LMCache"
                    + " wrote it, or it was too large for one), so whether it was newer than seq " + best.seq()
                    + " cannot be told");
        } else {
            // a newer checkpoint would have left its payload there: its header went with nothing committed
            f.notes.add(what + "; its payload area holds no checkpoint, so nothing newer was committed there");
        }
    }

    private RecoveryResult newStore(MetadataArea.Contents contents) throws IOException {
        String note = switch (contents) {
            case MetadataArea.Contents.Zeros z -> "new store: the metadata area is all zeros";
            case MetadataArea.Contents.UncommittedCheckpoint u -> "new store: its empty first checkpoint was cut off"
                    + " before its header, so nothing had been committed yet";
            case MetadataArea.Contents.Unreadable u -> throw new StoreRefusedException(
                    StoreRefusedException.Reason.UNREADABLE, "raw_block on " + device.path() + ": the store's"
                    + " checkpoints cannot be read (" + u.problems() + "). Nothing was changed; \"format\": true starts"
                    + " over (its keys are then lost)");
            case MetadataArea.Contents.Foreign f -> throw f.found().refusal(device.path(), "the metadata area");
        };
        // All zeros: a new device, or a store whose metadata was erased with its chunks in place. (Not a
        // first checkpoint cut off: "format" leaves the slots as they were and then writes one.)
        if (contents instanceof MetadataArea.Contents.Zeros) {
            ForeignData.refuseChunksInSlots(device, dataBase, slotBytes, slots.maxSlots(), blockAlign);
        }
        slots.rebuild(0, new boolean[0], null);
        RawBlockCore.LOG.log(System.Logger.Level.INFO, "raw_block on " + device.path() + ": " + note);
        return new RecoveryResult(0, note, 0, 0, false);
    }

    /**
     * @param lost durable keys lost to the damage in {@code f} when already known (0 for the newer
     *     checkpoint itself); -1 to count them from {@code f.newer} where it parsed
     */
    private RecoveryResult apply(CheckpointCodec.Decoded decoded, long seq, int container, Findings f, long lost)
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
            index.put(new StoreKey(re.key()), slot, (int) re.size(), 0, false, re.meta(), salts.idOf(SaltTable.saltOf(re.key())));
        }
        int nextSlot = (int) Math.max(decoded.nextSlot(), highest + 1);
        int dropped = config.metaVerifyOnLoad() ? verifySlotHeaders(used) : 0;
        slots.rebuild(nextSlot, used, null);
        String damage = null;
        long lostKeys = 0;
        boolean fellBack = !f.fallbacks.isEmpty();
        if (f.damage != null) {
            lostKeys = lost >= 0 ? lost : lostFrom(f.newer);
            fellBack |= f.salvage == null || f.salvage.seq() != seq;
            damage = f.damage + "; opened with open_damaged from checkpoint seq " + seq + " (container " + container
                    + ")" + (lostKeys < 0 ? ", how many durable keys were lost cannot be told" : ", " + lostKeys
                    + " durable keys lost") + "; restore from a copy to get them back";
        }
        String note = "recovered " + index.size() + " keys from checkpoint seq " + seq
                + (skipped > 0 ? ", skipped " + skipped + " bad entries" : "")
                + (dropped > 0 ? ", dropped " + dropped + " whose slot header disagreed" : "")
                + (damage != null ? "; DAMAGED: " + damage : "")
                + (!f.fallbacks.isEmpty() ? "; fell back to container " + container + " because a newer checkpoint may"
                        + " be on the device: " + String.join("; ", f.fallbacks) : "")
                + (!f.warnings.isEmpty() ? "; damaged, nothing lost: " + String.join("; ", f.warnings) : "")
                + (!f.notes.isEmpty() ? "; " + String.join("; ", f.notes) : "");
        boolean warn = fellBack || damage != null || !f.warnings.isEmpty();
        RawBlockCore.LOG.log(warn ? System.Logger.Level.WARNING : System.Logger.Level.INFO, "raw_block on "
                + device.path() + ": " + note);
        return new RecoveryResult(seq, note, index.size(), dropped, fellBack, damage, lostKeys);
    }

    /** Keys of the damaged newer checkpoint that the store opened without: -1 when it did not parse. */
    private long lostFrom(CheckpointCodec.Decoded newer) {
        if (newer == null) {
            return -1;
        }
        long lost = 0;
        for (CheckpointCodec.RawEntry re : newer.entries()) {
            if (validKey(re.key()) && !index.contains(new StoreKey(re.key()))) {
                lost++;
            }
        }
        return lost;
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
                    if (OnDiskFormat.slotHeaderProblem(h, key, e.size()) != null) {
                        index.remove(new StoreKey(key), true);
                        used[e.slot()] = false;
                        dropped++;
                    } else if (h.hasCrc()) {
                        index.setCrc(new StoreKey(key), h.crc32c());
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
