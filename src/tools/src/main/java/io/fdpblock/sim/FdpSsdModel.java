package io.fdpblock.sim;

import java.util.Arrays;

/**
 * A page-mapped model of an NVMe FDP SSD that counts what garbage collection costs: media bytes written
 * for host bytes written (WAF).
 *
 * <p>The media is split into reclaim groups of reclaim units (the erase unit). Every reclaim unit handle
 * has, in every group, one open unit that takes the host writes of the placement ids naming it; a unit
 * that fills is closed. Garbage collection picks a closed unit ({@link GcPolicy}), copies its valid
 * blocks into a relocation unit and erases it: initially isolated handles share one relocation stream per
 * group, each persistently isolated handle has its own. It runs when a group is down to its last free
 * unit, the one a relocation may need. An overwrite or a deallocation invalidates the old copy; a full
 * unit with no valid block left is erased without copies.
 *
 * <p>State is a handful of primitive arrays (one entry per mapping unit or reclaim unit, no object per
 * block), so a model of a 1 GiB namespace takes a few MiB and replays tens of millions of blocks per
 * second. Not thread-safe.
 */
public final class FdpSsdModel {
    private static final byte FREE = 0;
    private static final byte OPEN = 1;
    private static final byte CLOSED = 2;

    private final ModelConfig config;
    private final int unitBytes;
    private final int perRu;
    private final int groups;
    private final int rusPerGroup;
    private final int handles;
    /** Streams per group: host streams 0..handles-1, the shared relocation stream, one per persistent handle. */
    private final int streams;
    private final int sharedGc;
    private final boolean[] persistent;
    private final int groupShift;
    private final int handleMask;
    private final int[] placementToHandle;
    private final int logicalUnits;

    /** Logical unit -> physical block (ru * perRu + index), or -1. */
    private final int[] l2p;
    /** Physical block -> logical unit, or -1 when it holds nothing valid. */
    private final int[] p2l;
    /** Logical unit -> the handle that last wrote it (whose GC copies it counts as). */
    private final char[] origin;
    private final int[] ruValid;
    private final int[] ruFill;
    private final int[] ruStream;
    /** Host time ({@link #now}) at which the unit filled: the age cost-benefit weighs. */
    private final long[] ruFilledAt;
    /**
     * Order in which units filled (unique): FIFO's order and greedy's tie-break. It depends only on the
     * order of writes, never on which physical unit happened to be free, so two runs of the same writes
     * pick the same victims.
     */
    private final long[] ruCloseSeq;
    private long closes;
    private final byte[] ruState;
    /** Free units, a stack per group in [g * rusPerGroup, g * rusPerGroup + freeCount[g]). */
    private final int[] free;
    private final int[] freeCount;
    /** Open unit of stream s in group g at [g * streams + s], or -1. */
    private final int[] open;

    private long now;
    private long hostUnits;
    private long gcUnits;
    private long erases;
    private long deallocatedUnits;
    private long invalidPlacementWrites;
    private final long[] hostByHandle;
    private final long[] gcByHandle;

    public FdpSsdModel(ModelConfig config) {
        this.config = config;
        this.unitBytes = config.unitBytes();
        this.perRu = Math.toIntExact(config.reclaimUnitBytes() / unitBytes);
        this.groups = config.reclaimGroups();
        this.handles = config.handles();
        long logical = config.logicalBytes() / unitBytes;
        long rus = config.reclaimUnitsPerGroup();
        long physical = rus * groups * perRu;
        if (logical > ModelConfig.MAX_MAP_ENTRIES || physical > ModelConfig.MAX_MAP_ENTRIES) {
            long need = Math.max(logical, physical);
            int suggest = unitBytes;
            while (need > ModelConfig.MAX_MAP_ENTRIES) {
                need /= 2;
                suggest *= 2;
            }
            throw new IllegalArgumentException("a model of " + config.logicalBytes() + " bytes at " + unitBytes
                    + "-byte mapping units needs " + Math.max(logical, physical) + " map entries; at most "
                    + ModelConfig.MAX_MAP_ENTRIES + ": use a mapping unit of " + suggest + " bytes or more");
        }
        this.rusPerGroup = (int) rus;
        this.logicalUnits = (int) logical;
        this.sharedGc = handles;
        this.streams = 2 * handles + 1;
        this.persistent = new boolean[handles];
        for (int h = 0; h < handles; h++) {
            persistent[h] = config.handleTypes().get(h) == HandleType.PERSISTENTLY_ISOLATED;
        }
        this.groupShift = 16 - config.rgif();
        this.handleMask = (1 << groupShift) - 1;
        this.placementToHandle = config.placementHandles().stream().mapToInt(Integer::intValue).toArray();
        int minUnits = 2 + handles + 1 + (int) config.handleTypes().stream().filter(t -> t == HandleType.PERSISTENTLY_ISOLATED).count();
        if (rusPerGroup < minUnits) {
            throw new IllegalArgumentException("each reclaim group has " + rusPerGroup + " reclaim units of "
                    + config.reclaimUnitBytes() + " bytes; " + handles + " handles need at least " + minUnits
                    + " (one open per handle, relocation, two free): use smaller reclaim units or fewer handles");
        }

        int totalRus = rusPerGroup * groups;
        l2p = new int[logicalUnits];
        Arrays.fill(l2p, -1);
        p2l = new int[(int) physical];
        Arrays.fill(p2l, -1);
        origin = new char[logicalUnits];
        ruValid = new int[totalRus];
        ruFill = new int[totalRus];
        ruStream = new int[totalRus];
        ruFilledAt = new long[totalRus];
        ruCloseSeq = new long[totalRus];
        ruState = new byte[totalRus];
        free = new int[totalRus];
        freeCount = new int[groups];
        for (int g = 0; g < groups; g++) {
            for (int i = 0; i < rusPerGroup; i++) {
                // the lowest-numbered unit on top of the stack: allocation in unit order, easy to follow
                free[g * rusPerGroup + i] = g * rusPerGroup + rusPerGroup - 1 - i;
            }
            freeCount[g] = rusPerGroup;
        }
        open = new int[groups * streams];
        Arrays.fill(open, -1);
        hostByHandle = new long[handles];
        gcByHandle = new long[handles];
    }

    public ModelConfig config() {
        return config;
    }

    /**
     * Fills the whole namespace once, in order, through placement handle 0 (spread evenly over the groups),
     * then zeroes the counters: the state of a device that was written full before the trace began.
     */
    public void precondition() {
        for (int u = 0; u < logicalUnits; u++) {
            int g = (int) ((long) u * groups / logicalUnits);
            writeUnit(u, g, placementToHandle[0]);
        }
        hostUnits = 0;
        gcUnits = 0;
        erases = 0;
        Arrays.fill(hostByHandle, 0);
        Arrays.fill(gcByHandle, 0);
    }

    /**
     * A host write of {@code length} bytes at {@code offset} with placement id {@code placementId} (0 = no
     * directive: placement handle 0 of group 0). An id whose group or placement handle does not exist is
     * counted ({@link #invalidPlacementWrites()}) and written as id 0, as the emulated device does.
     */
    public void write(long offset, long length, int placementId) {
        checkRange(offset, length, "write");
        int g = placementId >>> groupShift;
        int ph = placementId & handleMask;
        if (g >= groups || ph >= placementToHandle.length) {
            invalidPlacementWrites++;
            g = 0;
            ph = 0;
        }
        int h = placementToHandle[ph];
        long first = offset / unitBytes;
        long last = (offset + length - 1) / unitBytes;
        for (long u = first; u <= last; u++) {
            writeUnit((int) u, g, h);
        }
    }

    /** Invalidates every mapping unit wholly inside the range (a partly covered unit keeps its data). */
    public void deallocate(long offset, long length) {
        checkRange(offset, length, "deallocate");
        long first = (offset + unitBytes - 1) / unitBytes;
        long end = (offset + length) / unitBytes;
        for (long u = first; u < end; u++) {
            if (invalidate((int) u)) {
                deallocatedUnits++;
            }
        }
    }

    private void checkRange(long offset, long length, String what) {
        if (offset < 0 || length <= 0 || length > config.logicalBytes() - offset) {
            throw new IllegalArgumentException(what + " at offset " + offset + ", length " + length
                    + " is outside the modelled namespace of " + config.logicalBytes() + " bytes");
        }
    }

    private void writeUnit(int u, int g, int h) {
        invalidate(u);
        int slot = g * streams + h;
        int ru = open[slot];
        if (ru < 0) {
            while (freeCount[g] < 2) {
                collect(g);
            }
            ru = open[slot] = take(g, h);
        }
        place(ru, u);
        origin[u] = (char) h;
        hostUnits++;
        hostByHandle[h]++;
        now++;
        if (ruFill[ru] == perRu) {
            open[slot] = -1;
            close(ru);
        }
    }

    private void place(int ru, int u) {
        int p = ru * perRu + ruFill[ru]++;
        p2l[p] = u;
        l2p[u] = p;
        ruValid[ru]++;
    }

    private boolean invalidate(int u) {
        int p = l2p[u];
        if (p < 0) {
            return false;
        }
        l2p[u] = -1;
        p2l[p] = -1;
        int ru = p / perRu;
        if (--ruValid[ru] == 0 && ruState[ru] == CLOSED) {
            erase(ru);
        }
        return true;
    }

    private void close(int ru) {
        ruFilledAt[ru] = now;
        ruCloseSeq[ru] = closes++;
        ruState[ru] = CLOSED;
        if (ruValid[ru] == 0) {
            erase(ru);
        }
    }

    private int take(int g, int stream) {
        if (freeCount[g] == 0) {
            throw stuck(g, "no free reclaim unit is left for relocation");
        }
        int ru = free[g * rusPerGroup + --freeCount[g]];
        ruState[ru] = OPEN;
        ruStream[ru] = stream;
        ruFill[ru] = 0;
        ruValid[ru] = 0;
        return ru;
    }

    private void erase(int ru) {
        int g = ru / rusPerGroup;
        ruState[ru] = FREE;
        ruValid[ru] = 0;
        ruFill[ru] = 0;
        free[g * rusPerGroup + freeCount[g]++] = ru;
        erases++;
    }

    /** Garbage-collects one unit of group {@code g}: copies its valid blocks out, erases it. */
    private void collect(int g) {
        int victim = pickVictim(g);
        if (victim < 0) {
            throw stuck(g, "no reclaim unit is full yet, all are open");
        }
        if (ruValid[victim] >= perRu && !anyReclaimable(g)) {
            // FIFO and cost-benefit may pick a unit that is all valid (copying it moves the log on); when
            // every full unit is all valid, no collection can ever free anything
            throw stuck(g, "every full reclaim unit holds only valid data, so collecting one frees nothing");
        }
        int s = ruStream[victim];
        int dest = s < handles ? (persistent[s] ? sharedGc + 1 + s : sharedGc) : s;
        int slot = g * streams + dest;
        int base = victim * perRu;
        for (int i = 0; i < perRu; i++) {
            int u = p2l[base + i];
            if (u < 0) {
                continue;
            }
            int ru = open[slot];
            if (ru < 0) {
                ru = open[slot] = take(g, dest);
            }
            p2l[base + i] = -1;
            ruValid[victim]--;
            place(ru, u);
            gcUnits++;
            gcByHandle[origin[u]]++;
            if (ruFill[ru] == perRu) {
                open[slot] = -1;
                close(ru);
            }
        }
        erase(victim);
    }

    private boolean anyReclaimable(int g) {
        for (int ru = g * rusPerGroup; ru < (g + 1) * rusPerGroup; ru++) {
            if (ruState[ru] == CLOSED && ruValid[ru] < perRu) {
                return true;
            }
        }
        return false;
    }

    private int pickVictim(int g) {
        int from = g * rusPerGroup;
        int to = from + rusPerGroup;
        int best = -1;
        switch (config.gc()) {
            case GREEDY -> {
                int least = Integer.MAX_VALUE;
                for (int ru = from; ru < to; ru++) {
                    if (ruState[ru] == CLOSED && (ruValid[ru] < least
                            || ruValid[ru] == least && ruCloseSeq[ru] < ruCloseSeq[best])) {
                        least = ruValid[ru];
                        best = ru;
                    }
                }
            }
            case FIFO -> {
                long oldest = Long.MAX_VALUE;
                for (int ru = from; ru < to; ru++) {
                    if (ruState[ru] == CLOSED && ruCloseSeq[ru] < oldest) {
                        oldest = ruCloseSeq[ru];
                        best = ru;
                    }
                }
            }
            case COST_BENEFIT -> {
                double top = -1;
                for (int ru = from; ru < to; ru++) {
                    if (ruState[ru] == CLOSED) {
                        double u = (double) ruValid[ru] / perRu;
                        double score = (1 - u) * (now - ruFilledAt[ru] + 1) / (1 + u);
                        if (score > top || score == top && ruCloseSeq[ru] < ruCloseSeq[best]) {
                            top = score;
                            best = ru;
                        }
                    }
                }
            }
        }
        return best;
    }

    private IllegalStateException stuck(int g, String why) {
        long valid = 0;
        for (int ru = g * rusPerGroup; ru < (g + 1) * rusPerGroup; ru++) {
            valid += ruValid[ru];
        }
        return new IllegalStateException("the model ran out of media in reclaim group " + g + ": " + why + " ("
                + rusPerGroup + " units of " + config.reclaimUnitBytes() + " bytes hold " + valid * unitBytes
                + " valid bytes; over-provisioning " + config.overProvisioning() + "): raise the over-provisioning,"
                + " or use smaller reclaim units or fewer handles");
    }

    /** Mapping units the host wrote (a write covering part of a unit counts the whole unit). */
    public long hostUnits() {
        return hostUnits;
    }

    /** Mapping units garbage collection copied. */
    public long gcUnits() {
        return gcUnits;
    }

    public long mediaUnits() {
        return hostUnits + gcUnits;
    }

    public long hostBytes() {
        return hostUnits * unitBytes;
    }

    public long mediaBytes() {
        return mediaUnits() * unitBytes;
    }

    /** Media bytes / host bytes so far (1 before any write). */
    public double waf() {
        return hostUnits == 0 ? 1.0 : (double) mediaUnits() / hostUnits;
    }

    public long erases() {
        return erases;
    }

    /** Mapping units a deallocation invalidated (units that held data). */
    public long deallocatedUnits() {
        return deallocatedUnits;
    }

    public long invalidPlacementWrites() {
        return invalidPlacementWrites;
    }

    /** Units the host wrote through reclaim unit handle {@code h}. */
    public long hostUnitsByHandle(int h) {
        return hostByHandle[h];
    }

    /** Units of data last written through handle {@code h} that garbage collection copied. */
    public long gcUnitsByHandle(int h) {
        return gcByHandle[h];
    }

    /** Logical units that hold data. */
    public long validUnits() {
        long v = 0;
        for (int x : ruValid) {
            v += x;
        }
        return v;
    }

    public int unitBytes() {
        return unitBytes;
    }

    /** The reclaim unit holding the data at {@code offset}, or -1 when it holds none (for tests). */
    int reclaimUnitOf(long offset) {
        int p = l2p[(int) (offset / unitBytes)];
        return p < 0 ? -1 : p / perRu;
    }

    /** The reclaim group of reclaim unit {@code ru}. */
    int groupOf(int ru) {
        return ru / rusPerGroup;
    }

    /** The handle whose host writes fill {@code ru}, or -1 when a relocation stream fills it. */
    int hostHandleOf(int ru) {
        return ruStream[ru] < handles ? ruStream[ru] : -1;
    }

    /** Valid mapping units in {@code ru}. */
    int validIn(int ru) {
        return ruValid[ru];
    }

    /** Free reclaim units of group {@code g}. */
    int freeUnits(int g) {
        return freeCount[g];
    }

    public int reclaimUnitsPerGroup() {
        return rusPerGroup;
    }

    public int blocksPerReclaimUnit() {
        return perRu;
    }

    public int logicalUnits() {
        return logicalUnits;
    }
}
