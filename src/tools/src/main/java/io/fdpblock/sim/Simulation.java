package io.fdpblock.sim;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Replays a trace through an {@link FdpSsdModel}. */
public final class Simulation {
    /** Points of the WAF-over-time curve, about. */
    public static final int DEFAULT_SAMPLES = 400;

    private Simulation() {}

    /**
     * Replays every record of {@code trace} in order.
     *
     * @param precondition write the whole namespace once before the trace (not counted), as a device that
     *        was full before
     * @throws IOException when the trace cannot be read or a record is invalid (naming it)
     * @throws IllegalArgumentException when the trace does not fit the model (a larger device), or the
     *         model runs out of media (naming the record and what to change)
     */
    public static SimulationResult run(Path trace, ModelConfig config, boolean precondition, int samples)
            throws IOException {
        try (TraceReader r = TraceReader.open(trace)) {
            TraceFormat.Header h = r.header();
            if (h.deviceBytes() > config.logicalBytes()) {
                throw new IllegalArgumentException(trace + " was recorded on a device of " + h.deviceBytes()
                        + " bytes; the modelled namespace has " + config.logicalBytes()
                        + ": model a namespace at least as large");
            }
            long expected = Math.max(1, (Files.size(trace) - TraceFormat.HEADER_BYTES) / TraceFormat.RECORD_BYTES);
            long every = Math.max(1, expected / Math.max(1, samples));

            FdpSsdModel m = new FdpSsdModel(config);
            if (precondition) {
                try {
                    m.precondition();
                } catch (IllegalStateException e) {
                    throw new IllegalArgumentException("writing the namespace full before the trace: " + e.getMessage(), e);
                }
            }
            long t0 = System.nanoTime();
            List<SimulationResult.Sample> points = new ArrayList<>();
            points.add(new SimulationResult.Sample(0, 0, 0));
            long records = 0;
            long writes = 0;
            long flushes = 0;
            long deallocations = 0;
            long writeBytes = 0;
            long deallocateBytes = 0;
            long time = 0;
            while (r.next()) {
                records++;
                time = r.timeNanos();
                try {
                    switch (r.op()) {
                        case TraceFormat.OP_WRITE -> {
                            m.write(r.offset(), r.length(), r.placementId());
                            writes++;
                            writeBytes += r.length();
                        }
                        case TraceFormat.OP_DEALLOCATE -> {
                            m.deallocate(r.offset(), r.length());
                            deallocations++;
                            deallocateBytes += r.length();
                        }
                        default -> flushes++;
                    }
                } catch (IllegalStateException e) {
                    throw new IllegalArgumentException(trace + ", record " + r.index() + ": " + e.getMessage(), e);
                }
                if (records % every == 0) {
                    points.add(new SimulationResult.Sample(time, m.hostBytes(), m.mediaBytes()));
                }
            }
            if (records % every != 0) {
                points.add(new SimulationResult.Sample(time, m.hostBytes(), m.mediaBytes()));
            }
            long nanos = System.nanoTime() - t0;

            List<SimulationResult.HandleStats> handles = new ArrayList<>();
            for (int ruh = 0; ruh < config.handles(); ruh++) {
                handles.add(new SimulationResult.HandleStats(ruh, config.handleTypes().get(ruh), placementIds(config, ruh),
                        m.hostUnitsByHandle(ruh) * m.unitBytes(), m.gcUnitsByHandle(ruh) * m.unitBytes()));
            }
            return new SimulationResult(trace.toString(), h, config, m.reclaimUnitsPerGroup(), precondition, records, writes,
                    flushes, deallocations, writeBytes, deallocateBytes, m.hostBytes(), m.mediaBytes(),
                    m.gcUnits() * m.unitBytes(), m.erases(), m.deallocatedUnits() * m.unitBytes(),
                    m.invalidPlacementWrites(), handles, points, nanos, r.trailingBytes());
        }
    }

    /** The placement ids (every group) whose placement handle names reclaim unit handle {@code ruh}. */
    static List<Integer> placementIds(ModelConfig config, int ruh) {
        List<Integer> ids = new ArrayList<>();
        int shift = 16 - config.rgif();
        for (int g = 0; g < config.reclaimGroups(); g++) {
            for (int ph = 0; ph < config.placementHandles().size(); ph++) {
                if (config.placementHandles().get(ph) == ruh) {
                    ids.add(g << shift | ph);
                }
            }
        }
        return ids;
    }
}
