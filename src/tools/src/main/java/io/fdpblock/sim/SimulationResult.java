package io.fdpblock.sim;

import java.util.List;

/**
 * What replaying a trace through {@link FdpSsdModel} gave.
 *
 * @param trace the trace file
 * @param traceHeader what the trace says about the device it was recorded on
 * @param config the model's parameters
 * @param reclaimUnitsPerGroup reclaim units the model gave each group
 * @param precondition whether the namespace was written full before the trace
 * @param records records replayed
 * @param writes write records
 * @param flushes flush records (no effect on the model)
 * @param deallocations deallocate records
 * @param traceWriteBytes bytes the trace's writes carry
 * @param traceDeallocateBytes bytes the trace deallocates
 * @param hostBytes host bytes as the model counts them (writes rounded out to mapping units)
 * @param mediaBytes bytes programmed: host writes plus garbage-collection copies
 * @param gcCopiedBytes bytes garbage collection copied
 * @param erases reclaim units erased
 * @param deallocatedBytes bytes that held data when a deallocation invalidated them
 * @param invalidPlacementWrites writes whose placement id named no handle (written as id 0)
 * @param handles per reclaim unit handle
 * @param samples the counters along the trace (the first at 0), for the WAF-over-time chart
 * @param simulationNanos wall time of the replay
 * @param trailingBytes bytes after the trace's last whole record (non-zero: it was cut short)
 */
public record SimulationResult(String trace, TraceFormat.Header traceHeader, ModelConfig config, long reclaimUnitsPerGroup,
        boolean precondition, long records, long writes, long flushes, long deallocations, long traceWriteBytes,
        long traceDeallocateBytes, long hostBytes, long mediaBytes, long gcCopiedBytes, long erases, long deallocatedBytes,
        long invalidPlacementWrites, List<HandleStats> handles, List<Sample> samples, long simulationNanos,
        long trailingBytes) {

    public SimulationResult {
        handles = List.copyOf(handles);
        samples = List.copyOf(samples);
    }

    /**
     * One reclaim unit handle's share.
     *
     * @param handle its index in the FDP configuration
     * @param type initially or persistently isolated
     * @param placementIds the placement ids that name it
     * @param hostBytes host bytes written through it
     * @param gcCopiedBytes bytes of its data (by the handle that last wrote them) that garbage collection copied
     */
    public record HandleStats(int handle, HandleType type, List<Integer> placementIds, long hostBytes, long gcCopiedBytes) {
        public HandleStats {
            placementIds = List.copyOf(placementIds);
        }
    }

    /** Counters after a record: its time in the trace, host and media bytes so far. */
    public record Sample(long timeNanos, long hostBytes, long mediaBytes) {}

    /** Write amplification: media bytes / host bytes (1 when nothing was written). */
    public double waf() {
        return hostBytes == 0 ? 1.0 : (double) mediaBytes / hostBytes;
    }

    /**
     * Write amplification of the part of the trace after the first {@code host} bytes of host writes (from
     * the samples, so it starts at the first sample at or past that point): the steady state once the
     * device has filled, without the first fill's copy-free writes. NaN when the trace writes less.
     */
    public double wafAfter(long host) {
        Sample last = samples.get(samples.size() - 1);
        for (Sample s : samples) {
            if (s.hostBytes() >= host && last.hostBytes() > s.hostBytes()) {
                return (double) (last.mediaBytes() - s.mediaBytes()) / (last.hostBytes() - s.hostBytes());
            }
        }
        return Double.NaN;
    }
}
