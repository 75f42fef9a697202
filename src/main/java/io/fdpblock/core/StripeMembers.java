package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.MemberLabel;
import io.fdpblock.device.StripedBlockDevice;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Which store the members of a striped device ({@code device_paths}) belong to, checked before the
 * store reads or writes a byte of it: each member's label must name the store member 0 names, its own
 * position and the member count. A new store gets its labels (written before its first write); members
 * written before labels existed open as they always did, with a warning, when member 0 holds a store.
 */
public final class StripeMembers {
    private StripeMembers() {}

    private static final SecureRandom RANDOM = new SecureRandom();

    /**
     * What the members' first blocks say, position by position.
     *
     * @param store the store they belong to (a committed label, member 0's when it has one), or null
     * @param problems one line per member that is not the store's member at its position, naming it
     * @param unfinished no committed label, only prepared ones each at its position: a creation cut short
     */
    public record Check(MemberLabel store, List<String> problems, boolean unfinished) {
        /** No label on any member (a store written before labels, or new devices). */
        public boolean unlabelled() {
            return store == null && !unfinished && problems.isEmpty();
        }
    }

    /** Reads every member's first block. */
    public static List<MemberLabel.Read> read(List<BlockDevice> members) throws IOException {
        List<MemberLabel.Read> out = new ArrayList<>();
        for (BlockDevice d : members) {
            out.add(MemberLabel.read(d));
        }
        return out;
    }

    /** Checks the labels {@code reads} of {@code members} (in the order given) against each other. */
    public static Check check(List<BlockDevice> members, List<MemberLabel.Read> reads) {
        int n = members.size();
        MemberLabel store = null;
        if (reads.get(0) instanceof MemberLabel.Read.Label(MemberLabel l) && l.committed()) {
            store = l;
        } else {
            for (MemberLabel.Read r : reads) {
                if (r instanceof MemberLabel.Read.Label(MemberLabel l) && l.committed()) {
                    store = l;
                    break;
                }
            }
        }
        List<String> problems = new ArrayList<>();
        if (store == null) {
            boolean anyLabel = false;
            for (int p = 0; p < n; p++) {
                MemberLabel.Read r = reads.get(p);
                if (r instanceof MemberLabel.Read.Damaged(String why)) {
                    problems.add(name(members, p) + ": its member label is damaged: " + why);
                } else if (r instanceof MemberLabel.Read.Label(MemberLabel l)) {
                    anyLabel = true;
                    MemberLabel first = firstLabel(reads);
                    if (!l.sameStore(first) || l.index() != p || l.count() != n || p == 0) {
                        problems.add(name(members, p) + ": holds " + l.describe() + "; a creation of a store over these"
                                + " " + n + " devices would have put member " + p + " of " + n + " of one store here");
                    }
                }
            }
            if (anyLabel && problems.isEmpty()) {
                for (int p = 0; p < n; p++) { // whatever else is there must be blank for the creation to resume
                    if (reads.get(p) instanceof MemberLabel.Read.Other(String bytes)) {
                        problems.add(name(members, p) + ": holds data that is not a member label (first bytes "
                                + bytes + ") beside the prepared labels of a creation cut short");
                    }
                }
            }
            return new Check(null, List.copyOf(problems), anyLabel && problems.isEmpty());
        }
        String expect = "store " + store.storeId() + "'s member ";
        if (store.count() != n) {
            problems.add(n + " devices are given, the striped store " + store.storeId() + " has " + store.count()
                    + " members");
        }
        int[] positionOf = new int[store.count()];
        Arrays.fill(positionOf, -1);
        for (int p = 0; p < n; p++) {
            MemberLabel.Read r = reads.get(p);
            String at = name(members, p) + ": ";
            String wanted = p < store.count() ? "expected " + expect + p : "the store has no member " + p;
            switch (r) {
                case MemberLabel.Read.Blank b -> problems.add(at + "blank (its first block is zeros: a new, zeroed or"
                        + " replaced device), " + wanted);
                case MemberLabel.Read.Other(String bytes) -> problems.add(at + "holds no member label (first bytes "
                        + bytes + ": another program's data, or a member of a store written before labels), " + wanted);
                case MemberLabel.Read.Damaged(String why) -> problems.add(at + "its member label is damaged (" + why
                        + "), " + wanted);
                case MemberLabel.Read.Label(MemberLabel l) -> {
                    if (!l.sameStore(store)) {
                        problems.add(at + "holds " + l.describe() + ", " + wanted);
                    } else if (l.count() != store.count() || l.stripeBytes() != store.stripeBytes()
                            || l.memberBytes() != store.memberBytes() || l.dataOffset() != store.dataOffset()
                            || l.createdMillis() != store.createdMillis()) {
                        problems.add(at + "its label of store " + store.storeId() + " disagrees with the others ("
                                + l + " against " + store + ")");
                    } else {
                        if (positionOf[l.index()] < 0) {
                            positionOf[l.index()] = p;
                        }
                        if (l.index() != p) {
                            problems.add(at + "holds " + expect + l.index() + ", " + wanted);
                        } else if (members.get(p).sizeBytes() < l.dataOffset() + l.memberBytes()) {
                            problems.add(at + "holds only " + members.get(p).sizeBytes() + " bytes, the store's members"
                                    + " need " + (l.dataOffset() + l.memberBytes()) + " (it shrank?)");
                        }
                    }
                }
            }
        }
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < store.count(); i++) {
            if (positionOf[i] < 0) {
                missing.add("" + i);
            }
        }
        boolean allThere = missing.isEmpty();
        if (!allThere) {
            problems.add("store " + store.storeId() + "'s member" + (missing.size() > 1 ? "s " : " ")
                    + String.join(", ", missing) + (missing.size() > 1 ? " are" : " is") + " not among the devices given");
        }
        if (allThere && !problems.isEmpty()) {
            List<String> order = new ArrayList<>();
            for (int i = 0; i < store.count(); i++) {
                order.add(members.get(positionOf[i]).path());
            }
            problems.add("every member of store " + store.storeId() + " is given; in the store's order they are "
                    + order);
        }
        return new Check(store, List.copyOf(problems), false);
    }

    private static MemberLabel firstLabel(List<MemberLabel.Read> reads) {
        for (MemberLabel.Read r : reads) {
            if (r instanceof MemberLabel.Read.Label(MemberLabel l)) {
                return l;
            }
        }
        throw new IllegalStateException("no label");
    }

    private static String name(List<BlockDevice> members, int p) {
        return "member " + p + " (" + members.get(p).path() + ")";
    }

    /**
     * The striped device a store over {@code members} (opened, in the configuration's order) uses:
     * labelled and checked; labelled anew for a new store (the labels are written before its first
     * write); or, for members written before labels whose first member holds a store, mapped as
     * before with a warning. It owns the members from here: closed when this throws.
     *
     * @throws StoreRefusedException naming each member that is not the store's member at its position
     *         (what it holds, what was expected); nothing was written
     */
    public static StripedBlockDevice open(RawBlockCoreConfig config, List<BlockDevice> members,
            DeviceOptions options) throws IOException {
        try {
            return resolve(config, members, options);
        } catch (IOException | RuntimeException e) {
            members.forEach(BlockDevice::close);
            throw e;
        }
    }

    private static StripedBlockDevice resolve(RawBlockCoreConfig config, List<BlockDevice> members,
            DeviceOptions options) throws IOException {
        List<String> paths = members.stream().map(BlockDevice::path).toList();
        String where = "raw_block over device_paths " + paths;
        if (config.format()) { // whatever the members hold is discarded: they become a new store's
            return create(config, members, options, where);
        }
        List<MemberLabel.Read> reads = read(members);
        Check c = check(members, reads);
        if (c.store() != null) {
            if (!c.problems().isEmpty()) {
                throw refused(where + ": these devices are not the members of the striped store "
                        + c.store().storeId() + " in its order: " + String.join("; ", c.problems())
                        + ". Nothing was changed: list exactly the store's members in device_paths, in its order");
            }
            if (c.store().stripeBytes() != config.slotBytes()) {
                throw new StoreRefusedException(StoreRefusedException.Reason.LAYOUT_MISMATCH, where + ": the striped"
                        + " store " + c.store().storeId() + " was created with slot_bytes = " + c.store().stripeBytes()
                        + " (its members are striped by it), configured " + config.slotBytes() + ". Nothing was"
                        + " changed: open it with slot_bytes = " + c.store().stripeBytes());
            }
            boolean prepared = reads.stream().anyMatch(r -> r instanceof MemberLabel.Read.Label(MemberLabel l)
                    && !l.committed());
            return StripedBlockDevice.labelled(members, c.store(), prepared ? StripedBlockDevice.LabelWrite.FINISH
                    : StripedBlockDevice.LabelWrite.NONE, options);
        }
        if (!c.problems().isEmpty()) {
            throw refused(where + ": the members carry no committed label: " + String.join("; ", c.problems())
                    + ". Nothing was changed");
        }
        if (c.unlabelled() && legacyStore(config, members.get(0)) != null) {
            return StripedBlockDevice.of(members, config.slotBytes(), options); // RawBlockCore warns
        }
        // A new store (or one whose creation was cut short before member 0's label): every member blank.
        for (int p = 1; p < members.size(); p++) {
            String legacy = reads.get(p) instanceof MemberLabel.Read.Other ? legacyStore(config, members.get(p)) : null;
            if (legacy != null) {
                throw new StoreRefusedException(StoreRefusedException.Reason.FOREIGN_DATA, where + ": the members"
                        + " carry no labels and member 0 holds no store, so this would be a new striped store, whose"
                        + " labels go in each member's first block; but " + name(members, p) + " holds data there: "
                        + legacy + ", as the first member of a store written before labels (or a store of its own)"
                        + " has. Nothing was changed: list the store's first member first");
            }
        }
        for (int p = 0; p < members.size(); p++) {
            if (reads.get(p) instanceof MemberLabel.Read.Other(String bytes)) {
                throw new StoreRefusedException(StoreRefusedException.Reason.FOREIGN_DATA, where + ": the members"
                        + " carry no labels and member 0 holds no store, so this would be a new striped store, whose"
                        + " labels go in each member's first block; but " + name(members, p) + " holds data there"
                        + " (first bytes " + bytes + "): another store's member or another program's data. Nothing"
                        + " was changed: give blank devices, or the store's members in its order; set \"format\":"
                        + " true only if every member's contents may be discarded");
            }
        }
        return create(config, members, options, where);
    }

    /** A new store's labels, to be written before its first write. */
    private static StripedBlockDevice create(RawBlockCoreConfig config, List<BlockDevice> members,
            DeviceOptions options, String where) throws IOException {
        long stripe = config.slotBytes();
        long memberBytes = StripedBlockDevice.labelledMemberBytes(members, stripe);
        long dataOffset = StripedBlockDevice.labelDataOffset(members);
        if (memberBytes < stripe) {
            long smallest = members.stream().mapToLong(BlockDevice::sizeBytes).min().orElse(0);
            throw new IllegalArgumentException("raw_block config: " + where + ": the smallest member holds " + smallest
                    + " bytes, which leaves no stripe of slot_bytes = " + stripe + " after its " + dataOffset
                    + "-byte member label; use members of at least " + (dataOffset + 2 * stripe) + " bytes");
        }
        MemberLabel label = new MemberLabel(RANDOM.nextLong(), RANDOM.nextLong(), true, 0, members.size(), stripe,
                memberBytes, dataOffset, System.currentTimeMillis());
        StripedBlockDevice d = StripedBlockDevice.labelled(members, label, StripedBlockDevice.LabelWrite.CREATE,
                options);
        if (!config.format()) {
            String found = legacyStore(config, d); // bytes that look like a store where the new one would start
            if (found != null) {
                d.close();
                throw new StoreRefusedException(StoreRefusedException.Reason.FOREIGN_DATA, where + ": member 0 ("
                        + members.get(0).path() + ") carries no label but holds " + found + " past its first block,"
                        + " where a new striped store would put its metadata. Nothing was changed: it is not a blank"
                        + " device; set \"format\": true only if every member's contents may be discarded");
            }
        }
        return d;
    }

    /**
     * Refuses a striped device a caller built without labels ({@link StripedBlockDevice#of}) unless its
     * first member holds a store written before labels (opened as before, with a warning).
     */
    static void checkUnlabelled(RawBlockCoreConfig config, StripedBlockDevice device) throws IOException {
        if (device.labelled()) {
            return;
        }
        String legacy = legacyStore(config, device.members().get(0));
        if (legacy == null) {
            throw refused("raw_block on " + device.path() + ": a new store over several devices labels each member"
                    + " (its identity, position and the member count), which this unlabelled striped device cannot"
                    + " carry. Nothing was written: open the members through device_paths, or"
                    + " StripeMembers.open(config, members, options)");
        }
        warnUnlabelled("raw_block on " + device.path(), legacy);
        refuseOtherMembers(config, device);
    }

    /**
     * Members written before labels cannot be checked one by one, but the size a store records can
     * (each format checks what it records): when these members make another, one was added, taken away or
     * replaced, and opening the rest with the recorded capacity would map slots to the wrong members.
     */
    private static void refuseOtherMembers(RawBlockCoreConfig config, StripedBlockDevice device) throws IOException {
        ProbeContext probe = probeOf(config, device);
        for (StoreFormat f : StoreFormats.all()) {
            f.checkUnlabelledMembers(probe);
        }
    }

    private static void warnUnlabelled(String where, String legacy) {
        RawBlockCore.LOG.log(System.Logger.Level.WARNING, where + ": member 0 holds " + legacy + " written before"
                + " striped stores labelled their members: whether the other members are this store's, and in its"
                + " order, cannot be checked; give them exactly as the store was created");
    }

    /** What of a store the start of {@code device} holds (any format), or null when nothing. */
    private static String legacyStore(RawBlockCoreConfig config, BlockDevice device) throws IOException {
        if (device.sizeBytes() < 2L * config.blockAlign()) {
            return null;
        }
        StoreFormats.Found found = StoreFormats.find(probeOf(config, device));
        return found == null ? null : found.format().describe(found.detection());
    }

    /** What the formats look at on {@code device}, which may be one member: all of it, written to nowhere. */
    private static ProbeContext probeOf(RawBlockCoreConfig config, BlockDevice device) {
        return new ProbeContext(config, device, device.sizeBytes(), 1 << 20, PlacementId.NONE);
    }

    /**
     * A striped store's metadata area lies on its first member: refuses (before anything is written) a
     * layout whose metadata does not fit that member's share, naming the member size that would.
     *
     * @param metaBytes where the data area would start (the metadata area's size)
     * @param align what a new fdpblock_v2 metadata area is rounded to (0: lmcache_v1, or a size given)
     */
    static void checkMetadataFits(RawBlockCoreConfig config, StripedBlockDevice d, long metaBytes, long align) {
        long share = d.memberBytes();
        if (metaBytes < share) {
            return;
        }
        long stripe = d.stripeBytes();
        long base = d.label() != null ? d.label().dataOffset() : 0;
        int n = d.members().size();
        long need = (metaBytes / stripe + 1) * stripe; // the smallest share that holds the metadata
        if (align > 0 && !config.metaTotalBytesSet()) { // fdpblock_v2 sizes its metadata from the capacity
            StoreFormat v2 = StoreFormats.named(RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2.configName());
            for (int i = 0; i < 64; i++) {
                long meta = v2.metaBytesFor(config.blockAlign(), n * need / stripe, align);
                if (meta < need) {
                    break;
                }
                need = (meta / stripe + 1) * stripe;
            }
        }
        boolean offerMeta = align == 0 || config.metaTotalBytesSet();
        throw new IllegalArgumentException("raw_block config: a striped store keeps its metadata area on its first"
                + " member, and its " + metaBytes + " bytes" + (offerMeta ? " (meta_total_bytes)" : "")
                + " do not fit the share of " + share + " bytes each member has here (" + d.members().get(0).path()
                + ": the smallest member's size" + (base > 0 ? " less its " + base + "-byte label" : "")
                + " in whole slot_bytes of " + stripe + "). Nothing was written: use members of at least "
                + (base + need) + " bytes each" + (offerMeta ? ", or a meta_total_bytes below " + share : ""));
    }

    private static StoreRefusedException refused(String message) {
        return new StoreRefusedException(StoreRefusedException.Reason.WRONG_MEMBERS, message);
    }
}
