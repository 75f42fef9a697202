package io.fdpblock.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What one side of one round of a case did in its measured window.
 *
 * @param ops operations completed (4 KiB or 1 MiB I/Os; for the adapter: 1 MiB chunks)
 * @param bytes payload bytes moved
 * @param seconds wall-clock length of the measured window
 * @param cpuSeconds CPU time (user + system) of the process in that window (ours: less its JIT compiler threads'); NaN
 *        when unknown
 * @param extra anything else worth keeping in the JSON (latencies, the fio command, misses, ...)
 */
public record Measurement(long ops, long bytes, double seconds, double cpuSeconds, Map<String, Object> extra) {
    public Measurement {
        extra = extra == null ? new LinkedHashMap<>() : new LinkedHashMap<>(extra);
    }

    public Measurement(long ops, long bytes, double seconds, double cpuSeconds) {
        this(ops, bytes, seconds, cpuSeconds, null);
    }

    public double iops() {
        return seconds > 0 ? ops / seconds : 0;
    }

    /** Decimal megabytes per second (10^6 B/s). */
    public double mbPerSec() {
        return seconds > 0 ? bytes / seconds / 1e6 : 0;
    }

    /** Operations per CPU-second (user + system) of the process doing them; NaN when CPU time is unknown. */
    public double iopsPerCpuSec() {
        return cpuSeconds > 0 ? ops / cpuSeconds : Double.NaN;
    }

    /** Megabytes (10^6 bytes) moved per CPU-second; NaN when CPU time is unknown or 0. */
    public double mbPerCpuSec() {
        return cpuSeconds > 0 ? bytes / 1e6 / cpuSeconds : Double.NaN;
    }

    /** CPU time per operation in microseconds; NaN when CPU time is unknown or nothing was done. */
    public double cpuMicrosPerOp() {
        return ops > 0 && !Double.isNaN(cpuSeconds) ? cpuSeconds / ops * 1e6 : Double.NaN;
    }

    /** CPU use in the window, in cores (1.0 = one core busy all the time). */
    public double cpuCores() {
        return seconds > 0 && cpuSeconds >= 0 ? cpuSeconds / seconds : Double.NaN;
    }

    public Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ops", ops);
        m.put("bytes", bytes);
        m.put("seconds", round(seconds, 4));
        m.put("iops", round(iops(), 1));
        m.put("mb_per_sec", round(mbPerSec(), 2));
        m.put("cpu_seconds", Double.isNaN(cpuSeconds) ? null : round(cpuSeconds, 4));
        m.put("cpu_cores", Double.isNaN(cpuCores()) ? null : round(cpuCores(), 3));
        m.put("iops_per_cpu_sec", Double.isNaN(iopsPerCpuSec()) ? null : round(iopsPerCpuSec(), 1));
        m.putAll(extra);
        return m;
    }

    static double round(double v, int digits) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return v;
        }
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }
}
