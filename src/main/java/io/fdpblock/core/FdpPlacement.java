package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.nvme.PlacementId;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * FDP in the store: which placement ids the device reports (RUH Status, never assumed to equal an
 * index), which of them data may use, the one checkpoints use, the reclaim unit size that slot groups
 * follow, and the bytes written per id. Without FDP every id list is empty and nothing is checked.
 */
final class FdpPlacement {
    private final boolean enabled;
    private final List<Integer> reported;
    private final Set<Integer> reportedSet;
    private final List<Integer> data;
    private final PlacementId metadata;
    private final long reclaimUnitBytes;
    private final String devicePath;
    private final ConcurrentHashMap<Integer, LongAdder> bytesWritten = new ConcurrentHashMap<>();
    private final AtomicBoolean warnedIgnored = new AtomicBoolean();
    /** Without FDP: why the device drops a write's placement id (null when it carries it, or unknown). */
    private String ignoredBecause;

    private FdpPlacement(boolean enabled, List<Integer> reported, List<Integer> data, PlacementId metadata,
            long reclaimUnitBytes, String devicePath) {
        this.enabled = enabled;
        this.reported = List.copyOf(reported);
        this.reportedSet = Set.copyOf(reported);
        this.data = List.copyOf(data);
        this.metadata = metadata;
        this.reclaimUnitBytes = reclaimUnitBytes;
        this.devicePath = devicePath;
    }

    static FdpPlacement none(String devicePath) {
        return new FdpPlacement(false, List.of(), List.of(), PlacementId.NONE, 0, devicePath);
    }

    /**
     * Asks the device, and checks the configured ids against what it reports.
     *
     * @throws IllegalArgumentException when the device cannot carry placement ids or does not report a
     *         configured one
     * @throws IOException when the device reports none
     */
    static FdpPlacement discover(RawBlockCoreConfig config, BlockDevice device) throws IOException {
        if (!config.fdpEnabled()) {
            FdpPlacement none = none(device.path());
            none.ignoredBecause = device.supportsPlacement() ? null : device.placementUnsupportedReason();
            return none;
        }
        if (!device.supportsPlacement()) {
            throw new IllegalArgumentException("raw_block config: fdp_enabled = true, but "
                    + device.placementUnsupportedReason());
        }
        List<Integer> reported = device.placementIds();
        if (reported.isEmpty()) {
            throw new IOException(device.path() + " reports no placement ids (RUH Status is empty): enable FDP on its"
                    + " endurance group, or set fdp_enabled to false");
        }
        Set<Integer> set = new LinkedHashSet<>(reported);
        for (int id : config.fdpPlacementIds()) {
            if (!set.contains(id)) {
                throw new IllegalArgumentException("raw_block config: fdp_placement_ids has " + id + ", which "
                        + device.path() + " does not report (RUH Status lists " + reported + ")");
            }
        }
        PlacementId meta = config.metaCheckpointPlacementId();
        if (!meta.isNone() && !set.contains(meta.value())) {
            throw new IllegalArgumentException("raw_block config: meta_checkpoint_placement_id = " + meta + " is not"
                    + " reported by " + device.path() + " (RUH Status lists " + reported + ")");
        }
        List<Integer> data = new ArrayList<>();
        if (config.fdpPlacementIds().isEmpty()) {
            // Every reported id but the default handle's (where writes without a directive go) and the
            // metadata's.
            int defaultId = reported.get(0);
            for (int id : reported) {
                if (id != defaultId && id != meta.value()) {
                    data.add(id);
                }
            }
        } else {
            data.addAll(config.fdpPlacementIds());
        }
        if (data.isEmpty()) {
            throw new IllegalArgumentException("raw_block config: no placement id is left for data on " + device.path()
                    + " (reported " + reported + ", metadata uses " + meta + ")");
        }
        long ru = 0;
        try {
            ru = device.reclaimUnitBytes();
        } catch (IOException e) {
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "reclaim unit size of " + device.path() + " unknown ("
                    + e.getMessage() + "): slots are not grouped by reclaim unit");
        }
        return new FdpPlacement(true, reported, data, meta, ru, device.path());
    }

    boolean enabled() {
        return enabled;
    }

    List<Integer> reported() {
        return reported;
    }

    List<Integer> data() {
        return data;
    }

    PlacementId metadata() {
        return metadata;
    }

    long reclaimUnitBytes() {
        return reclaimUnitBytes;
    }

    /**
     * A put may only name an id the device reports: it would silently write an unknown id to its
     * default handle.
     */
    void checkPut(PutRequest r) {
        if (enabled && !r.placement().isNone() && !reportedSet.contains(r.placement().value())) {
            throw new IllegalArgumentException("put " + r.key() + ": placement id " + r.placement() + " is not"
                    + " reported by " + devicePath + " (RUH Status lists " + reported + "); nothing was written");
        }
    }

    /**
     * Checks the requests against what the device reports ({@link #checkPut}) with FDP; without, a
     * placement id the device drops (a file: see {@code BlockDevice.supportsPlacement}) is said once.
     */
    List<PutRequest> admit(List<PutRequest> requests) {
        if (enabled) {
            for (PutRequest r : requests) {
                checkPut(r);
            }
            return requests;
        }
        if (ignoredBecause != null && !warnedIgnored.get()) {
            for (PutRequest r : requests) {
                if (!r.placement().isNone() && warnedIgnored.compareAndSet(false, true)) {
                    RawBlockCore.LOG.log(System.Logger.Level.WARNING, "put " + r.key() + " on " + devicePath
                            + ": placement id " + r.placement() + " is ignored, as every placement id of a put on this"
                            + " store (said once): the store has no FDP (fdp_enabled is false) and " + ignoredBecause);
                    break;
                }
            }
        }
        return requests;
    }

    void recordWrite(PlacementId placement, long bytes) {
        bytesWritten.computeIfAbsent(placement.value(), k -> new LongAdder()).add(bytes);
    }

    /** Bytes written per placement id, in id order; {@code "none"}: written without a directive. */
    Map<String, Long> bytesWrittenById() {
        Map<Integer, Long> byId = new TreeMap<>();
        bytesWritten.forEach((id, v) -> byId.put(id, v.sum()));
        Map<String, Long> out = new LinkedHashMap<>();
        byId.forEach((id, v) -> out.put(PlacementId.ofRaw(id).toString(), v));
        return out;
    }
}
