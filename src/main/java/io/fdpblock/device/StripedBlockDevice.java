package io.fdpblock.device;

import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One device over several (config {@code device_paths}): a store's metadata area on the first member,
 * its slots striped across all of them. Each member is a normal engine instance (io_uring: its own
 * ring and reactor) opened exclusively; this device only maps offsets and splits batches.
 *
 * <pre>
 * logical [0, dataBase)                      member 0 at the same offsets (the metadata area)
 * logical dataBase + j * stripe, j < n * a   member j % n, unit j / n   (a: member 0's units after dataBase)
 * logical dataBase + j * stripe, j >= n * a  member 1 + t % (n - 1), unit a + t / (n - 1), t = j - n * a
 * unit u of member 0 lies at dataBase + u * stripe; of any other member at u * stripe
 * </pre>
 *
 * Every member's usable size is the smallest member's, rounded down to the stripe; the logical size is
 * {@code n} times that, so it does not depend on where the data area starts (fdpblock_v2 sizes its
 * metadata area from the capacity, which must be known first). The other members use the bytes that
 * member 0 gives to metadata for slots too, taken last (the second row). With the stripe equal to
 * slot_bytes a slot lies on one member; an operation that crosses units is split anyway, and pieces
 * contiguous on one member are merged (a deallocation of a run of slots is one per member).
 *
 * <p>Until the store names its data area ({@link #startDataAt}) only member 0 is reachable, at the
 * same offsets: that is where the metadata format is probed and created.
 *
 * <p>Members of a labelled store ({@link #labelled}) keep a {@link MemberLabel} in their first block and
 * their share of the store after it, from the label's data offset on: every offset above is then
 * relative to that. A device over members written before labels existed maps them from offset 0.
 *
 * <p>FDP: the placement ids this device reports are member 0's (the first {@code k}, {@code k} the
 * fewest any member reports); a write with the id at position {@code p} goes to another member with
 * that member's own id at position {@code p} of its RUH status, never member 0's id. A reclaim unit
 * here spans the members: {@code n} times the smallest member's, so that a group of slots fills one
 * reclaim unit on each.
 */
public final class StripedBlockDevice extends AbstractBlockDevice {
    private final List<BlockDevice> members;
    private final long stripeBytes;
    /** Each member's usable bytes: the smallest member's size, rounded down to the stripe. */
    private final long memberBytes;
    /** Where each member's share starts on it: the label's data offset, 0 without labels. */
    private final long memberBase;
    /** Member 0's label (null: members written before labels, unchecked). */
    private final MemberLabel label;
    /** Labels still to write before the first write reaches a member; guarded by {@code this}. */
    private volatile LabelWrite labelWrite = LabelWrite.NONE;
    private volatile long dataBase = -1;
    /** member 0's id -> its position; per member, the ids by position. Set at the first use. */
    private volatile Map<Integer, Integer> idPosition;
    private volatile int[][] memberIds;
    /** A member gave up a batch with I/O in the kernel: the pool's memory must then never be freed. */
    private volatile boolean abandoned;

    private StripedBlockDevice(String path, List<BlockDevice> members, long stripeBytes, long memberBytes,
            MemberLabel label, int lbs, int maxTransfer, int alignment, DeviceOptions options) {
        super(path, memberBytes * members.size(), lbs, maxTransfer, alignment, options);
        this.members = List.copyOf(members);
        this.stripeBytes = stripeBytes;
        this.memberBytes = memberBytes;
        this.label = label;
        this.memberBase = label == null ? 0 : label.dataOffset();
    }

    /**
     * Opens every path with {@code options} (exclusively when it says so); when one cannot be opened,
     * the ones already open are closed.
     *
     * @param stripeBytes the unit of striping (a store uses its slot_bytes)
     * @throws IOException naming the path that failed and why
     */
    public static StripedBlockDevice open(List<Path> paths, DeviceOptions options, long stripeBytes)
            throws IOException {
        if (paths.size() < 2) {
            throw new IllegalArgumentException("a striped device needs 2 or more members, got " + paths);
        }
        List<BlockDevice> opened = new ArrayList<>();
        try {
            for (Path p : paths) {
                opened.add(BlockDevices.open(p, options.withBuffers(options.bufferSize(), 0)));
            }
            return of(opened, stripeBytes, options);
        } catch (IOException | RuntimeException e) {
            opened.forEach(BlockDevice::close);
            throw e;
        }
    }

    /**
     * Stripes over devices already open, mapped from offset 0 as members written before labels are
     * (nothing is read or checked: a store over such members cannot tell a wrong member); it owns them
     * from here (closing it closes them), also when this throws.
     */
    public static StripedBlockDevice of(List<BlockDevice> members, long stripeBytes, DeviceOptions options) {
        return of(members, stripeBytes, null, options);
    }

    /**
     * Stripes over members whose labels were checked against {@code label} (member 0's, see
     * {@code StripeMembers} in the core): each member's share starts at the label's data offset and
     * takes its member bytes. It owns them from here, also when this throws.
     *
     * @throws IllegalArgumentException when a member is smaller than the label's geometry needs
     */
    public static StripedBlockDevice labelled(List<BlockDevice> members, MemberLabel label, DeviceOptions options) {
        for (BlockDevice d : members) {
            if (d.sizeBytes() < label.dataOffset() + label.memberBytes()) {
                members.forEach(BlockDevice::close);
                throw new IllegalArgumentException("member " + d.path() + " holds " + d.sizeBytes() + " bytes; the"
                        + " striped store " + label.storeId() + " needs " + (label.dataOffset() + label.memberBytes())
                        + " on each member");
            }
        }
        return of(members, label.stripeBytes(), label, options);
    }

    /** What {@link #commitLabels} still has to write. */
    public enum LabelWrite {
        /** Nothing: every member carries its committed label. */
        NONE,
        /** A new store: every label (the members' were checked blank, or a creation cut short). */
        CREATE,
        /** Member 0's is committed; the others' may still be the prepared ones of a creation cut short. */
        FINISH
    }

    /**
     * Stripes over members that are to carry {@code label} (member 0's), written by {@link #commitLabels}
     * before the first write or deallocation reaches a member: a store refused before it writes anything
     * leaves the members as they were.
     */
    public static StripedBlockDevice labelled(List<BlockDevice> members, MemberLabel label, LabelWrite write,
            DeviceOptions options) {
        StripedBlockDevice d = labelled(members, label, options);
        d.labelWrite = write;
        return d;
    }

    /**
     * Writes the labels still to write, each durable before the next: for a new store every other
     * member's label as prepared, then member 0's committed one (the commit: a power loss before it
     * leaves no committed label, which the next open creates again), then the others' committed.
     * Called on the first write; harmless when there is nothing to write.
     */
    public synchronized void commitLabels() throws IOException {
        LabelWrite w = labelWrite;
        if (w == LabelWrite.NONE) {
            return;
        }
        if (w == LabelWrite.CREATE) {
            for (int m = 1; m < members.size(); m++) {
                label.asMember(m, false).write(members.get(m));
            }
            label.asMember(0, true).write(members.get(0));
        }
        for (int m = 1; m < members.size(); m++) {
            label.asMember(m, true).write(members.get(m));
        }
        labelWrite = LabelWrite.NONE;
    }

    /** Whether labels are still to be written (a new store before its first write). */
    public LabelWrite pendingLabels() {
        return labelWrite;
    }

    /**
     * Each member's share when a new store labels them: what is left of the smallest member after the
     * label's block, in whole stripes (0: not one stripe fits).
     */
    public static long labelledMemberBytes(List<BlockDevice> members, long stripeBytes) {
        long smallest = Long.MAX_VALUE;
        for (BlockDevice d : members) {
            smallest = Math.min(smallest, d.sizeBytes());
        }
        long usable = smallest - labelDataOffset(members);
        return usable <= 0 || stripeBytes <= 0 ? 0 : usable / stripeBytes * stripeBytes;
    }

    /** Where a new label puts each member's share: after one label block of the largest logical block size. */
    public static long labelDataOffset(List<BlockDevice> members) {
        int lbs = 512;
        for (BlockDevice d : members) {
            lbs = Math.max(Math.max(lbs, d.logicalBlockSize()), d.bufferAlignment());
        }
        return MemberLabel.blockBytes(lbs);
    }

    private static StripedBlockDevice of(List<BlockDevice> members, long stripeBytes, MemberLabel label,
            DeviceOptions options) {
        try {
            if (members.size() < 2) {
                throw new IllegalArgumentException("a striped device needs 2 or more members, got " + members.size());
            }
            int lbs = 0;
            int maxTransfer = Integer.MAX_VALUE;
            int alignment = 1;
            long smallest = Long.MAX_VALUE;
            BlockDevice smallestMember = null;
            for (BlockDevice d : members) {
                lbs = Math.max(lbs, d.logicalBlockSize());
                maxTransfer = Math.min(maxTransfer, d.maxTransferBytes());
                alignment = Math.max(alignment, d.bufferAlignment());
                if (d.sizeBytes() < smallest) {
                    smallest = d.sizeBytes();
                    smallestMember = d;
                }
            }
            if (stripeBytes <= 0 || stripeBytes % lbs != 0) {
                throw new IllegalArgumentException("stripe of " + stripeBytes + " bytes is not a positive multiple of"
                        + " the members' logical block size " + lbs + "; use a multiple of it (slot_bytes)");
            }
            long memberBytes = label != null ? label.memberBytes() : smallest / stripeBytes * stripeBytes;
            if (memberBytes == 0) {
                throw new IllegalArgumentException(smallestMember.path() + " (" + smallest + " bytes) cannot hold one"
                        + " stripe of " + stripeBytes + " bytes (slot_bytes); use a larger file or device");
            }
            List<String> names = members.stream().map(BlockDevice::path).toList();
            StripedBlockDevice d = new StripedBlockDevice(String.join(",", names), members, stripeBytes, memberBytes,
                    label, lbs, maxTransfer, alignment, options);
            if (d.buffers().capacity() > 0) {
                try {
                    d.registerBuffers(d.buffers().region());
                } catch (IOException e) { // e.g. RLIMIT_MEMLOCK: the pool's I/O then copies, which works
                    LOG.log(System.Logger.Level.WARNING, d.path() + ": buffer pool not registered with the members: "
                            + e.getMessage());
                }
            }
            return d;
        } catch (RuntimeException e) {
            members.forEach(BlockDevice::close);
            throw e;
        }
    }

    /** The members, in stripe order (member 0 holds the metadata area). */
    public List<BlockDevice> members() {
        return members;
    }

    public long stripeBytes() {
        return stripeBytes;
    }

    /** Whether the members carry labels that were checked at open (false: written before labels). */
    public boolean labelled() {
        return label != null;
    }

    /** Member 0's label, or null without labels. */
    public MemberLabel label() {
        return label;
    }

    /** Each member's share of the store, in bytes: member 0 holds the metadata area in the first of its share. */
    public long memberBytes() {
        return memberBytes;
    }

    /**
     * Names where the data area starts; from here offsets at or past it are striped. A store calls it
     * once its metadata area is known; the same value again is accepted.
     *
     * @throws IllegalArgumentException when it is not block aligned or leaves member 0 no room
     * @throws IllegalStateException when the data area was already named elsewhere
     */
    public synchronized void startDataAt(long base) {
        if (dataBase == base) {
            return;
        }
        if (dataBase >= 0) {
            throw new IllegalStateException(path() + ": the data area already starts at " + dataBase
                    + "; one striped device serves one store layout (asked for " + base + ")");
        }
        if (base < 0 || base % logicalBlockSize() != 0 || base >= memberBytes) {
            throw new IllegalArgumentException(path() + ": data area start " + base + " must be block aligned ("
                    + logicalBlockSize() + ") and below the members' usable size " + memberBytes);
        }
        dataBase = base;
    }

    /** Where a logical offset lies: the member, its offset there, and the logical end of that contiguous run. */
    private record Piece(int member, long offset, long end) {}

    private Piece locate(long pos) throws IOException {
        long base = dataBase;
        if (base < 0) {
            if (pos >= memberBytes) {
                throw new IOException(path() + ": offset " + pos + " is past the metadata member "
                        + members.get(0).path() + " before the store named its data area");
            }
            return new Piece(0, memberBase + pos, memberBytes);
        }
        if (pos < base) {
            return new Piece(0, memberBase + pos, base);
        }
        int n = members.size();
        long unit = (pos - base) / stripeBytes;
        long within = (pos - base) % stripeBytes;
        long a = (memberBytes - base) / stripeBytes; // member 0's units
        int member;
        long index;
        if (unit < n * a) {
            member = (int) (unit % n);
            index = unit / n;
        } else {
            long t = unit - n * a;
            member = 1 + (int) (t % (n - 1));
            index = a + t / (n - 1);
        }
        long memberOffset = (member == 0 ? base : 0) + index * stripeBytes;
        if (memberOffset + stripeBytes > memberBytes) {
            throw new IOException(path() + ": offset " + pos + " is past the striped data area");
        }
        return new Piece(member, memberBase + memberOffset + within, pos - within + stripeBytes);
    }

    /** Which member and member offset a logical offset maps to, e.g. for tests and inspection: {member, offset}. */
    public long[] map(long offset) throws IOException {
        Piece p = locate(offset);
        return new long[] {p.member, p.offset};
    }

    @Override
    public IoEngine engine() {
        return members.get(0).engine();
    }

    @Override
    boolean isDirectIo() {
        return bufferAlignment() > 1;
    }

    // ---------------------------------------------------------------- FDP

    @Override
    public boolean supportsPlacement() {
        return members.stream().allMatch(BlockDevice::supportsPlacement);
    }

    @Override
    public String placementUnsupportedReason() {
        for (BlockDevice d : members) {
            if (!d.supportsPlacement()) {
                return "member " + d.path() + " of " + path() + " cannot carry placement ids: "
                        + d.placementUnsupportedReason();
            }
        }
        return null;
    }

    @Override
    public List<Integer> placementIds() throws IOException {
        if (!supportsPlacement()) {
            return List.of();
        }
        int[][] ids = placementTable();
        List<Integer> out = new ArrayList<>(ids[0].length);
        for (int id : ids[0]) {
            out.add(id);
        }
        return out;
    }

    /** Per member, its ids by position, cut to the fewest any member reports; asked of each member once. */
    private int[][] placementTable() throws IOException {
        int[][] t = memberIds;
        if (t != null) {
            return t;
        }
        synchronized (this) {
            if (memberIds != null) {
                return memberIds;
            }
            List<List<Integer>> lists = new ArrayList<>();
            int common = Integer.MAX_VALUE;
            for (BlockDevice d : members) {
                List<Integer> l = d.placementIds();
                if (l.isEmpty()) {
                    throw new IOException("member " + d.path() + " of " + path() + " reports no placement ids (RUH"
                            + " Status is empty): enable FDP on it, or set fdp_enabled to false");
                }
                lists.add(l);
                common = Math.min(common, l.size());
            }
            for (int m = 0; m < lists.size(); m++) {
                if (lists.get(m).size() != common) {
                    LOG.log(System.Logger.Level.WARNING, path() + ": member " + members.get(m).path() + " reports "
                            + lists.get(m).size() + " placement ids, another only " + common + "; the store uses the"
                            + " first " + common + " of each");
                }
            }
            t = new int[members.size()][common];
            Map<Integer, Integer> pos = new HashMap<>();
            for (int m = 0; m < t.length; m++) {
                for (int p = 0; p < common; p++) {
                    t[m][p] = lists.get(m).get(p);
                }
            }
            for (int p = 0; p < common; p++) {
                pos.putIfAbsent(t[0][p], p);
            }
            idPosition = Map.copyOf(pos);
            memberIds = t;
            return t;
        }
    }

    /** Member {@code m}'s own id for the store's id {@code id} (member 0's), by position. */
    private PlacementId memberPlacement(PlacementId id, int m, String what) throws IOException {
        if (id.isNone()) {
            return id;
        }
        int[][] t = placementTable();
        Integer p = idPosition.get(id.value());
        if (p == null) {
            throw new IOException(what + ": placement id " + id + " is not one of " + path() + "'s ids "
                    + placementIds() + " (member 0's); nothing was submitted");
        }
        return PlacementId.ofRaw(t[m][p]);
    }

    /** {@code n} times the smallest member's reclaim unit (a slot group fills one on each); 0 when one is unknown. */
    @Override
    public long reclaimUnitBytes() throws IOException {
        long min = Long.MAX_VALUE;
        for (BlockDevice d : members) {
            long ru = d.reclaimUnitBytes();
            if (ru <= 0) {
                return 0;
            }
            min = Math.min(min, ru);
        }
        return min * members.size();
    }

    @Override
    public boolean supportsDeallocate() {
        return members.stream().anyMatch(BlockDevice::supportsDeallocate);
    }

    // ---------------------------------------------------------------- buffers

    @Override
    public boolean registerBuffers(MemorySegment region) throws IOException {
        boolean any = false;
        List<BlockDevice> done = new ArrayList<>();
        try {
            for (BlockDevice d : members) {
                any |= d.registerBuffers(region);
                done.add(d);
            }
        } catch (IOException | RuntimeException e) {
            for (BlockDevice d : done) {
                try {
                    d.unregisterBuffers(region);
                } catch (IOException | RuntimeException u) {
                    e.addSuppressed(u);
                }
            }
            throw e;
        }
        return any;
    }

    @Override
    public void unregisterBuffers(MemorySegment region) throws IOException {
        IOException first = null;
        for (BlockDevice d : members) {
            try {
                d.unregisterBuffers(region);
            } catch (IOException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public long fixedBufferOps() {
        return members.stream().mapToLong(BlockDevice::fixedBufferOps).sum();
    }

    // ---------------------------------------------------------------- I/O

    /** A member's share of a caller's batch: its operations, and for each the caller's operation. */
    private static final class Part {
        final IoBatch batch = new IoBatch(4);
        int[] callerOp = new int[4];

        void add(int op) {
            int k = batch.size() - 1;
            if (k == callerOp.length) {
                callerOp = Arrays.copyOf(callerOp, k * 2);
            }
            callerOp[k] = op;
        }
    }

    /**
     * Splits {@code batch} into one batch per member it touches and submits them; {@code callback} runs
     * once every part has completed. A part whose submission fails after another was submitted fails
     * its operations (the callback still waits for the parts in flight); when the first fails, nothing
     * was submitted and it is thrown.
     */
    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        enter("submit");
        try {
            validate(batch);
            if (labelWrite != LabelWrite.NONE && writes(batch)) {
                commitLabels();
            }
            Part[] parts = split(batch);
            int live = 0;
            for (Part p : parts) {
                live += p != null ? 1 : 0;
            }
            if (live == 0) {
                complete(batch, callback);
                return;
            }
            AtomicInteger pending = new AtomicInteger(live);
            boolean submitted = false;
            for (int m = 0; m < parts.length; m++) {
                Part p = parts[m];
                if (p == null) {
                    continue;
                }
                try {
                    members.get(m).submit(p.batch, b -> partDone(batch, p, pending, callback));
                    submitted = true;
                } catch (IOException | RuntimeException e) {
                    if (!submitted) {
                        throw e; // nothing of the batch is in flight
                    }
                    IOException cause = e instanceof IOException io ? io
                            : new IOException("submit on " + members.get(m).path(), e);
                    for (int k = 0; k < p.batch.size(); k++) {
                        synchronized (batch) {
                            batch.failPart(p.callerOp[k], cause);
                        }
                    }
                    if (pending.decrementAndGet() == 0) {
                        complete(batch, callback);
                    }
                }
            }
        } finally {
            leave();
        }
    }

    private static boolean writes(IoBatch batch) {
        for (int i = 0; i < batch.size(); i++) {
            if (!batch.isFlush(i) && !batch.isRead(i)) {
                return true;
            }
        }
        return false;
    }

    private void partDone(IoBatch batch, Part p, AtomicInteger pending, IoBatch.Callback callback) {
        IoBatch b = p.batch;
        synchronized (batch) { // parts complete on the members' reactors, possibly at once
            for (int k = 0; k < b.size(); k++) {
                int op = p.callerOp[k];
                if (b.failed(k)) {
                    batch.failPart(op, b.failure(k));
                } else {
                    batch.completePart(op, b.result(k));
                }
            }
            if (b.buffersMayBeInUse()) {
                batch.markBuffersMayBeInUse();
                abandoned = true;
            }
        }
        if (pending.decrementAndGet() == 0) {
            complete(batch, callback);
        }
    }

    /** Per member, its share of {@code batch} (null: none); every caller operation's parts are counted. */
    private Part[] split(IoBatch batch) throws IOException {
        int n = members.size();
        Part[] parts = new Part[n];
        for (int i = 0; i < batch.size(); i++) {
            if (batch.isFlush(i)) {
                batch.beginParts(i, n);
                for (int m = 0; m < n; m++) {
                    part(parts, m).batch.flush();
                    parts[m].add(i);
                }
                continue;
            }
            long start = batch.offset(i);
            long end = start + batch.length(i);
            if (batch.isRead(i)) {
                end = Math.min(end, sizeBytes()); // a read past the end is short, as on any device
            }
            // member, member offset, logical offset, length. Pieces contiguous on a member are merged: for
            // a deallocation whatever lies between them (a run of slots is one range per member); for a
            // read or write only when the buffer is contiguous too (the previous piece).
            List<long[]> pieces = new ArrayList<>();
            long[][] lastOf = new long[n][];
            boolean dealloc = batch.isDeallocate(i);
            for (long pos = start; pos < end; ) {
                Piece pc = locate(pos);
                long len = Math.min(pc.end, end) - pos;
                long[] last = dealloc ? lastOf[pc.member]
                        : pieces.isEmpty() ? null : pieces.get(pieces.size() - 1);
                if (last != null && last[0] == pc.member && last[1] + last[3] == pc.offset) {
                    last[3] += len;
                } else {
                    last = new long[] {pc.member, pc.offset, pos, len};
                    pieces.add(last);
                    lastOf[pc.member] = last;
                }
                pos += len;
            }
            batch.beginParts(i, pieces.size());
            if (pieces.isEmpty()) {
                batch.complete(i, 0);
                continue;
            }
            for (long[] pc : pieces) {
                int m = (int) pc[0];
                Part p = part(parts, m);
                if (batch.isDeallocate(i)) {
                    p.batch.deallocate(pc[1], pc[3]);
                } else {
                    MemorySegment buf = batch.buffer(i).asSlice(pc[2] - start, pc[3]);
                    if (batch.isRead(i)) {
                        p.batch.read(pc[1], buf);
                    } else {
                        p.batch.write(pc[1], buf, memberPlacement(batch.placementId(i), m, batch.describe(i)));
                    }
                }
                p.add(i);
            }
        }
        return parts;
    }

    private static Part part(Part[] parts, int m) {
        if (parts[m] == null) {
            parts[m] = new Part();
        }
        return parts[m];
    }

    /** Flushes every member (a flush barrier is per device). */
    @Override
    public void flush() throws IOException {
        IoBatch b = new IoBatch(1);
        b.flush();
        execute(b);
    }

    /** Closes every member (each completes what it accepted first). */
    @Override
    public void close() {
        if (!markClosedAndDrain()) {
            return;
        }
        for (BlockDevice d : members) {
            try {
                d.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "closing member " + d.path() + " of " + path() + " failed", e);
            }
        }
        if (!abandoned) {
            buffers().close();
        }
    }

    @Override
    public String toString() {
        return "StripedBlockDevice[" + path() + ", " + members.size() + " members of " + memberBytes + " bytes, stripe "
                + stripeBytes + (label != null ? ", store " + label.storeId() : ", unlabelled")
                + (dataBase >= 0 ? ", data from " + dataBase : "") + "]";
    }
}
