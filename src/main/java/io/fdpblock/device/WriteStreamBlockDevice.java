package io.fdpblock.device;

import io.fdpblock.linux.NativeFile;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.nvme.WriteStreams;
import io.fdpblock.uring.Ring;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * The {@code io_uring} engine on a block device: the same reactor, plus FDP placement through the
 * kernel's write streams (Linux >= 6.16) where the device has them. A write that carries a placement id
 * gets the id's stream in its SQE's {@code write_stream} byte (stream N = the N-th id of the namespace's
 * RUH Status, mapped once at open by {@link WriteStreams}); a write without one goes without a stream
 * (the default handle). A placement id no stream reaches is refused before any I/O: the kernel would
 * refuse a stream above its maximum (EINVAL), but a device would silently write an id it does not know
 * to its default handle.
 *
 * <p>Always O_DIRECT, as the io_uring engine is: a buffered write loses its stream on the way through
 * the page cache, silently.
 *
 * <p>Where the block device has no usable streams (kernel < 6.16, {@code max_write_streams} 0, FDP off,
 * RUH Status unreadable), it is the plain engine: {@link #supportsPlacement()} is false,
 * {@link #placementUnsupportedReason()} says which, and a write's placement id is ignored with one
 * warning in the log, as on a file.
 */
final class WriteStreamBlockDevice extends IoUringBlockDevice {
    /** Null when the device has no usable write streams. */
    private final WriteStreams streams;
    /** Why not (when {@code streams} is null); made on first use, as it may ask the namespace. */
    private final Supplier<String> whyNot;
    private volatile String unavailable;
    private final AtomicBoolean warnedIgnored = new AtomicBoolean();

    /** {@code streams} null: none, for the reason {@code unavailable}. Tests build it over any file. */
    WriteStreamBlockDevice(NativeFile file, DeviceOptions options, WriteStreams streams, String unavailable)
            throws IOException {
        this(file, options, streams, () -> unavailable);
    }

    private WriteStreamBlockDevice(NativeFile file, DeviceOptions options, WriteStreams streams, Supplier<String> whyNot)
            throws IOException {
        super(file.path().toString(), file.fd(), file, file.size(), file.logicalBlockSize(), 1 << 30, options);
        this.streams = streams;
        this.whyNot = whyNot;
    }

    /**
     * Probes the block device's write streams (sysfs, then RUH Status), then starts the reactor. A block
     * device with 0 streams is not asked why at open (admin commands on its namespace): only when someone
     * wants to know ({@link #placementUnsupportedReason()}).
     */
    static WriteStreamBlockDevice open(NativeFile file, DeviceOptions options) throws IOException {
        AtomicBoolean askLater = new AtomicBoolean();
        WriteStreams.Probe probe = WriteStreams.probe(file.path(), Path.of("/sys"), WriteStreams.kernelRelease(), g -> {
            askLater.set(true);
            return "not asked";
        });
        WriteStreams streams = null;
        Supplier<String> why;
        if (probe.available()) {
            String[] failure = new String[1];
            try {
                streams = WriteStreams.open(probe);
                LOG.log(System.Logger.Level.DEBUG, file.path() + ": " + streams);
            } catch (IOException e) {
                failure[0] = e.getMessage();
            }
            why = () -> failure[0];
        } else if (askLater.get()) {
            why = () -> WriteStreams.probe(file.path()).unavailable();
        } else {
            why = probe::unavailable;
        }
        return start(new WriteStreamBlockDevice(file, options, streams, why));
    }

    private String unavailable() {
        String u = unavailable;
        if (u == null) {
            u = whyNot.get();
            if (u == null) { // the lazy probe found streams that were not there at open
                u = "it had no usable write streams when it was opened; reopen it";
            }
            unavailable = u;
        }
        return u;
    }

    /** The map in use, or null. */
    WriteStreams writeStreams() {
        return streams;
    }

    @Override
    public boolean supportsPlacement() {
        return streams != null;
    }

    @Override
    public String placementUnsupportedReason() {
        return streams != null ? null : "io_engine io_uring on " + path() + " cannot carry placement ids: " + unavailable();
    }

    /** The ids a stream reaches, in stream order (RUH Status order, as the kernel maps them). */
    @Override
    public List<Integer> placementIds() {
        return streams == null ? List.of() : streams.placementIds();
    }

    /** {@code queue/write_stream_granularity}: the reclaim unit size, as the kernel reports it. */
    @Override
    public long reclaimUnitBytes() {
        return streams == null ? 0 : streams.granularityBytes();
    }

    /** For submit and execute alike: execute runs on the caller's own ring and never passes through submit. */
    @Override
    void admit(IoBatch batch) throws IOException {
        if (streams != null) {
            for (int i = 0; i < batch.size(); i++) {
                int id = batch.rawPlacementId(i);
                if (id != PlacementId.NONE_VALUE && batch.isWrite(i) && streams.streamOf(id) < 0) {
                    throw new IOException("write of " + batch.length(i) + " bytes at offset " + batch.offset(i) + " on "
                            + path() + ": placement id " + id + " is not reached by any of its write streams ("
                            + streams.describeMap() + "); nothing of the batch was submitted");
                }
            }
        } else if (!warnedIgnored.get()) {
            for (int i = 0; i < batch.size(); i++) {
                if (batch.rawPlacementId(i) != PlacementId.NONE_VALUE && batch.isWrite(i)
                        && warnedIgnored.compareAndSet(false, true)) {
                    LOG.log(System.Logger.Level.WARNING, "placement ids of writes on " + path() + " are ignored: "
                            + unavailable());
                    break;
                }
            }
        }
    }

    @Override
    long prepareReadWrite(Ring ring, boolean read, MemorySegment part, long deviceOffset, int region, int placementId,
            int slot) {
        long sqe = super.prepareReadWrite(ring, read, part, deviceOffset, region, placementId, slot);
        if (sqe >= 0 && !read && placementId != PlacementId.NONE_VALUE && streams != null) {
            ring.setWriteStream(sqe, streams.streamOf(placementId)); // checked in submit: 1..n
        }
        return sqe;
    }

    @Override
    public String toString() {
        return super.toString() + (streams != null ? "[" + streams.describeMap() + "]" : "[no write streams]");
    }
}
