package io.fdpblock.cli;

import io.fdpblock.nvme.FdpRecords;
import io.fdpblock.nvme.NvmeNamespace;
import io.fdpblock.nvme.WriteStreams;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the operator commands say about block-layer write streams (Linux >= 6.16): a {@code selftest} line
 * and the stream-to-handle map of {@code fdp status}. Support is read from sysfs only; the map from RUH
 * Status.
 */
final class WriteStreamsReport {
    private WriteStreamsReport() {}

    /** A selftest line: whether it works, and the details. */
    record Line(boolean ok, String detail) {}

    /**
     * @param device {@code /dev/nvmeXnY} or {@code /dev/ngXnY} (its block device is probed), or null: then
     *        only whether the kernel has write streams
     */
    static Line selftest(String device) {
        String kernel = WriteStreams.kernelRelease();
        if (device == null) {
            return WriteStreams.kernelAtLeast(6, 16)
                    ? new Line(true, "kernel " + kernel + " (>= 6.16) has block-layer write streams; give --device"
                            + " /dev/nvmeXnY to probe a namespace")
                    : new Line(false, "kernel " + kernel + " has none (they need Linux >= 6.16)");
        }
        Path block = blockDeviceOf(Path.of(device));
        WriteStreams.Probe p = WriteStreams.probe(block);
        if (!p.available()) {
            return new Line(false, p.unavailable());
        }
        String head = "kernel " + kernel + ", " + block + ": " + p.maxStreams() + " streams, granularity "
                + p.granularityBytes() + " B";
        try {
            WriteStreams ws = WriteStreams.open(p);
            return new Line(true, head + "; " + ws.describeMap());
        } catch (IOException e) {
            return new Line(false, head + ", but no map: " + e.getMessage());
        }
    }

    /** {@code /dev/nvme0n1} -> {@code /dev/ng0n1}; anything else as given. */
    static Path genericDeviceOf(Path device) {
        Path other = WriteStreams.counterpart(device);
        return other != null && device.getFileName().toString().startsWith("nvme") ? other : device;
    }

    /** {@code /dev/ng0n1} -> {@code /dev/nvme0n1}; anything else as given. */
    static Path blockDeviceOf(Path device) {
        Path other = WriteStreams.counterpart(device);
        return other != null && device.getFileName().toString().startsWith("ng") ? other : device;
    }

    /**
     * Appends the stream-to-handle map of {@code ns}'s block device to {@code fdp status}'s JSON ({@code
     * write_streams}) and table.
     */
    static void addTo(Map<String, Object> out, StringBuilder table, NvmeNamespace ns, FdpRecords.RuhStatus rs) {
        Path block = Path.of("/dev", ns.blockName());
        WriteStreams.Probe p = WriteStreams.probe(block);
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("block_device", block.toString());
        j.put("kernel", p.kernel());
        j.put("available", p.available());
        if (!p.available()) {
            j.put("reason", p.unavailable());
            table.append(String.format("write streams: none on %s (%s)%n", block, p.unavailable()));
            out.put("write_streams", j);
            return;
        }
        j.put("max_streams", p.maxStreams());
        j.put("granularity_bytes", p.granularityBytes());
        WriteStreams ws;
        try {
            ws = WriteStreams.of(p, ns.path(), rs.placementIds());
        } catch (IOException e) {
            j.put("reason", e.getMessage());
            table.append(String.format("write streams: %d on %s, no map: %s%n", p.maxStreams(), block, e.getMessage()));
            out.put("write_streams", j);
            return;
        }
        table.append(String.format("write streams of %s (kernel %s): %d, granularity %d B; stream 0 = no directive"
                + " (default handle)%n", block, p.kernel(), p.maxStreams(), p.granularityBytes()));
        table.append(String.format("  %-7s %-8s %s%n", "stream", "PID", "RUHID"));
        List<Map<String, Object>> map = new ArrayList<>();
        for (int s = 1; s <= ws.placementIds().size(); s++) {
            int pid = ws.placementIdOf(s);
            int ruhid = rs.forPlacementId(pid).ruhId();
            table.append(String.format("  %-7d 0x%04x   %d%n", s, pid, ruhid));
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("stream", s);
            e.put("placement_id", pid);
            e.put("ruhid", ruhid);
            map.add(e);
        }
        j.put("streams", map);
        out.put("write_streams", j);
    }
}
