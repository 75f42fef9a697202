package io.fdpblock.util;

/** Thread helpers shared by the layers that own threads. */
public final class Threads {
    private Threads() {}

    /** Joins {@code t}, waiting through interrupts (a close must not leave its thread behind), then restores the interrupt flag. */
    public static void joinUninterruptibly(Thread t) {
        boolean interrupted = false;
        while (true) {
            try {
                t.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
