package io.fdpblock.l2;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Weighted admission per cache salt (LMCache's L2 QoS dispatcher): decides in which order the
 * operations queued by {@link QosL2Adapter}s reach their inner adapters. One scheduler is one resource
 * group: wrappers that share it (adapters on the same device) share its queues and in-flight limits.
 *
 * <p>Deficit round robin over cache salts ("" included): every salt with queued work has a FIFO queue
 * and a deficit; each time its turn comes it is granted {@code max(1, quantumBytes * weight / 100)}
 * and admits its head while the deficit covers the head's cost (store and load: the bytes of their
 * buffers; lookup: the number of keys; at least 1), then the turn passes. Rounds are logical, not
 * timed: rounds in which no salt could admit yet are skipped at once. An operation is admitted only
 * while the group's in-flight limits allow it ({@code maxInflightTasks}, {@code maxInflightBytes}; 0 =
 * none; a single operation larger than the byte limit still goes when nothing else is in flight), and
 * waiting for them earns no quanta. Under sustained contention a salt's share is proportional to its
 * weight (1..10000, default 100); a salt without an explicit weight has the default one. Weights can
 * change at run time and apply to work already queued, from the salt's next turn. A salt with nothing
 * queued or in flight is forgotten (its deficit with it), so many short-lived salts leave no state.
 *
 * <p>Thread-safe. Admission never runs on a thread of its own: whoever queues work or completes it
 * hands the next admissible operations to their adapters, one thread at a time, in admission order,
 * outside this scheduler's lock.
 */
public final class QosScheduler {
    public static final int MIN_WEIGHT = 1;
    public static final int MAX_WEIGHT = 10_000;
    public static final int DEFAULT_WEIGHT = 100;
    public static final long DEFAULT_QUANTUM_BYTES = 1L << 20;
    /** Large enough for any device, small enough that {@code quantum * MAX_WEIGHT} fits a long. */
    public static final long MAX_QUANTUM_BYTES = 1L << 40;
    public static final int DEFAULT_MAX_INFLIGHT_TASKS = 8;
    private static final System.Logger LOG = System.getLogger("io.fdpblock.l2");

    private final long quantumBytes;
    private final int maxInflightTasks;
    private final long maxInflightBytes;
    private volatile int defaultWeight;
    private final ConcurrentHashMap<String, Integer> weights = new ConcurrentHashMap<>();

    // guarded by this
    private final Map<String, Domain> domains = new HashMap<>();
    /** Salts with queued work, in turn order: the head's turn is now. */
    private final ArrayDeque<Domain> turns = new ArrayDeque<>();
    private final Set<Ticket> running = new HashSet<>();
    private long inflightBytes;
    private long queuedTasks;
    private long admittedTasks;
    private long admittedBytes;
    /** A thread is handing admitted operations to their adapters; others leave it the work. */
    private boolean pumping;

    private QosScheduler(Builder b) {
        this.quantumBytes = b.quantumBytes;
        this.maxInflightTasks = b.maxInflightTasks;
        this.maxInflightBytes = b.maxInflightBytes;
        this.defaultWeight = b.defaultWeight;
        this.weights.putAll(b.weights);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** One operation waiting for, or holding, admission; {@link #admit()} hands it to its adapter. */
    abstract static class Ticket {
        private static final int QUEUED = 0;
        private static final int ADMITTED = 1;
        private static final int DONE = 2;

        final String salt;
        final long cost;
        /** The wrapper it belongs to (what {@link #cancel} and {@link #forget} match). */
        final Object owner;
        private int state; // guarded by the scheduler

        Ticket(Object owner, String salt, long cost) {
            this.owner = owner;
            this.salt = salt;
            this.cost = Math.max(1, cost);
        }

        /**
         * Called once, when admitted, outside the scheduler's lock and on whichever thread is pumping;
         * must not throw and must eventually lead to {@link #complete}.
         */
        abstract void admit();
    }

    private static final class Domain {
        final String salt;
        final ArrayDeque<Ticket> queue = new ArrayDeque<>();
        long deficit;
        boolean quantumDue;
        int inflightTasks;
        long inflightBytes;

        Domain(String salt) {
            this.salt = salt;
        }
    }

    // ---- weights ----

    private static void checkWeight(String what, int weight) {
        if (weight < MIN_WEIGHT || weight > MAX_WEIGHT) {
            throw new IllegalArgumentException("qos: " + what + " " + weight + " must be in [" + MIN_WEIGHT + ", "
                    + MAX_WEIGHT + "] (a relative share: 200 gets twice the service of 100)");
        }
    }

    private static void checkSalt(String salt) {
        if (salt == null) {
            throw new IllegalArgumentException("qos: cache salt is null; the salt of keys without one is \"\"");
        }
    }

    /** Sets the weight of one cache salt; queued work of that salt is served by it from its next turn. */
    public void setWeight(String cacheSalt, int weight) {
        checkSalt(cacheSalt);
        checkWeight("sched_weight of cache salt '" + cacheSalt + "'", weight);
        weights.put(cacheSalt, weight);
    }

    /** Removes a salt's explicit weight: it gets the default again. @return whether it had one */
    public boolean removeWeight(String cacheSalt) {
        checkSalt(cacheSalt);
        return weights.remove(cacheSalt) != null;
    }

    /** The weight of every salt without an explicit one. */
    public void setDefaultWeight(int weight) {
        checkWeight("default_sched_weight", weight);
        defaultWeight = weight;
    }

    public int defaultWeight() {
        return defaultWeight;
    }

    /** The weight {@code cacheSalt} is served by now (its explicit one, else the default). */
    public int weight(String cacheSalt) {
        checkSalt(cacheSalt);
        return weights.getOrDefault(cacheSalt, defaultWeight);
    }

    /** The explicit weights, by salt. */
    public Map<String, Integer> weights() {
        return new TreeMap<>(weights);
    }

    public long quantumBytes() {
        return quantumBytes;
    }

    public int maxInflightTasks() {
        return maxInflightTasks;
    }

    public long maxInflightBytes() {
        return maxInflightBytes;
    }

    private long quantum(Domain d) {
        return Math.max(1, quantumBytes * weight(d.salt) / DEFAULT_WEIGHT);
    }

    // ---- queueing, admission, completion ----

    /** Queues tickets (each behind the earlier work of its salt); call {@link #pump()} after. */
    synchronized void enqueue(List<? extends Ticket> tickets) {
        for (Ticket t : tickets) {
            Domain d = domains.computeIfAbsent(t.salt, Domain::new);
            if (d.queue.isEmpty()) {
                turns.addLast(d);
                d.quantumDue = true;
            }
            d.queue.addLast(t);
            queuedTasks++;
        }
    }

    /**
     * Releases an admitted ticket's share of the in-flight limits and admits what that allows. A ticket
     * completed twice, never admitted, or already forgotten is ignored.
     */
    void complete(Ticket t) {
        synchronized (this) {
            if (t.state != Ticket.ADMITTED) {
                return;
            }
            release(t);
        }
        pump();
    }

    private void release(Ticket t) {
        t.state = Ticket.DONE;
        running.remove(t);
        inflightBytes -= t.cost;
        Domain d = domains.get(t.salt);
        d.inflightTasks--;
        d.inflightBytes -= t.cost;
        forgetIfIdle(d);
    }

    private void forgetIfIdle(Domain d) {
        if (d.queue.isEmpty() && d.inflightTasks == 0) {
            domains.remove(d.salt);
        }
    }

    /**
     * Takes the queued tickets of {@code owner} out (they are never admitted).
     *
     * @return them, in queue order per salt
     */
    List<Ticket> cancel(Object owner) {
        List<Ticket> out = new ArrayList<>();
        synchronized (this) {
            for (Iterator<Domain> it = turns.iterator(); it.hasNext(); ) {
                Domain d = it.next();
                for (Iterator<Ticket> q = d.queue.iterator(); q.hasNext(); ) {
                    Ticket t = q.next();
                    if (t.owner == owner) {
                        q.remove();
                        t.state = Ticket.DONE;
                        queuedTasks--;
                        out.add(t);
                    }
                }
                if (d.queue.isEmpty()) {
                    it.remove();
                    forgetIfIdle(d);
                }
            }
        }
        pump();
        return out;
    }

    /** Releases the in-flight share of every admitted ticket of {@code owner} (its adapter is closed). */
    void forget(Object owner) {
        synchronized (this) {
            for (Ticket t : List.copyOf(running)) {
                if (t.owner == owner) {
                    release(t);
                }
            }
        }
        pump();
    }

    /**
     * Hands every admissible ticket to its adapter, in admission order. Runs on the calling thread,
     * unless another thread is already at it (that one then also admits what this caller made
     * admissible: state changes happen under the lock it checks each time).
     */
    void pump() {
        synchronized (this) {
            if (pumping) {
                return;
            }
            pumping = true;
        }
        boolean stoppedNormally = false;
        try {
            while (true) {
                Ticket t;
                synchronized (this) {
                    t = nextLocked();
                    if (t == null) {
                        pumping = false;
                        stoppedNormally = true;
                        return;
                    }
                }
                try {
                    t.admit();
                } catch (RuntimeException e) { // admit() must not throw; keep admitting the others
                    LOG.log(System.Logger.Level.ERROR, "qos: admitting an operation of cache salt '" + t.salt
                            + "' threw; it is released", e);
                    complete(t);
                }
            }
        } finally {
            if (!stoppedNormally) { // an Error: let the next caller pump
                synchronized (this) {
                    pumping = false;
                }
            }
        }
    }

    private boolean fits(Ticket t) {
        if (maxInflightTasks > 0 && running.size() >= maxInflightTasks) {
            return false;
        }
        return maxInflightBytes <= 0 || running.isEmpty() || inflightBytes + t.cost <= maxInflightBytes;
    }

    /** The next ticket to admit (accounted as in flight), or null when none may go now. */
    private Ticket nextLocked() {
        boolean anyFits = false;
        for (Domain d : turns) {
            if (fits(d.queue.peekFirst())) {
                anyFits = true;
                break;
            }
        }
        if (!anyFits) {
            return null; // only the in-flight limits hold the work back: a completion will pump again
        }
        while (true) {
            for (int i = turns.size(); i > 0; i--) {
                Domain d = turns.peekFirst();
                Ticket head = d.queue.peekFirst();
                if (!fits(head)) {
                    turns.addLast(turns.removeFirst()); // held back by the limits: not a turn, no quantum
                    continue;
                }
                if (d.quantumDue) {
                    d.deficit += quantum(d);
                    d.quantumDue = false;
                }
                if (d.deficit < head.cost) {
                    turns.addLast(turns.removeFirst());
                    d.quantumDue = true;
                    continue;
                }
                d.queue.removeFirst();
                d.deficit -= head.cost;
                if (d.queue.isEmpty()) {
                    turns.removeFirst();
                } else if (d.deficit < d.queue.peekFirst().cost) {
                    turns.addLast(turns.removeFirst());
                    d.quantumDue = true;
                }
                head.state = Ticket.ADMITTED;
                running.add(head);
                inflightBytes += head.cost;
                d.inflightTasks++;
                d.inflightBytes += head.cost;
                queuedTasks--;
                admittedTasks++;
                admittedBytes += head.cost;
                return head;
            }
            // A whole round admitted nothing: every salt that may go is short of deficit. Skip the rounds
            // in which none of them could admit yet (the next round admits at least one).
            long skip = Long.MAX_VALUE;
            for (Domain d : turns) {
                Ticket head = d.queue.peekFirst();
                if (fits(head)) {
                    long q = quantum(d);
                    skip = Math.min(skip, (head.cost - d.deficit + q - 1) / q - 1);
                }
            }
            if (skip > 0) {
                for (Domain d : turns) {
                    if (fits(d.queue.peekFirst())) {
                        d.deficit += skip * quantum(d);
                    }
                }
            }
        }
    }

    /**
     * A snapshot: the settings, the weights, what is queued and in flight, and per salt with work its
     * weight, queued and in-flight tasks and bytes, and deficit.
     */
    public synchronized Map<String, Object> snapshot() {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("quantum_bytes", quantumBytes);
        s.put("max_inflight_tasks", maxInflightTasks);
        s.put("max_inflight_bytes", maxInflightBytes);
        s.put("default_sched_weight", defaultWeight);
        s.put("sched_weights", weights());
        s.put("queued_tasks", queuedTasks);
        s.put("inflight_tasks", running.size());
        s.put("inflight_bytes", inflightBytes);
        s.put("admitted_tasks", admittedTasks);
        s.put("admitted_bytes", admittedBytes);
        Map<String, Object> by = new TreeMap<>();
        for (Domain d : domains.values()) {
            Map<String, Object> m = new LinkedHashMap<>();
            long queuedBytes = 0;
            for (Ticket t : d.queue) {
                queuedBytes += t.cost;
            }
            m.put("weight", weight(d.salt));
            m.put("queued_tasks", d.queue.size());
            m.put("queued_bytes", queuedBytes);
            m.put("inflight_tasks", d.inflightTasks);
            m.put("inflight_bytes", d.inflightBytes);
            m.put("deficit_bytes", d.deficit);
            by.put(d.salt, m);
        }
        s.put("domains", by);
        return s;
    }

    @Override
    public String toString() {
        return "qos scheduler (quantum " + quantumBytes + " bytes, max " + maxInflightTasks + " tasks / "
                + maxInflightBytes + " bytes in flight)";
    }

    /**
     * The settings, LMCache's names in brackets; each validated as it is set.
     */
    public static final class Builder {
        private long quantumBytes = DEFAULT_QUANTUM_BYTES;
        private int maxInflightTasks = DEFAULT_MAX_INFLIGHT_TASKS;
        private long maxInflightBytes;
        private int defaultWeight = DEFAULT_WEIGHT;
        private final Map<String, Integer> weights = new HashMap<>();

        private Builder() {}

        /** Bytes a weight-100 salt is granted per turn ({@code quantum_bytes}, default 1 MiB). */
        public Builder quantumBytes(long bytes) {
            if (bytes < 1 || bytes > MAX_QUANTUM_BYTES) {
                throw new IllegalArgumentException("qos: quantum_bytes " + bytes + " must be in [1, " + MAX_QUANTUM_BYTES
                        + "] (what a weight-100 salt is granted per turn; default " + DEFAULT_QUANTUM_BYTES + ")");
            }
            this.quantumBytes = bytes;
            return this;
        }

        /** Operations admitted to the inner adapters at once ({@code max_inflight_tasks}, default 8; 0 = no limit). */
        public Builder maxInflightTasks(int tasks) {
            if (tasks < 0) {
                throw new IllegalArgumentException("qos: max_inflight_tasks " + tasks
                        + " must be >= 0 (0 = no limit; default " + DEFAULT_MAX_INFLIGHT_TASKS + ")");
            }
            this.maxInflightTasks = tasks;
            return this;
        }

        /** Bytes admitted at once ({@code max_inflight_bytes}, default 0 = no limit). */
        public Builder maxInflightBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("qos: max_inflight_bytes " + bytes + " must be >= 0 (0 = no limit)");
            }
            this.maxInflightBytes = bytes;
            return this;
        }

        /** The weight of salts without an explicit one ({@code default_sched_weight}, default 100). */
        public Builder defaultWeight(int weight) {
            checkWeight("default_sched_weight", weight);
            this.defaultWeight = weight;
            return this;
        }

        /** An explicit weight for one cache salt ("" = keys without a salt). */
        public Builder weight(String cacheSalt, int weight) {
            checkSalt(cacheSalt);
            checkWeight("sched_weight of cache salt '" + cacheSalt + "'", weight);
            weights.put(cacheSalt, weight);
            return this;
        }

        public QosScheduler build() {
            return new QosScheduler(this);
        }
    }
}
