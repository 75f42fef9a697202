package io.fdpblock.sim;

import io.fdpblock.nvme.FdpRecords;
import io.fdpblock.nvme.NvmeNamespace;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The parameters of {@link FdpSsdModel}: an FDP namespace's geometry as the FDP configuration log
 * describes it, plus what no log page tells (over-provisioning, the garbage collection policy, the
 * model's mapping unit).
 *
 * @param logicalBytes the namespace's capacity (host-visible)
 * @param unitBytes the model's mapping unit: the LBA size, or a multiple of it for very large namespaces
 * @param reclaimUnitBytes RUNS: bytes of one reclaim unit
 * @param reclaimGroups NRG
 * @param handleTypes the type of each reclaim unit handle (NRUH entries)
 * @param rgif reclaim group identifier format: the top {@code rgif} bits of a placement id select the group
 * @param placementHandles the namespace's placement handle list: entry {@code i} is the reclaim unit
 *        handle that placement handle {@code i} refers to
 * @param overProvisioning physical capacity beyond the logical, as a fraction of it (0.07 = 7 %)
 * @param gc victim selection
 */
public record ModelConfig(long logicalBytes, int unitBytes, long reclaimUnitBytes, int reclaimGroups,
        List<HandleType> handleTypes, int rgif, List<Integer> placementHandles, double overProvisioning, GcPolicy gc) {

    /** The emulated device of the test bed (TESTBED.md): 1 GiB of 4 KiB blocks, 1 group, 8 handles, 8 MiB units. */
    public static final long EMULATED_NAMESPACE_BYTES = 1L << 30;
    public static final int EMULATED_LBA_BYTES = 4096;
    public static final long EMULATED_RU_BYTES = 8L << 20;
    public static final int EMULATED_HANDLES = 8;
    /** Not in any log page; a common data-center SSD figure (1 - 10^9/2^30 is about 7 %). */
    public static final double DEFAULT_OVER_PROVISIONING = 0.07;
    /**
     * Largest map {@link FdpSsdModel} builds (entries of its logical or physical map): 512 MiB of ints each,
     * a 512 GiB namespace at 4 KiB units, about 1.3 GiB of heap in all.
     */
    public static final long MAX_MAP_ENTRIES = 1L << 27;

    public ModelConfig {
        handleTypes = List.copyOf(handleTypes);
        placementHandles = List.copyOf(placementHandles);
        if (unitBytes < 512 || Integer.bitCount(unitBytes) != 1) {
            throw new IllegalArgumentException("mapping unit " + unitBytes + " bytes must be a power of two >= 512");
        }
        if (logicalBytes <= 0 || logicalBytes % unitBytes != 0) {
            throw new IllegalArgumentException("namespace of " + logicalBytes + " bytes must be a positive multiple of"
                    + " the mapping unit (" + unitBytes + " bytes)");
        }
        if (reclaimUnitBytes < unitBytes || reclaimUnitBytes % unitBytes != 0 || reclaimUnitBytes / unitBytes > (1 << 30)) {
            throw new IllegalArgumentException("reclaim unit of " + reclaimUnitBytes + " bytes must be a multiple of the"
                    + " mapping unit (" + unitBytes + " bytes) and at most 2^30 of them");
        }
        if (rgif < 0 || rgif > 15) {
            throw new IllegalArgumentException("RGIF " + rgif + " must be in 0..15");
        }
        int maxGroups = rgif == 0 ? 1 : 1 << rgif;
        if (reclaimGroups < 1 || reclaimGroups > maxGroups) {
            throw new IllegalArgumentException(reclaimGroups + " reclaim groups: need 1.." + maxGroups + " with RGIF "
                    + rgif + " (a placement id has " + rgif + " reclaim group bits)");
        }
        if (handleTypes.isEmpty() || handleTypes.size() > 0xFFFF) {
            throw new IllegalArgumentException(handleTypes.size() + " reclaim unit handles: need 1..65535");
        }
        if (placementHandles.isEmpty() || placementHandles.size() > (1 << (16 - rgif))) {
            throw new IllegalArgumentException(placementHandles.size() + " placement handles: need 1.."
                    + (1 << (16 - rgif)) + " with RGIF " + rgif);
        }
        for (int ruh : placementHandles) {
            if (ruh < 0 || ruh >= handleTypes.size()) {
                throw new IllegalArgumentException("placement handle list names reclaim unit handle " + ruh
                        + ", but there are " + handleTypes.size() + " (0.." + (handleTypes.size() - 1) + ")");
            }
        }
        if (!(overProvisioning >= 0) || overProvisioning > 16) {
            throw new IllegalArgumentException("over-provisioning " + overProvisioning
                    + " must be a fraction in 0..16 (0.07 = 7 % more media than the namespace)");
        }
        if (gc == null) {
            throw new IllegalArgumentException("a garbage collection policy is needed: greedy, cost-benefit or fifo");
        }
    }

    /** The emulated device (TESTBED.md) with {@link #DEFAULT_OVER_PROVISIONING} and greedy GC. */
    public static ModelConfig emulated() {
        return new ModelConfig(EMULATED_NAMESPACE_BYTES, EMULATED_LBA_BYTES, EMULATED_RU_BYTES, 1,
                Collections.nCopies(EMULATED_HANDLES, HandleType.INITIALLY_ISOLATED), 0, identity(EMULATED_HANDLES),
                DEFAULT_OVER_PROVISIONING, GcPolicy.GREEDY);
    }

    /**
     * The traced device's geometry as far as the trace header tells it (size, LBA size, and for a device
     * with FDP its reclaim unit size and placement id count, one initially isolated handle per id), the
     * rest as in {@link #emulated()}.
     */
    public static ModelConfig forTrace(TraceFormat.Header h) {
        ModelConfig c = emulated().withLogicalBytes(h.deviceBytes()).withUnitBytes(h.lbaBytes());
        if (h.reclaimUnitBytes() > 0) {
            c = c.withReclaimUnitBytes(h.reclaimUnitBytes());
        }
        if (h.placementIdCount() > 0) {
            c = c.withHandles(h.placementIdCount(), HandleType.INITIALLY_ISOLATED);
        }
        return c;
    }

    /**
     * A real namespace's geometry: its size and LBA size, and from its active FDP configuration the
     * reclaim groups, RUNS, RGIF and handle types, and from RUH Status which handle each placement id
     * names. Over-provisioning and GC stay as in {@link #emulated()} (no log page tells them).
     */
    public static ModelConfig fromDevice(NvmeNamespace ns) throws IOException {
        FdpRecords.FdpConfiguration c = ns.activeFdpConfiguration();
        List<HandleType> types = new ArrayList<>();
        for (int t : c.handleTypes()) {
            try {
                types.add(HandleType.ofCode(t));
            } catch (IllegalArgumentException e) {
                throw new IOException(ns.path() + ": FDP configuration " + c.index() + ": " + e.getMessage(), e);
            }
        }
        int mask = (1 << c.placementHandleBits()) - 1;
        List<FdpRecords.RuhStatusEntry> entries = ns.ruhStatus().entries();
        int phndls = entries.stream().mapToInt(e -> e.placementId() & mask).max().orElse(-1) + 1;
        if (phndls == 0) {
            throw new IOException(ns.path() + ": RUH Status lists no placement handle: is FDP enabled on it?");
        }
        Integer[] list = new Integer[phndls];
        for (FdpRecords.RuhStatusEntry e : entries) {
            list[e.placementId() & mask] = e.ruhId();
        }
        for (int i = 0; i < phndls; i++) {
            if (list[i] == null) {
                list[i] = list[0]; // a gap in the list: the device would not accept the id; charge it to handle 0's
            }
        }
        return new ModelConfig(ns.sizeBytes(), ns.lbaSize(), c.reclaimUnitBytes(), (int) c.reclaimGroups(), types,
                c.rgif(), List.of(list), DEFAULT_OVER_PROVISIONING, GcPolicy.GREEDY);
    }

    private static List<Integer> identity(int n) {
        return IntStream.range(0, n).boxed().toList();
    }

    public int handles() {
        return handleTypes.size();
    }

    /** Reclaim units in each group: the namespace plus over-provisioning, split evenly, rounded up. */
    public long reclaimUnitsPerGroup() {
        double physical = logicalBytes * (1 + overProvisioning) / reclaimGroups;
        return (long) Math.ceil(physical / reclaimUnitBytes - 1e-9);
    }

    /** Media bytes the model has. */
    public long physicalBytes() {
        return reclaimUnitsPerGroup() * reclaimGroups * reclaimUnitBytes;
    }

    public ModelConfig withLogicalBytes(long bytes) {
        return new ModelConfig(bytes, unitBytes, reclaimUnitBytes, reclaimGroups, handleTypes, rgif, placementHandles,
                overProvisioning, gc);
    }

    public ModelConfig withUnitBytes(int bytes) {
        return new ModelConfig(logicalBytes, bytes, reclaimUnitBytes, reclaimGroups, handleTypes, rgif, placementHandles,
                overProvisioning, gc);
    }

    public ModelConfig withReclaimUnitBytes(long bytes) {
        return new ModelConfig(logicalBytes, unitBytes, bytes, reclaimGroups, handleTypes, rgif, placementHandles,
                overProvisioning, gc);
    }

    /** {@code groups} reclaim groups, with the smallest RGIF that addresses them. */
    public ModelConfig withReclaimGroups(int groups) {
        int bits = groups <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(groups - 1);
        int keep = Math.min(placementHandles.size(), 1 << (16 - bits));
        return new ModelConfig(logicalBytes, unitBytes, reclaimUnitBytes, groups, handleTypes, bits,
                placementHandles.subList(0, keep), overProvisioning, gc);
    }

    /** {@code n} handles of one type, placement handle {@code i} naming handle {@code i}. */
    public ModelConfig withHandles(int n, HandleType type) {
        return new ModelConfig(logicalBytes, unitBytes, reclaimUnitBytes, reclaimGroups, Collections.nCopies(n, type),
                rgif, identity(Math.min(n, 1 << (16 - rgif))), overProvisioning, gc);
    }

    /** The same handles, all of {@code type}. */
    public ModelConfig withHandleType(HandleType type) {
        return new ModelConfig(logicalBytes, unitBytes, reclaimUnitBytes, reclaimGroups,
                Collections.nCopies(handles(), type), rgif, placementHandles, overProvisioning, gc);
    }

    /** This configuration with the mapping unit doubled until both maps fit {@link #MAX_MAP_ENTRIES}. */
    public ModelConfig withUnitFittingMaps() {
        ModelConfig c = this;
        while ((c.logicalBytes / c.unitBytes > MAX_MAP_ENTRIES || c.physicalBytes() / c.unitBytes > MAX_MAP_ENTRIES)
                && c.logicalBytes % (2L * c.unitBytes) == 0 && c.reclaimUnitBytes % (2L * c.unitBytes) == 0) {
            c = c.withUnitBytes(c.unitBytes * 2);
        }
        return c;
    }

    public ModelConfig withOverProvisioning(double op) {
        return new ModelConfig(logicalBytes, unitBytes, reclaimUnitBytes, reclaimGroups, handleTypes, rgif,
                placementHandles, op, gc);
    }

    public ModelConfig withGc(GcPolicy policy) {
        return new ModelConfig(logicalBytes, unitBytes, reclaimUnitBytes, reclaimGroups, handleTypes, rgif,
                placementHandles, overProvisioning, policy);
    }
}
