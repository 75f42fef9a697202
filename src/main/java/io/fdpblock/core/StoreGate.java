package io.fdpblock.core;

import java.util.concurrent.locks.ReentrantLock;

/**
 * Whether an open store still takes work and still commits finished writes: the one owner of those two
 * flags, both guarded by the store's index lock. Close shuts the gate first (no new work), then, once it
 * waited for what was in flight, stops commits (a put completing after the final snapshot is reported
 * failed rather than acknowledged and lost).
 */
final class StoreGate {
    private final ReentrantLock lock;
    private final String devicePath;
    /** Guarded by {@link #lock}: no new work once set. */
    private boolean closed;
    /** Guarded by {@link #lock}: once false, a completing put is not committed (close took its final snapshot). */
    private boolean committing = true;

    StoreGate(ReentrantLock lock, String devicePath) {
        this.lock = lock;
        this.devicePath = devicePath;
    }

    /** Under the lock: refuses new work once closed. */
    void checkOpenLocked() {
        if (closed) {
            throw new IllegalStateException("RawBlockCore on " + devicePath + " is closed");
        }
    }

    /** Refuses new work once closed. */
    void checkOpen() {
        lock.lock();
        try {
            checkOpenLocked();
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: whether the store was closed. */
    boolean closedLocked() {
        return closed;
    }

    /** Under the lock: whether a finished write may still be committed. */
    boolean committingLocked() {
        return committing;
    }

    /** Refuses new work from now on. @return false when it already was closed */
    boolean shut() {
        lock.lock();
        try {
            if (closed) {
                return false;
            }
            closed = true;
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** From now on a completing put is reported failed, not committed. */
    void stopCommits() {
        lock.lock();
        try {
            committing = false;
        } finally {
            lock.unlock();
        }
    }
}
