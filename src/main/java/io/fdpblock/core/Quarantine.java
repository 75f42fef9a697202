package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;

import java.util.ArrayList;
import java.util.List;

/**
 * The batches a device gave up while their I/O was still in the kernel: they and their buffers are kept
 * reachable forever, since the kernel may still read or write those buffers. Close leaves the store's
 * own buffers allocated when any were kept. Thread-safe.
 */
final class Quarantine {
    private final BlockDevice device;
    private final List<Object> kept = new ArrayList<>();

    Quarantine(BlockDevice device) {
        this.device = device;
    }

    /** Keeps {@code batch} (and whatever buffers it names) reachable forever. */
    void keep(Object batch) {
        synchronized (kept) {
            kept.add(batch);
        }
        RawBlockCore.LOG.log(System.Logger.Level.ERROR, "raw_block on " + device.path() + ": I/O abandoned in the"
                + " kernel; its buffers are kept and never reused");
    }

    /** Batches kept so far. */
    int size() {
        synchronized (kept) {
            return kept.size();
        }
    }
}
