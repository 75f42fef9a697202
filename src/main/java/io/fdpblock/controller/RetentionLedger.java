package io.fdpblock.controller;

import io.fdpblock.l2.ObjectKey;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.LongSupplier;

/**
 * Which keys are shielded from L2 eviction, and until when: a store may carry a retention TTL
 * ({@code StorageManager.store(keys, data, ttl)}), and the keys it covers are then not evicted until the
 * TTL has passed; after it they are evicted like any other key. Expiry never deletes: it only ends the
 * shield. As LMCache's retention does (docs/contract.md section 7):
 *
 * <ul>
 * <li>deadlines only move later: a shorter TTL on a key retained already keeps its deadline, and
 * extending costs no budget;</li>
 * <li>a byte budget bounds what is shielded, so that an eviction round always finds unshielded keys:
 * a key that would take the retained bytes over it is not retained (its store goes ahead; it is evicted
 * like any key); a budget of 0 retains nothing;</li>
 * <li>{@link #isEvictable} compares with the clock when asked, so a key is evictable from its deadline
 * on, before the next {@link #sweep()} drops it and returns its bytes to the budget.</li>
 * </ul>
 *
 * A key is charged the size it was retained with (its L1 size), and from when the adapter announces it
 * what the adapter charges ({@link #charge}); when that no longer fits the budget it is no longer
 * retained. Keys deleted by anyone are forgotten ({@link #forget}). Thread-safe.
 */
public final class RetentionLedger {
    private static final System.Logger LOG = System.getLogger("io.fdpblock.controller");

    /** One retained key. Ordered by deadline, then by when it was entered (no two entries are equal). */
    private record Entry(ObjectKey key, long deadline, long size, long seq) {}

    private final long budgetBytes;
    private final LongSupplier clock;
    private final Map<ObjectKey, Entry> entries = new HashMap<>();
    /** The same entries, earliest deadline first. */
    private final TreeSet<Entry> byDeadline = new TreeSet<>((a, b) -> a.deadline != b.deadline
            ? Long.compare(a.deadline - b.deadline, 0) : Long.compare(a.seq, b.seq));
    private long seq;
    private long retainedBytes;
    private long stamps;
    private long extensions;
    private long expirations;
    private long budgetRejections;
    private boolean rejectionLogged;

    /**
     * @param budgetBytes at most this many bytes are retained at once (0: nothing is)
     * @param nanoClock the time of the deadlines, in nanoseconds (e.g. {@code System::nanoTime})
     */
    public RetentionLedger(long budgetBytes, LongSupplier nanoClock) {
        if (budgetBytes < 0 || nanoClock == null) {
            throw new IllegalArgumentException("retention needs a budget >= 0 (got " + budgetBytes + ") and a clock");
        }
        this.budgetBytes = budgetBytes;
        this.clock = nanoClock;
    }

    public long budgetBytes() {
        return budgetBytes;
    }

    /**
     * Retains {@code keys} for {@code ttl} from now, or extends their retention to then (never shortens it).
     * A key not retained yet is retained only if its size still fits the budget.
     *
     * @param sizes bytes per key, charged while it is retained
     * @param ttl zero or null: nothing happens
     * @return how many keys are now retained until at least then
     * @throws IllegalArgumentException for lists of unequal length, a negative size or a negative TTL
     */
    public int retain(List<ObjectKey> keys, List<Long> sizes, Duration ttl) {
        if (keys == null || sizes == null || keys.size() != sizes.size()) {
            throw new IllegalArgumentException("retention needs keys and sizes of equal length");
        }
        if (ttl != null && ttl.isNegative()) {
            throw new IllegalArgumentException("retention TTL " + ttl + " must not be negative (zero: none)");
        }
        if (ttl == null || ttl.isZero() || keys.isEmpty()) {
            return 0;
        }
        int accepted = 0;
        int rejected = 0;
        boolean log;
        synchronized (this) {
            long deadline = clock.getAsLong() + ttl.toNanos();
            for (int i = 0; i < keys.size(); i++) {
                ObjectKey k = keys.get(i);
                long size = sizes.get(i);
                if (size < 0) {
                    throw new IllegalArgumentException("size " + size + " of " + k + " must be >= 0");
                }
                Entry e = entries.get(k);
                if (e != null) {
                    if (deadline - e.deadline > 0) {
                        replace(e, new Entry(k, deadline, e.size, seq++));
                    }
                    extensions++;
                    accepted++;
                } else if (retainedBytes + size <= budgetBytes) {
                    put(new Entry(k, deadline, size, seq++));
                    stamps++;
                    accepted++;
                } else {
                    budgetRejections++;
                    rejected++;
                }
            }
            log = rejected > 0 && !rejectionLogged;
            rejectionLogged |= log;
        }
        if (log) {
            LOG.log(System.Logger.Level.WARNING, "retention budget of " + budgetBytes + " bytes is used up: " + rejected
                    + " of " + keys.size() + " keys are not retained (they are evicted like any key); later rejections"
                    + " are counted (budget_rejections) but not logged. Give retention a larger share of the capacity,"
                    + " or shorter TTLs");
        }
        return accepted;
    }

    /** Whether eviction may take {@code key}: it is not retained, or its deadline has come. */
    public synchronized boolean isEvictable(ObjectKey key) {
        Entry e = entries.get(key);
        return e == null || clock.getAsLong() - e.deadline >= 0;
    }

    /**
     * What the adapter charges for keys it announced (stored): a retained key is charged that from now on,
     * and stops being retained when the difference does not fit the budget.
     */
    public synchronized void charge(List<ObjectKey> keys, List<Long> sizes) {
        for (int i = 0; i < keys.size(); i++) {
            Entry e = entries.get(keys.get(i));
            long size = sizes.get(i);
            if (e == null || e.size == size) {
                continue;
            }
            remove(e);
            if (retainedBytes + size <= budgetBytes) {
                put(new Entry(e.key, e.deadline, size, e.seq));
            } else {
                budgetRejections++;
            }
        }
    }

    /** Forgets deleted keys (whoever deleted them): their bytes return to the budget. */
    public synchronized void forget(List<ObjectKey> keys) {
        for (ObjectKey k : keys) {
            Entry e = entries.get(k);
            if (e != null) {
                remove(e);
            }
        }
    }

    /** Drops the keys whose deadline has come: they stay stored, only unshielded. @return how many */
    public synchronized int sweep() {
        long now = clock.getAsLong();
        int n = 0;
        while (!byDeadline.isEmpty() && now - byDeadline.first().deadline >= 0) {
            remove(byDeadline.first());
            n++;
        }
        expirations += n;
        return n;
    }

    /** Bytes retained now. */
    public synchronized long retainedBytes() {
        return retainedBytes;
    }

    /** Keys retained now (some may be past their deadline until the next sweep). */
    public synchronized int retainedKeys() {
        return entries.size();
    }

    /** As LMCache reports it: retained keys and bytes, the budget, and the counts since the start. */
    public synchronized Map<String, Object> status() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("retained_keys", entries.size());
        m.put("retained_bytes", retainedBytes);
        m.put("max_retained_bytes", budgetBytes);
        m.put("stamps", stamps);
        m.put("extends", extensions);
        m.put("expirations", expirations);
        m.put("budget_rejections", budgetRejections);
        return m;
    }

    private void put(Entry e) {
        entries.put(e.key, e);
        byDeadline.add(e);
        retainedBytes += e.size;
    }

    private void remove(Entry e) {
        entries.remove(e.key);
        byDeadline.remove(e);
        retainedBytes -= e.size;
    }

    private void replace(Entry old, Entry now) {
        remove(old);
        put(now);
    }

    @Override
    public synchronized String toString() {
        return "RetentionLedger[" + entries.size() + " keys, " + retainedBytes + " of " + budgetBytes + " bytes]";
    }
}
