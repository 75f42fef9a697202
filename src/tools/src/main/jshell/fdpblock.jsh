// fdpblock in jshell: `make jshell` loads this. Examples (three lines each):
//   var ns = nvme("/dev/ng0n1");  fdp(ns);  ns.fdpStatistics()
//   var buf = aligned(4096);  buf.fill((byte) 7);  ns.write(0, buf, 3)       // LBA 0, placement id 3
//   var dev = device("/var/tmp/dev.img", "io_uring");  var b = new IoBatch();  b.write(0, aligned(4096)); dev.execute(b);
//   var ws = streams("/dev/nvme0n1");  var dev = device("/dev/nvme0n1", "io_uring");      // write streams (Linux >= 6.16)
//   var b = new IoBatch();  b.write(0, aligned(4096), PlacementId.of(ws.placementIdOf(2)));  dev.execute(b)  // on stream 2
import java.lang.foreign.*;
import java.nio.file.*;
import java.util.*;
import io.fdpblock.linux.*;
import io.fdpblock.uring.*;
import io.fdpblock.device.*;
import io.fdpblock.nvme.*;
import io.fdpblock.core.*;
import io.fdpblock.core.tools.*;
import io.fdpblock.l2.*;

/** A shared arena for buffers made in this session. */
Arena SESSION = Arena.ofShared();

/** An aligned off-heap buffer (O_DIRECT and passthru want 4 KiB alignment; from 2 MiB up on huge pages: IoMemory). */
MemorySegment aligned(long bytes) { return IoMemory.allocate(SESSION, bytes, 4096); }

/** Opens an NVMe namespace by its generic character device, e.g. /dev/ng0n1. */
NvmeNamespace nvme(String device) throws Exception { return NvmeNamespace.open(device); }

/** Prints FDP state: active configuration, RUH status and statistics. */
void fdp(NvmeNamespace ns) throws Exception {
    System.out.println(ns);
    System.out.println("FDP enabled: " + ns.isFdpEnabled());
    System.out.println(ns.activeFdpConfiguration());
    ns.ruhStatus().entries().forEach(System.out::println);
    System.out.println(ns.fdpStatistics());
}

/** Opens a file or device with an engine: posix, io_uring or uring_cmd. */
BlockDevice device(String path, String engine) throws Exception {
    return BlockDevices.open(Path.of(path), DeviceOptions.of(IoEngine.parse(engine)));
}

/**
 * The block-layer write streams of an NVMe block device (/dev/nvmeXnY, Linux >= 6.16): prints what sysfs says
 * and the stream -> placement id map (RUH Status of /dev/ngXnY); null, after saying why, when it has none.
 */
WriteStreams streams(String blockDevice) throws Exception {
    var p = WriteStreams.probe(Path.of(blockDevice));
    System.out.println(p.describe());
    if (!p.available()) return null;
    var ws = WriteStreams.open(p);
    System.out.println(ws.describeMap() + " (stream 0: no directive, the default handle)");
    return ws;
}

System.out.println("fdpblock loaded: nvme(\"/dev/ng0n1\"), fdp(ns), streams(\"/dev/nvme0n1\"), aligned(bytes),"
        + " device(path, engine); io_uring available: " + Uring.isAvailable());
