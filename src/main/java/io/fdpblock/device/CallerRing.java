package io.fdpblock.device;

import io.fdpblock.uring.Ring;

import java.io.IOException;

/**
 * The ring of one thread that calls {@link IoUringBlockDevice#execute}: it prepares, submits, waits for
 * and reaps its batch itself, everything prepared in one {@code io_uring_enter} with the wait, so a
 * blocking call costs no thread hop to a reactor and one system call for a one-operation batch. Nothing
 * else feeds this ring, so holding SQEs back never leaves the device idle. Slots here are this ring's
 * own (user_data only: batches with deallocations go through a reactor).
 */
final class CallerRing extends RingDriver {
    private static final System.Logger LOG = AbstractBlockDevice.LOG;

    /** The ring failed (or never opened): this thread's blocking I/O goes through a reactor. */
    boolean broken;

    CallerRing(IoUringBlockDevice device) {
        super(device, 0, SubmitPolicy.PER_CYCLE);
    }

    void open() throws IOException {
        ring = Ring.open(device.ringOptions().withSqPoll(0), true); // closed by the device's close, on its thread
        try {
            setUp(false);
        } catch (IOException | RuntimeException e) {
            closeRing(ring);
            throw e;
        }
    }

    void run(IoBatch b) throws IOException {
        batchesRun = batchesRun + 1;
        current = b;
        currentNext = 0;
        currentPart = 0;
        Ring.CompletionHandler onCompletion = this::onCompletion;
        try {
            syncRegions();
            while (b.remaining > 0) {
                if (current != null) {
                    prepareCurrent();
                }
                submitWaitAndReap(onCompletion);
            }
        } catch (Throwable t) {
            String reason = "the io_uring ring of the thread " + Thread.currentThread().getName() + " on "
                    + device.path() + " failed: " + t;
            reapAfterFailure(reason);
            failCurrent(reason);
            broken = true;
            device.forgetCallerRing(this);
            if (!abandoned) {
                closeRing(ring);
            }
            LOG.log(System.Logger.Level.WARNING, reason + "; this thread's blocking I/O goes through the reactor"
                    + " from now on", t);
        }
    }

    void close() {
        if (!abandoned && !broken) {
            closeRing(ring);
        }
    }
}
