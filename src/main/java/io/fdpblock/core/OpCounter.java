package io.fdpblock.core;

/**
 * Operations of the store still in flight (puts, loads, deallocations): close waits for them, with a
 * bound, through interrupts.
 */
final class OpCounter {
    private int count;

    synchronized void add(int n) {
        count += n;
    }

    synchronized void done(int n) {
        count -= n;
        if (count == 0) {
            notifyAll();
        }
    }

    synchronized int count() {
        return count;
    }

    /** @return true when none are left within {@code timeoutMillis} (interrupts are kept, not obeyed) */
    synchronized boolean awaitNone(long timeoutMillis) {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        boolean interrupted = false;
        while (count > 0) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) {
                break;
            }
            try {
                wait(left);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return count == 0;
    }
}
