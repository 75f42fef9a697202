package io.fdpblock.device;

import io.fdpblock.linux.EventFd;
import io.fdpblock.uring.Ring;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One of an {@link IoUringBlockDevice}'s reactor threads and the ring it owns (set up on that thread, so
 * SINGLE_ISSUER|DEFER_TASKRUN apply). Other threads hand it whole batches (and ring tasks such as a
 * buffer registration) through a lock-free queue and wake it through its eventfd only while it sleeps;
 * it keeps an io_uring READ armed on that eventfd, so one {@code io_uring_enter} waits for completions
 * and new work alike. Batches its own completion callbacks submit go straight into SQEs. On a failure it
 * reaps what the kernel holds, fails what it never handed over, and only then lets its ring go.
 */
final class Reactor extends RingDriver implements Runnable {
    private static final System.Logger LOG = AbstractBlockDevice.LOG;

    final int index;
    final Thread thread;
    final ConcurrentLinkedQueue<Object> queue = new ConcurrentLinkedQueue<>();
    /** Batches its own thread submitted while it was busy preparing (reactor-only). */
    private final ArrayDeque<IoBatch> pending = new ArrayDeque<>();
    final EventFd wake;
    private final AtomicBoolean sleeping = new AtomicBoolean();
    final CompletableFuture<Void> started = new CompletableFuture<>();
    /** Set once the reactor takes nothing more from the queue: submitters then fail what they queued. */
    volatile boolean dead;
    private boolean filling;
    /** A ring failure met while a callback submitted: thrown by the loop once the reap is done. */
    private Throwable directFailure;
    private MemorySegment wakeBuffer;

    Reactor(IoUringBlockDevice device, int index, String name) throws IOException {
        super(device, index * device.options().queueDepth(), device.options().submitPolicy());
        this.index = index;
        this.wake = EventFd.createBlocking();
        this.thread = Thread.ofPlatform().daemon().name(name).unstarted(this);
    }

    void wakeIfSleeping() {
        if (sleeping.get() && sleeping.compareAndSet(true, false)) {
            device.countWakeup();
            wake.signal();
        }
    }

    /** Runs {@code task} on this reactor and waits for its result (ring operations belong to its owner). */
    <T> T call(String what, Callable<T> task) throws IOException {
        CompletableFuture<T> done = new CompletableFuture<>();
        post(what, () -> {
            try {
                done.complete(task.call());
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        });
        try {
            return done.join(); // uninterruptible: a registration is never left half done
        } catch (CompletionException e) {
            throw e.getCause() instanceof IOException io ? io
                    : new IOException(what + " on " + device.path(), e.getCause());
        }
    }

    /** Queues {@code task}; should the reactor be gone, it runs on this thread (with no ring it fails). */
    void post(String what, Runnable task) throws IOException {
        device.enter(what);
        try {
            device.checkFatal();
            if (Thread.currentThread() == thread) {
                task.run();
                return;
            }
            queue.offer(task);
            if (dead) {
                failQueued();
            } else {
                wakeIfSleeping();
            }
        } finally {
            device.leave();
        }
    }

    /** On this reactor's thread: {@code b} goes into SQEs now, or after what is already waiting. */
    void submitFromReactor(IoBatch b) {
        if (filling || current != null || !pending.isEmpty()) {
            pending.add(b);
            return;
        }
        filling = true;
        try {
            current = b;
            currentNext = 0;
            prepareCurrent();
        } catch (Throwable t) { // the ring failed: the loop fails it (and what is left of b) after the reap
            if (directFailure == null) {
                directFailure = t;
            }
        } finally {
            filling = false;
        }
    }

    @Override
    public void run() {
        Ring r = null;
        Arena arena = Arena.ofConfined();
        try {
            r = Ring.open(device.ringOptions());
            ring = r;
            if (index == 0) {
                device.describeRing(r.toString());
            }
            setUp(index == 0);
            wakeBuffer = arena.allocate(ValueLayout.JAVA_LONG);
            armWake();
            started.complete(null);
            loop();
        } catch (Throwable t) {
            device.recordFatal(t);
            if (!started.completeExceptionally(t)) {
                LOG.log(System.Logger.Level.ERROR, "io_uring reactor of " + device.path() + " failed", t);
            }
            if (r != null) {
                reapAfterFailure("the io_uring reactor failed: " + t);
            }
        } finally {
            Throwable f = device.fatal();
            String reason = f == null ? "the device is closed" : "the io_uring reactor failed: " + f;
            dead = true;
            failCurrent(reason);
            IoBatch b;
            while ((b = pending.poll()) != null) {
                failRest(b, 0, reason);
            }
            failQueued();
            if (abandoned) {
                // Operations were given up while still in the kernel: neither the ring (whose
                // teardown would not wait for them) nor the memory they use may go.
                LOG.log(System.Logger.Level.ERROR, "io_uring device " + device.path() + ": operations were abandoned in"
                        + " the kernel; its ring and memory stay allocated");
            } else {
                if (r != null) {
                    closeRing(r);
                }
                arena.close();
            }
            ring = null;
        }
    }

    private void armWake() {
        long sqe = ring.prepRead(wake.fd(), wakeBuffer, 0, WAKE);
        if (sqe < 0) {
            throw new IllegalStateException("no SQE free to arm the wake-up read");
        }
        wakeArmed = true;
    }

    @Override
    void onWake() {
        if (!device.isClosing() && !failing) {
            armWake();
        }
    }

    @Override
    boolean entersAfterReap() {
        return true; // loop(): after a reap, fill() then submitAndWait, which submits what is prepared
    }

    private void loop() throws Throwable {
        Ring.CompletionHandler onCompletion = this::onCompletion;
        while (true) {
            fill(false);
            if (device.isClosing() && inFlight == 0 && current == null && pending.isEmpty() && queue.isEmpty()
                    && !wakeArmed) {
                return;
            }
            // From here we block in the kernel (the wake-up READ is armed until close). While slots are
            // free, new work must wake us, so say we sleep, then look once more for work that raced in.
            // With every slot in flight, only completions can let us proceed: no wake-ups wanted.
            if (freeTop > 0) {
                sleeping.set(true);
                if (current == null && (!queue.isEmpty() || !pending.isEmpty())) {
                    sleeping.set(false);
                    continue;
                }
            }
            tickAndWait(onCompletion);
            if (directFailure != null) {
                throw directFailure;
            }
        }
    }

    private void tickAndWait(Ring.CompletionHandler onCompletion) throws IOException {
        try {
            submitAndWait();
        } finally {
            // awake from here on: a batch queued during the reap below is seen by the loop or by
            // afterCallback, so its submitter need not write the wake-up eventfd (a system call, and a
            // wake-up completion to reap and re-arm)
            sleeping.set(false);
        }
        reap(onCompletion);
    }

    /**
     * Takes batches other threads queued into SQEs between two callbacks of one reap, rather than after
     * the last. A callback can be long (a load's CRC32Cs of its payloads), and completions come in
     * bursts: a task submitted while the first callback of a burst ran would otherwise wait, out of the
     * device's queue, for every other callback of the burst. Ring tasks (a buffer registration) wait for
     * the loop, as before.
     */
    @Override
    void afterCallback() {
        if (filling || current != null || !pending.isEmpty() || failing || directFailure != null
                || device.isClosing()) {
            return;
        }
        try {
            fill(true);
        } catch (Throwable t) { // the ring failed: the loop fails it (and what is left) after the reap
            directFailure = t;
        }
    }

    /**
     * Moves work into SQEs while slots last: batches its own callbacks submitted first, then the queue.
     *
     * @param batchesOnly stop at a ring task in the queue (it waits for the loop)
     */
    private void fill(boolean batchesOnly) throws IOException {
        filling = true;
        try {
            while (true) {
                if (current == null) {
                    Object next = pending.poll();
                    if (next == null) {
                        if (batchesOnly && !(queue.peek() instanceof IoBatch)) {
                            return; // this thread is the only one taking: what it peeked is what it polls
                        }
                        next = queue.poll();
                    }
                    if (next == null) {
                        return;
                    }
                    if (next instanceof Runnable task) {
                        task.run();
                        continue;
                    }
                    current = (IoBatch) next;
                    currentNext = 0;
                }
                if (!prepareCurrent()) {
                    return;
                }
            }
        } finally {
            filling = false;
        }
    }

    /** Fails every batch still queued (the kernel never saw them); runs tasks, which fail without a ring. */
    void failQueued() {
        Throwable f = device.fatal();
        String reason = f == null ? "the device " + device.path() + " is closed"
                : "the io_uring reactor of " + device.path() + " failed: " + f;
        Object o;
        while ((o = queue.poll()) != null) {
            if (o instanceof IoBatch b) {
                failRest(b, 0, reason);
            } else if (o instanceof Runnable task) {
                task.run();
            }
        }
    }
}
