package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Gives freed slots back to the allocator. Where the device listens (NVMe FDP), it is told first that
 * their data is dead (Dataset Management deallocate, contiguous slots as one range, many ranges per
 * command, asynchronously), and a slot returns to the allocator only when that command has completed:
 * a deallocate that reached the device after new data would drop the new data. Call it without the
 * core's lock held.
 */
final class SlotReleaser {
    private final BlockDevice device;
    private final ReentrantLock lock;
    private final SlotAllocator slots;
    private final long dataBase;
    private final long slotBytes;
    private final OpCounter ops;
    private final AtomicLong deallocatedSlots = new AtomicLong();
    private final AtomicLong deallocateFailures = new AtomicLong();
    /** Slots freed by deletes on their way to the allocator (being deallocated, or just freed): free soon. */
    private final AtomicInteger coming = new AtomicInteger();
    /** Puts that found no free slot while some were {@link #coming}; guarded by itself. */
    private final List<Runnable> waiters = new ArrayList<>();

    SlotReleaser(BlockDevice device, ReentrantLock lock, SlotAllocator slots, long dataBase, long slotBytes,
            OpCounter ops) {
        this.device = device;
        this.lock = lock;
        this.slots = slots;
        this.dataBase = dataBase;
        this.slotBytes = slotBytes;
        this.ops = ops;
    }

    long deallocatedSlots() {
        return deallocatedSlots.get();
    }

    long deallocateFailures() {
        return deallocateFailures.get();
    }

    /** Releases {@code freed[0..count)} (slots no key points at any more). */
    void release(int[] freed, int count) {
        release(freed, count, false);
    }

    /**
     * Releases slots freed by deletes, at once, without waiting for their delete records to be durable.
     * After a power loss such a slot may hold another key's bytes (whole or torn) under the deleted
     * key's recovered entry; no load serves them: under {@code verify_payload} "always" every load checks
     * the payload's CRC32C against the entry's, and under "recovery" the first load of a slot whose bytes
     * predate the open does ({@link RawBlockCore#unverifiedSlots}). The caller has counted one operation
     * ({@code ops.add(1)}, under the core's lock so that a close waits for it); it is done once the slots
     * are released.
     */
    void releaseDeleted(int[] freed, int count) {
        expect(count);
        releaseExpected(freed, count);
    }

    /**
     * Under the core's lock, with the change that frees them: {@code count} slots are coming, so that a put
     * finding no slot from then on waits for them (released by {@link #releaseExpected}).
     */
    void expect(int count) {
        coming.addAndGet(count);
    }

    /** {@link #releaseDeleted} for slots already {@link #expect}ed. */
    void releaseExpected(int[] freed, int count) {
        release(freed, count, true);
        ops.done(1);
    }

    /** Whether slots freed by deletes are on their way back to the allocator. */
    boolean slotsComing() {
        return coming.get() > 0;
    }

    /**
     * Runs {@code retry} once slots that are {@link #coming} have been freed (on the thread that frees
     * them), so that a put finding the device full while deletes are on their way waits for their
     * slots instead of failing.
     *
     * @return false, without running it, when no slot is coming
     */
    boolean whenSlotsFreed(Runnable retry) {
        synchronized (waiters) {
            if (coming.get() == 0) {
                return false;
            }
            waiters.add(retry);
            return true;
        }
    }

    private void release(int[] freed, int count, boolean counted) {
        if (count == 0) {
            return;
        }
        int[] sorted = Arrays.copyOf(freed, count);
        if (!device.supportsDeallocate()) {
            free(sorted, counted);
            return;
        }
        Arrays.sort(sorted);
        IoBatch batch = new IoBatch(8);
        for (int from = 0; from < sorted.length; ) {
            int to = from + 1;
            while (to < sorted.length && sorted[to] == sorted[to - 1] + 1) {
                to++;
            }
            batch.deallocate(dataBase + sorted[from] * slotBytes, (to - from) * slotBytes);
            from = to;
        }
        ops.add(1);
        try {
            device.submit(batch, b -> {
                for (int i = 0; i < b.size(); i++) {
                    if (b.failed(i)) {
                        deallocateFailures.incrementAndGet();
                        RawBlockCore.LOG.log(System.Logger.Level.WARNING, b.failure(i).getMessage()
                                + " (the slots are reused anyway; their old data stays on the device)");
                    } else {
                        deallocatedSlots.addAndGet(b.length(i) / slotBytes);
                    }
                }
                free(sorted, counted);
                ops.done(1);
            });
        } catch (IOException | RuntimeException e) {
            deallocateFailures.incrementAndGet();
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "deallocate of " + sorted.length + " slots on "
                    + device.path() + " was not submitted (the slots are reused anyway): " + e.getMessage());
            free(sorted, counted);
            ops.done(1);
        }
    }

    private void free(int[] sorted, boolean counted) {
        lock.lock();
        try {
            slots.freeAll(sorted, sorted.length); // together: a group freed whole goes back whole
        } finally {
            lock.unlock();
        }
        List<Runnable> ready;
        synchronized (waiters) {
            if (counted) {
                coming.addAndGet(-sorted.length);
            }
            if (waiters.isEmpty()) {
                return;
            }
            ready = new ArrayList<>(waiters);
            waiters.clear();
        }
        for (Runnable r : ready) {
            r.run();
        }
    }
}
