package io.fdpblock.controller;

import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.l2.ReclaimUnitGroups;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code reclaim_unit}: evicts whole reclaim-unit groups ({@link ReclaimUnitGroups}): every key of a
 * group is deleted at once and the group's range deallocated in one command, so the device erases the
 * reclaim unit without copying. A group with a locked key, or a write or load in flight, is skipped this
 * round (tried again in the next); a group a placement id is still filling is never a victim. Which
 * group goes first is the {@link Order}. Loads are counted per group from {@code onKeysAccessed}.
 */
public final class ReclaimUnitEvictionPolicy implements EvictionPolicy {
    /** Which group goes first. */
    public enum Order {
        /** The group opened longest ago (FIFO). */
        OLDEST,
        /** Of the older half of the groups, the one whose keys were loaded least; ties: the oldest. */
        LEAST_HIT,
        /**
         * Second chance (CLOCK over groups): groups queue in the order they were filled; the group at the head
         * goes unless it was loaded from since it last came up, in which case its mark is cleared and it goes
         * to the tail, as if filled now.
         */
        SECOND_CHANCE;

        public String configName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** @throws IllegalArgumentException naming the known orders */
        public static Order parse(String s) {
            for (Order o : values()) {
                if (o.configName().equals(s)) {
                    return o;
                }
            }
            throw new IllegalArgumentException("reclaim_unit eviction order '" + s + "' is unknown: use oldest,"
                    + " least_hit or second_chance");
        }
    }

    /** The order {@code reclaim_unit} uses when none is given (see the comparison in docs/waf-model.md). */
    public static final Order DEFAULT_ORDER = Order.SECOND_CHANCE;

    private static final long UNKNOWN = Long.MIN_VALUE;

    /** What the policy knows of a group. */
    private static final class Stats {
        /** The group's {@code opened} these counts belong to; unknown until a round has seen the group. */
        long opened = UNKNOWN;
        long hits;
        boolean referenced;
    }

    private final Order order;
    /** Per group index. Guarded by itself. */
    private final HashMap<Integer, Stats> stats = new HashMap<>();
    /** SECOND_CHANCE: the groups in queue order (head = next to consider). Guarded by {@link #stats}. */
    private final ArrayDeque<Integer> clock = new ArrayDeque<>();
    /** SECOND_CHANCE: the {@code opened} of each queued group when it was queued. Guarded by {@link #stats}. */
    private final HashMap<Integer, Long> queued = new HashMap<>();
    private L2Adapter adapter;
    private ReclaimUnitGroups groups;
    private long loadsOutsideGroups;

    public ReclaimUnitEvictionPolicy() {
        this(DEFAULT_ORDER);
    }

    public ReclaimUnitEvictionPolicy(Order order) {
        if (order == null) {
            throw new IllegalArgumentException("reclaim_unit eviction needs an order: oldest, least_hit or second_chance");
        }
        this.order = order;
    }

    public Order order() {
        return order;
    }

    @Override
    public void bind(L2Adapter adapter) {
        if (!(adapter instanceof ReclaimUnitGroups g) || g.groupBytes() <= 0) {
            throw new IllegalArgumentException("eviction policy reclaim_unit needs an adapter that groups its storage"
                    + " by reclaim unit (raw_block with \"fdp_enabled\": true on a device that reports its reclaim unit"
                    + " size); " + adapter + (adapter instanceof ReclaimUnitGroups ? " knows no reclaim unit size"
                    : " does not group") + ": use eviction policy lru there");
        }
        this.adapter = adapter;
        this.groups = g;
    }

    @Override
    public void onKeysAccessed(List<ObjectKey> keys) {
        int[] of;
        try {
            of = groups.groupsOf(keys);
        } catch (IllegalStateException closed) {
            return; // the adapter is closing: nothing left to evict
        }
        synchronized (stats) {
            for (int g : of) {
                if (g < 0) {
                    loadsOutsideGroups++;
                    continue;
                }
                Stats s = stats.computeIfAbsent(g, k -> new Stats());
                s.hits++;
                s.referenced = true;
            }
        }
    }

    @Override
    public EvictionRound evict(long bytes) {
        List<ReclaimUnitGroups.Group> candidates = new ArrayList<>();
        Map<Integer, Stats> view = new HashMap<>();
        List<ReclaimUnitGroups.Group> all = groups.groups();
        synchronized (stats) {
            for (ReclaimUnitGroups.Group g : all) {
                Stats s = stats.computeIfAbsent(g.index(), k -> new Stats());
                if (s.opened == UNKNOWN) {
                    s.opened = g.opened(); // counted since it was evicted (or since the start): all of this data
                } else if (s.opened != g.opened()) { // freed by deletes and reopened since: its loads were of old data
                    s.opened = g.opened();
                    s.hits = 0;
                    s.referenced = false;
                }
                if (!g.open()) {
                    candidates.add(g);
                    Stats copy = new Stats();
                    copy.opened = s.opened;
                    copy.hits = s.hits;
                    copy.referenced = s.referenced;
                    view.put(g.index(), copy);
                }
            }
        }
        Comparator<ReclaimUnitGroups.Group> oldest = Comparator.comparingLong(ReclaimUnitGroups.Group::opened)
                .thenComparingInt(ReclaimUnitGroups.Group::index);
        candidates.sort(oldest);
        Tally t = new Tally();
        if (order == Order.SECOND_CHANCE) {
            secondChance(candidates, bytes, t);
            return t.round();
        }
        List<ReclaimUnitGroups.Group> ranked = candidates;
        if (order == Order.LEAST_HIT) {
            int half = (candidates.size() + 1) / 2; // the newer half had no time to be loaded from
            ranked = new ArrayList<>(candidates.subList(0, half));
            ranked.sort(Comparator.<ReclaimUnitGroups.Group>comparingLong(g -> view.get(g.index()).hits)
                    .thenComparing(oldest));
            ranked.addAll(candidates.subList(half, candidates.size()));
        }
        for (ReclaimUnitGroups.Group g : ranked) {
            if (t.freed >= bytes) {
                break;
            }
            evict(g.index(), t);
        }
        return t.round();
    }

    /** CLOCK: new candidates join the queue's tail in fill order; the head goes unless loaded from since. */
    private void secondChance(List<ReclaimUnitGroups.Group> candidates, long bytes, Tally t) {
        Map<Integer, ReclaimUnitGroups.Group> byIndex = new HashMap<>();
        List<Integer> victims = new ArrayList<>();
        synchronized (stats) {
            for (ReclaimUnitGroups.Group g : candidates) { // in fill order
                byIndex.put(g.index(), g);
                Long q = queued.get(g.index());
                if (q == null || q != g.opened()) {
                    if (q != null) {
                        clock.remove(g.index()); // refilled since it was queued
                    }
                    queued.put(g.index(), g.opened());
                    clock.addLast(g.index());
                }
            }
            // walk the queue: at most twice round (a group passed over comes up again unmarked)
            long planned = 0;
            for (int steps = 2 * clock.size(); steps > 0 && !clock.isEmpty() && planned < bytes; steps--) {
                int gi = clock.pollFirst();
                ReclaimUnitGroups.Group g = byIndex.get(gi);
                if (g == null) { // no longer a candidate (emptied, or open again): it rejoins when it is one
                    queued.remove(gi);
                    continue;
                }
                Stats s = stats.get(gi);
                if (s != null && s.referenced) {
                    s.referenced = false;
                    clock.addLast(gi);
                    continue;
                }
                victims.add(gi);
                queued.remove(gi);
                planned += g.usedBytes();
            }
        }
        List<Integer> kept = new ArrayList<>();
        for (int gi : victims) {
            if (t.freed >= bytes) {
                kept.add(gi);
                continue;
            }
            long before = t.groups;
            evict(gi, t);
            if (t.groups == before) {
                kept.add(gi); // locked or busy: it stays at the head for the next round
            }
        }
        synchronized (stats) {
            for (int i = kept.size() - 1; i >= 0; i--) {
                int gi = kept.get(i);
                ReclaimUnitGroups.Group g = byIndex.get(gi);
                if (!queued.containsKey(gi)) {
                    queued.put(gi, g.opened());
                    clock.addFirst(gi);
                }
            }
        }
    }

    /** What a round did so far. */
    private static final class Tally {
        long keys;
        long freed;
        long groups;
        long locked;
        long busy;
        long hits;

        EvictionRound round() {
            return new EvictionRound(keys, freed, groups, locked, busy, hits);
        }
    }

    private void evict(int group, Tally t) {
        ReclaimUnitGroups.Eviction e = groups.evictGroup(group);
        switch (e.outcome()) {
            case EVICTED -> {
                t.groups++;
                t.keys += e.deleted().size();
                t.freed += e.freedBytes();
                synchronized (stats) {
                    Stats s = stats.remove(group);
                    t.hits += s == null ? 0 : s.hits;
                }
            }
            case LOCKED -> t.locked++;
            case BUSY -> t.busy++;
            default -> { } // became open or empty since the snapshot
        }
    }

    @Override
    public Map<String, Object> status() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("policy", Policies.RECLAIM_UNIT);
        m.put("order", order.configName());
        m.put("group_bytes", groups == null ? 0 : groups.groupBytes());
        synchronized (stats) {
            m.put("loads_outside_groups", loadsOutsideGroups);
        }
        return m;
    }

    /** Registered as {@code reclaim_unit}, with {@link #DEFAULT_ORDER}. */
    public static final class Factory implements EvictionPolicyFactory {
        @Override
        public String name() {
            return Policies.RECLAIM_UNIT;
        }

        @Override
        public EvictionPolicy create() {
            return new ReclaimUnitEvictionPolicy();
        }
    }
}
