package io.fdpblock.cli;

import io.fdpblock.core.tools.Inspector;
import io.fdpblock.core.StripeMembers;
import io.fdpblock.device.MemberLabel;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.StripedBlockDevice;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code fdpblock inspect DEVICE}: what a store left on a device, read-only, in either format.
 *
 * <p>fdpblock_v2 (a superblock at offset 0 or at {@code --block-align}): both superblocks, both snapshot
 * headers, the log after the snapshot recovery applies (records by type, and a torn tail), and the keys
 * recovery finds, with their slot headers checked ({@link Inspector#inspectV2}).
 *
 * <p>lmcache_v1:
 * <p>Container 0 sits at offset 0 and records the meta area's size, which places container 1. When
 * container 0 is unreadable and no {@code --meta-total-bytes} is given, container 1 is searched for
 * at every {@link #SEARCH_STEP} of the device's start; a given value that disagrees with what
 * container 0 records is reported, not used. "No valid checkpoint" is said only after looking where
 * the device says the containers are.
 */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Decode a store's metadata on a device or file (read-only), in either format. lmcache_v1: both"
                + " checkpoint containers, layout, seq, key count, usage by cache salt, slot-header checks. fdpblock_v2:"
                + " both superblocks, both snapshot headers, the log after the applied snapshot (records by type, a"
                + " torn tail), the keys recovery finds, usage by cache salt, slot-header checks. Exit 0 when the"
                + " store is readable and every slot header checked agrees, 1 otherwise.")
public final class InspectCommand implements Callable<Integer> {
    /** Container 1 is looked for at multiples of this (every meta_total_bytes that is a multiple of 1 MiB). */
    static final long SEARCH_STEP = 512 << 10;
    /** How far into the device container 1 is looked for. */
    static final long SEARCH_LIMIT = 8L << 30;

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DEVICE", arity = "1..*", description = "File, block device or /dev/ngXnY holding a"
            + " raw_block store; for a store over several devices (device_paths), all of them in the store's order")
    List<Path> devices;

    /** The first device: the one that holds the metadata. */
    private Path device;

    @Option(names = "--block-align", defaultValue = "4096", description = "The store's block_align, a power of two"
            + " in 512..1048576 (default 4096)")
    int blockAlign;

    @Option(names = "--meta-total-bytes", description = "The store's meta_total_bytes, to find container 1 when"
            + " container 0 is unreadable (default: what container 0 records, else searched for)")
    Long metaTotalBytes;

    @Option(names = "--no-verify", description = "Skip reading every entry's slot header")
    boolean noVerify;

    @Option(names = "--json", description = "Print JSON")
    boolean json;

    @Override
    public Integer call() throws Exception {
        device = devices.get(0);
        Cli.blockAlign(spec, blockAlign);
        if (metaTotalBytes != null) {
            Cli.longIn(spec, "--meta-total-bytes", metaTotalBytes, 4L * blockAlign, Long.MAX_VALUE,
                    "the meta area (two containers of a header block and a payload)");
        }
        for (Path p : devices) {
            if (Files.isDirectory(p)) {
                throw Cli.bad(spec, "DEVICE " + p + " is a directory: name the store's file or device");
            }
            if (!Files.exists(p)) {
                throw Cli.bad(spec, "DEVICE " + p + " does not exist: name the store's file or device");
            }
            String what = Cli.notFileOrDevice(p);
            if (what != null) { // before any open: a FIFO's would wait for a writer forever
                throw Cli.bad(spec, "DEVICE " + p + " is " + what + ", not a file or a device: a store is read at"
                        + " offsets; name the store's file or device");
            }
        }
        Integer membersWrong = checkMembers();
        if (membersWrong != null) {
            return membersWrong;
        }
        List<String> notes = new ArrayList<>();
        Inspector.Report r;
        long metaUsed;
        try (BlockDevice d = openReadOnly()) {
            long deviceBytes = d.sizeBytes();
            if (deviceBytes < 4L * blockAlign) {
                return noStore(device + " holds " + deviceBytes + " bytes: too small for a store (its meta area alone"
                        + " takes at least " + 4L * blockAlign + ")", notes);
            }
            Inspector.V2Report v2 = Inspector.inspectV2(d, blockAlign, !noVerify);
            if (v2 != null) {
                return printV2(v2);
            }
            if (metaTotalBytes != null && metaTotalBytes > deviceBytes) {
                throw Cli.bad(spec, "--meta-total-bytes " + metaTotalBytes + " is larger than " + device + " ("
                        + deviceBytes + " bytes): give the store's meta_total_bytes");
            }
            // Container 0 first, read as if the meta area were the whole device (any payload is plausible):
            // when valid it records where container 1 is, whatever the option says.
            r = Inspector.inspect(d, blockAlign, deviceBytes / (2L * blockAlign) * (2L * blockAlign), false);
            Inspector.Container c0 = r.containers().get(0);
            metaUsed = -1;
            if (c0.valid() && r.layout().get("meta_total_bytes") instanceof Number recorded
                    && recorded.longValue() >= 4L * blockAlign && recorded.longValue() <= deviceBytes) {
                metaUsed = recorded.longValue();
                if (metaTotalBytes != null && metaUsed != metaTotalBytes) {
                    notes.add("container 0 records meta_total_bytes = " + metaUsed + "; --meta-total-bytes "
                            + metaTotalBytes + " disagrees with it and was not used");
                }
                r = Inspector.inspect(d, blockAlign, metaUsed, !noVerify); // container 1 where container 0 says
            } else if (metaTotalBytes != null && (r = Inspector.inspect(d, blockAlign, metaTotalBytes, !noVerify))
                    .winner() != null) {
                metaUsed = metaTotalBytes;
            } else {
                Inspector.Report found = search(d, deviceBytes);
                String given = metaTotalBytes == null ? "" : "; --meta-total-bytes " + metaTotalBytes + " puts it at "
                        + metaTotalBytes / 2 / blockAlign * blockAlign + ", where there is none";
                if (found != null) {
                    long c1 = found.containers().get(1).offset();
                    metaUsed = 2 * c1;
                    notes.add("container 0 is unreadable (" + c0.problem() + "), so it cannot say where container 1"
                            + " is" + given + "; found container 1 at " + c1 + " (meta_total_bytes " + metaUsed + ")");
                    r = found;
                } else {
                    notes.add("container 0 is unreadable (" + c0.problem() + ")" + given + "; no container 1 was found"
                            + " at any multiple of " + SEARCH_STEP + " up to " + Math.min(deviceBytes / 2, SEARCH_LIMIT)
                            + (metaTotalBytes == null ? "; if the store's meta_total_bytes is known, give it with"
                                    + " --meta-total-bytes" : ""));
                    r = new Inspector.Report(List.of(c0), null, Map.of(), 0, 0, Map.of(), 0, List.of());
                }
            }
        }
        return print(r, metaUsed, notes);
    }

    /** The member labels, read once the devices are opened (null: one device, or members written before labels). */
    private MemberLabel storeLabel;

    /**
     * The members' labels: a device given alone that is one member of a striped store, or members that
     * are not the store's in its order (missing, blank, foreign, swapped, added), are reported (exit 1),
     * since no slot of them could be checked where the store has it. Null when they are in order.
     */
    private Integer checkMembers() throws IOException {
        List<BlockDevice> members = new ArrayList<>();
        try {
            for (Path p : devices) {
                members.add(BlockDevices.openReadOnly(p));
            }
            List<MemberLabel.Read> reads = StripeMembers.read(members);
            if (devices.size() == 1) {
                if (reads.get(0) instanceof MemberLabel.Read.Label(MemberLabel l)) {
                    return membersWrong(List.of(device + " is " + l.describe() + ": give all " + l.count()
                            + " members, in the store's order (this one at position " + l.index() + ")"));
                }
                return null;
            }
            StripeMembers.Check c = StripeMembers.check(members, reads);
            if (!c.problems().isEmpty()) {
                return membersWrong(c.problems());
            }
            if (c.unfinished()) {
                return membersWrong(List.of("the devices carry only the prepared labels of a striped store whose"
                        + " creation did not complete: no store was committed on them"));
            }
            storeLabel = c.store();
            return null;
        } finally {
            members.forEach(BlockDevice::close);
        }
    }

    private int membersWrong(List<String> problems) throws IOException {
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("devices", devices.stream().map(Path::toString).toList());
            m.put("members_agree", false);
            m.put("problems", problems);
            Json.print(m);
        } else {
            System.out.println(String.join(" ", devices.stream().map(Path::toString).toList())
                    + ": not the members of one striped store in its order");
            problems.forEach(p -> System.out.println("  " + p));
        }
        return 1;
    }

    /**
     * The device, read-only: with several, the striped device a store over them sees (its metadata on the
     * first, slots striped by slot_bytes from its data base, both read from the first device's metadata).
     */
    private BlockDevice openReadOnly() throws IOException {
        if (devices.size() == 1) {
            return BlockDevices.openReadOnly(device);
        }
        if (storeLabel != null) {
            return openLabelled();
        }
        long slotBytes;
        long dataBase;
        try (BlockDevice first = BlockDevices.openReadOnly(device)) {
            Map<String, Object> layout = first.sizeBytes() >= 4L * blockAlign ? layout(first, first.sizeBytes())
                    : Map.of();
            if (!(layout.get("slot_bytes") instanceof Number sb) || !(layout.get("data_base") instanceof Number db)) {
                throw Cli.bad(spec, "the first DEVICE " + device + " holds no readable metadata that names the store's"
                        + " slot_bytes and data base, which striping across " + devices.size() + " devices needs:"
                        + " inspect " + device + " alone (with --meta-total-bytes if its container 0 is damaged)");
            }
            slotBytes = sb.longValue();
            dataBase = db.longValue();
        }
        List<BlockDevice> members = openMembersReadOnly();
        StripedBlockDevice striped = StripedBlockDevice.of(members, slotBytes,
                DeviceOptions.of(IoEngine.POSIX).withBuffers(1 << 20, 0));
        try {
            striped.startDataAt(dataBase);
        } catch (IllegalArgumentException e) {
            striped.close();
            throw Cli.bad(spec, "the store's data base " + dataBase + " does not fit these " + devices.size()
                    + " devices (" + e.getMessage() + "): give the store's device_paths, in its order");
        }
        return striped;
    }

    /** Every DEVICE, read-only, in the order given; none left open when one fails. */
    private List<BlockDevice> openMembersReadOnly() throws IOException {
        List<BlockDevice> members = new ArrayList<>();
        try {
            for (Path p : devices) {
                members.add(BlockDevices.openReadOnly(p));
            }
        } catch (IOException | RuntimeException e) {
            members.forEach(BlockDevice::close);
            throw e;
        }
        return members;
    }

    /** Members whose labels agree: the metadata is read through the striped device, from member 0's share. */
    private BlockDevice openLabelled() throws IOException {
        List<BlockDevice> members = openMembersReadOnly();
        StripedBlockDevice striped = StripedBlockDevice.labelled(members, storeLabel,
                DeviceOptions.of(IoEngine.POSIX).withBuffers(1 << 20, 0));
        try {
            if (layout(striped, striped.memberBytes()).get("data_base") instanceof Number db) {
                striped.startDataAt(db.longValue());
            } // else no readable metadata: reported as such by what reads it
            return striped;
        } catch (IOException | RuntimeException e) {
            striped.close();
            throw e;
        }
    }

    /**
     * The layout the metadata on {@code d} records, unchecked, with where the data starts as {@code data_base}
     * in either format; empty when none is readable. An lmcache_v1 meta area is taken to be {@code
     * --meta-total-bytes} long, else all of {@code deviceBytes} (any payload is plausible).
     */
    private Map<String, Object> layout(BlockDevice d, long deviceBytes) throws IOException {
        Inspector.V2Report v2 = Inspector.inspectV2(d, blockAlign, false);
        if (v2 != null) {
            return v2.layout();
        }
        long meta = metaTotalBytes != null ? metaTotalBytes : deviceBytes / (2L * blockAlign) * (2L * blockAlign);
        Inspector.Report r = Inspector.inspect(d, blockAlign, meta, false);
        if (r.winner() == null) {
            return Map.of();
        }
        Map<String, Object> layout = new LinkedHashMap<>(r.layout());
        layout.put("data_base", r.layout().get("data_base_offset"));
        return layout;
    }

    /** Container 1 at every {@link #SEARCH_STEP}: the first offset where it is valid, or null. */
    private Inspector.Report search(BlockDevice d, long deviceBytes) throws IOException {
        long limit = Math.min(deviceBytes / 2, SEARCH_LIMIT);
        for (long c1 = SEARCH_STEP; c1 <= limit; c1 += SEARCH_STEP) {
            if (c1 % blockAlign != 0 || c1 + blockAlign > deviceBytes) {
                continue;
            }
            Inspector.Report r = Inspector.inspect(d, blockAlign, 2 * c1, false);
            if (r.containers().get(1).valid()) {
                return noVerify ? r : Inspector.inspect(d, blockAlign, 2 * c1, true);
            }
        }
        return null;
    }

    private int noStore(String why, List<String> notes) throws IOException {
        notes.add(why);
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("device", device.toString());
            m.put("notes", notes);
            m.put("valid_checkpoint", false);
            Json.print(m);
        } else {
            System.out.println(device);
            System.out.println("  " + why + ": no store here");
        }
        return 1;
    }

    private int printV2(Inspector.V2Report r) throws IOException {
        int code = r.healthy() ? 0 : 1;
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("device", device.toString());
            m.put("format", "fdpblock_v2");
            m.put("healthy", r.healthy());
            m.put("report", r);
            Json.print(m);
            return code;
        }
        System.out.println(device + ": fdpblock_v2");
        for (Inspector.Superblock s : r.superblocks()) {
            System.out.printf("  superblock %s @ %d: %s%n", s.copy(), s.offset(), s.valid() ? "valid" : s.problem());
        }
        if (!r.layout().isEmpty()) {
            System.out.println("  layout: " + r.layout());
        }
        for (Inspector.Snapshot s : r.snapshots()) {
            System.out.printf("  snapshot area %d @ %d: %s%n", s.area(), s.offset(), !s.valid() ? s.problem()
                    : "seq " + s.seq() + ", start LSN " + s.startLsn() + ", " + s.entries() + " entries, " + s.bodyBytes()
                            + " bytes of body, next slot " + s.nextSlot() + ", body CRC "
                            + (s.bodyCrcOk() ? "ok" : "FAILS") + (s.applied() ? "  <- applied" : ""));
        }
        Inspector.Log l = r.log();
        if (l != null) {
            System.out.printf("  log @ %d (%d bytes): LSN %d..%d, %d chunks, %d records after the applied snapshot"
                    + " (PUT %d, DELETE %d, SALT %d)%n", l.offset(), l.bytes(), l.startLsn(), l.endLsn(), l.chunks(),
                    l.records(), l.puts(), l.deletes(), l.salts());
            System.out.println("  log end: " + l.end() + (l.tornTail() ? " (a torn tail: ignored by recovery)" : ""));
        }
        for (String n : r.notes()) {
            System.out.println("  note: " + n);
        }
        if (r.keys() == null) {
            System.out.println("  no readable store: recovery would refuse it");
            return code;
        }
        printKeys(r.keys(), r.payloadBytes(), r.bySalt(), r.slotsChecked(), r.badSlots());
        return code;
    }

    private int print(Inspector.Report r, long metaUsed, List<String> notes) throws IOException {
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("device", device.toString());
            m.put("format", "lmcache_v1");
            m.put("meta_total_bytes", metaUsed < 0 ? null : metaUsed);
            m.put("notes", notes);
            m.put("valid_checkpoint", r.winner() != null);
            m.put("report", r);
            Json.print(m);
            return r.badSlots().isEmpty() && r.winner() != null && r.damage().isEmpty() ? 0 : 1;
        }
        System.out.println(device);
        for (Inspector.Container c : r.containers()) {
            System.out.printf("  container %d @ %d: %s%n", c.index(), c.offset(), c.valid()
                    ? "seq " + c.seq() + ", " + c.payloadBytes() + " bytes of JSON"
                            + (r.winner() != null && r.winner() == c.index() ? "  <- newest valid" : "")
                    : c.problem());
        }
        for (String n : notes) {
            System.out.println("  note: " + n);
        }
        for (String d : r.damage()) {
            System.out.println("  DAMAGED: " + d + " (recovery refuses the store or falls back to an older checkpoint;"
                    + " open_damaged opens what is readable)");
        }
        if (r.winner() == null) {
            System.out.println("  no valid checkpoint found");
            return 1;
        }
        System.out.println("  layout: " + r.layout());
        printKeys(r.keys(), r.payloadBytes(), r.bySalt(), r.slotsChecked(), r.badSlots());
        return r.badSlots().isEmpty() && r.damage().isEmpty() ? 0 : 1;
    }

    /** The keys a store holds, by cache salt, and (unless --no-verify) what the check of their slot headers found. */
    private void printKeys(long keys, long payloadBytes, Map<String, long[]> bySalt, int slotsChecked,
            List<Inspector.BadSlot> badSlots) {
        System.out.printf("  keys: %d, payload bytes: %d%n", keys, payloadBytes);
        for (Map.Entry<String, long[]> e : bySalt.entrySet()) {
            System.out.printf("    cache salt %-20s %8d keys %14d bytes%n", e.getKey().isEmpty() ? "(none)" : e.getKey(),
                    e.getValue()[0], e.getValue()[1]);
        }
        if (!noVerify) {
            System.out.printf("  slot headers: %d checked, %d disagree%n", slotsChecked, badSlots.size());
            badSlots.stream().limit(20).forEach(b -> System.out.printf("    %s @ %d: %s%n", b.key(), b.offset(),
                    b.problem()));
        }
    }
}
