package io.fdpblock.core.v1;

import io.fdpblock.core.MetaStore;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.nvme.PlacementId;

import io.fdpblock.util.Threads;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import java.util.function.Supplier;

/**
 * Writes the store's checkpoints (v1: compact JSON in the mirrored containers): on demand, every
 * {@code meta_checkpoint_interval_sec} on a thread of its own whatever the I/O load (the crash window
 * stays bounded; the reference skipped checkpoints while I/O was busy), and a final one at close. A
 * checkpoint that cannot be written (too large for a container, an I/O error) is an error, logged
 * and in status, and the state stays dirty for the next one.
 */
final class Checkpointer {
    /** What a checkpoint writes, taken under the core's lock. */
    record Snapshot(long dirtyAt, int nextSlot, List<CheckpointCodec.SnapshotEntry> entries) {}


    /** Checkpoint JSON bytes per entry assumed when warning that the meta area may be too small. */
    static final int ESTIMATED_BYTES_PER_ENTRY = 260;

    private final MetadataArea area;
    private final CheckpointCodec.Layout layout;
    private final PlacementId placement;
    /** The state to write, taken under the core's lock; null when nothing changed since the last checkpoint. */
    private final Supplier<Snapshot> snapshots;
    /** Told that the checkpoint of a given change count is durable. */
    private final LongConsumer persisted;
    private final String devicePath;
    private final Object mutex = new Object();
    private long seq;
    private ScheduledExecutorService periodic;
    private final AtomicLong failures = new AtomicLong();
    private volatile long written;
    private volatile long lastBytes;
    private volatile long lastMillis;
    private volatile String lastError;
    /** Written only under {@link #mutex}: odd while a checkpoint is taken and written ({@link MetaStore#snapshotEpoch()}). */
    private volatile long epoch;

    Checkpointer(MetadataArea area, CheckpointCodec.Layout layout, PlacementId placement,
            Supplier<Snapshot> snapshots, LongConsumer persisted, long seq) {
        this.area = area;
        this.layout = layout;
        this.placement = placement;
        this.snapshots = snapshots;
        this.persisted = persisted;
        this.devicePath = layout.devicePath();
        this.seq = seq;
    }

    /**
     * Writes a checkpoint if anything changed since the last one.
     *
     * @return false when there was nothing to write
     * @throws IOException when it could not be written (the state stays dirty)
     */
    /**
     * Whether a container can hold the checkpoint of a full device ({@code maxSlots} entries, estimated);
     * warns with the size to use when it cannot.
     */
    static boolean fitsFullIndex(String devicePath, long maxSlots, long payloadRoom, RawBlockCoreConfig config) {
        if (maxSlots * ESTIMATED_BYTES_PER_ENTRY <= payloadRoom) {
            return true;
        }
        RawBlockCore.LOG.log(System.Logger.Level.WARNING, "raw_block on " + devicePath + ": the meta area ("
                + config.metaTotalBytes() + " bytes, " + payloadRoom + " per checkpoint) may not hold the index of a"
                + " full device (" + maxSlots + " slots x ~" + ESTIMATED_BYTES_PER_ENTRY + " bytes); raise"
                + " meta_total_bytes to about " + RawBlockCoreConfig.v1MetaBytesFor(config.blockAlign(), maxSlots)
                + " or checkpoints will fail once it fills");
        return false;
    }

    boolean checkpoint() throws IOException {
        synchronized (mutex) {
            epoch++;
            try {
                return checkpointLocked();
            } finally {
                epoch++;
            }
        }
    }

    /** Under {@link #mutex}. */
    private boolean checkpointLocked() throws IOException {
        Snapshot snap = snapshots.get();
        if (snap == null) {
            return false;
        }
        long t0 = System.nanoTime();
        byte[] json = CheckpointCodec.encode(layout, snap.nextSlot(), snap.entries());
        if (json.length > area.payloadRoom()) {
            String msg = "checkpoint of " + snap.entries().size() + " keys is " + json.length + " bytes but a container"
                    + " of the meta area holds " + area.payloadRoom() + " (meta_total_bytes " + layout.metaTotalBytes()
                    + "): NOT written; raise meta_total_bytes";
            fail(msg, null);
            throw new IOException(msg);
        }
        long next = seq + 1;
        try {
            area.write(next, json, placement);
        } catch (IOException e) {
            fail("checkpoint " + next + " could not be written: " + e.getMessage(), e);
            throw e;
        }
        seq = next;
        persisted.accept(snap.dirtyAt());
        written++;
        lastBytes = json.length;
        lastMillis = (System.nanoTime() - t0) / 1_000_000;
        lastError = null;
        return true;
    }

    private void fail(String message, Throwable cause) {
        failures.incrementAndGet();
        lastError = message;
        RawBlockCore.LOG.log(System.Logger.Level.ERROR, "raw_block on " + devicePath + ": " + message, cause);
    }

    void startPeriodic(int everySeconds) {
        periodic = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon()
                .name("fdpblock-checkpoint-" + Path.of(devicePath).getFileName()).unstarted(r));
        periodic.scheduleWithFixedDelay(() -> {
            try {
                checkpoint();
            } catch (IOException | RuntimeException e) {
                // already logged and in status
            }
        }, everySeconds, everySeconds, TimeUnit.SECONDS);
    }

    /**
     * Stops the periodic checkpoints without interrupting one that is being written (its I/O must
     * complete before its buffers go).
     *
     * @return false when one was still running after {@code timeoutMillis}
     */
    boolean stopPeriodic(long timeoutMillis) {
        if (periodic == null) {
            return true;
        }
        return Threads.shutdownAndAwait(periodic, TimeUnit.MILLISECONDS.toNanos(timeoutMillis));
    }

    long epoch() {
        return epoch;
    }

    long seq() {
        synchronized (mutex) {
            return seq;
        }
    }

    long failures() {
        return failures.get();
    }

    long written() {
        return written;
    }

    long lastBytes() {
        return lastBytes;
    }

    long lastMillis() {
        return lastMillis;
    }

    String lastError() {
        return lastError;
    }
}
