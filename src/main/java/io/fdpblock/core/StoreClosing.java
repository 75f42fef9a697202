package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;

import java.io.IOException;

/**
 * Closes a store ({@link RawBlockCore#close()} says what a caller sees): the gate shut, the background
 * checkpoints stopped and the operations in flight waited for (bounded), commits stopped, the final
 * checkpoint and the close marker written, and the device closed or its buffers unregistered. Buffers
 * that I/O left in the kernel may still touch are never freed. Kept apart from the store so that the
 * order of these steps reads in one place.
 */
final class StoreClosing {
    private StoreClosing() {}

    /** Idempotent: a second close does nothing. */
    static void close(StoreParts p, boolean ownsDevice) throws IOException {
        if (!p.gate().shut()) {
            return;
        }
        BlockDevice device = p.device();
        MetaStore meta = p.meta();
        long timeout = p.config().closeTimeoutMs();
        boolean checkpointStopped = meta.stopBackground(timeout);
        boolean drained = p.ops().awaitNone(timeout);
        p.gate().stopCommits(); // from here a completing put is reported failed
        if (!drained || !checkpointStopped) {
            RawBlockCore.LOG.log(System.Logger.Level.ERROR, "raw_block on " + device.path() + ": close gave up after "
                    + timeout + " ms on " + p.ops().count() + " operations in flight" + (checkpointStopped ? ""
                    : " and a running checkpoint") + "; puts among them are reported failed, their buffers stay"
                    + " allocated");
        }
        IOException failure = null;
        try {
            meta.closeDurably();
        } catch (IOException | RuntimeException e) {
            String lost = meta.notDurable();
            failure = new IOException("raw_block on " + device.path() + ": the final checkpoint could not be written,"
                    + " so changes since the last durable one are not durable" + (lost == null ? "" : ": " + lost)
                    + "; the cause: " + e.getMessage(), e);
        }
        boolean ioLeft = !drained || !checkpointStopped || p.quarantine().size() > 0;
        if (failure == null && !ioLeft) {
            try {
                meta.markClosedCleanly();
            } catch (IOException | RuntimeException e) {
                RawBlockCore.LOG.log(System.Logger.Level.WARNING, "raw_block on " + device.path() + ": the close"
                        + " marker could not be written (every change is durable; the next open checks the log past"
                        + " its end): " + e.getMessage(), e);
            }
        }
        if (ownsDevice) {
            device.close();
        } else if (!ioLeft) {
            try {
                device.unregisterBuffers(p.headers().pool().region());
            } catch (IOException | RuntimeException e) {
                RawBlockCore.LOG.log(System.Logger.Level.WARNING, "could not unregister the header buffers from "
                        + device.path(), e);
            }
        }
        if (!ioLeft) {
            p.headers().pool().close();
            meta.release();
        }
        if (failure != null) {
            throw failure;
        }
    }
}
