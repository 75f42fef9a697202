package io.fdpblock.core;

import io.fdpblock.l2.ObjectMeta;

import java.util.HashMap;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * The store's keys: the committed ones (slot, size, checksum, lock and reader counts) and the ones
 * whose write is in flight (invisible to lookups). Not thread-safe: the core calls it under its lock.
 */
final class KeyIndex {
    /** A committed key. */
    static final class Entry {
        final int slot;
        final int size;
        final ObjectMeta meta;
        /** CRC32C of the payload, valid when {@link #hasCrc}; set once the slot header was read. */
        int crc;
        boolean hasCrc;
        int locks;
        /** Loads of it in flight: its slot is freed only after the last one ends. */
        int readers;
        /** Deleted while loads were in flight. */
        boolean deleted;

        Entry(int slot, int size, ObjectMeta meta, int crc, boolean hasCrc) {
            this.slot = slot;
            this.size = size;
            this.meta = meta;
            this.crc = crc;
            this.hasCrc = hasCrc;
        }

        void setCrc(int payloadCrc) {
            crc = payloadCrc;
            hasCrc = true;
        }
    }

    /** A key whose write is in flight. */
    static final class Inflight {
        final int slot;
        boolean canceled;

        Inflight(int slot) {
            this.slot = slot;
        }
    }

    /** Distinct metadata shapes kept shared, at most this many. */
    private static final int MAX_INTERNED_META = 4096;

    private final HashMap<String, Entry> committed = new HashMap<>();
    private final HashMap<String, Inflight> inflight = new HashMap<>();
    private final HashMap<ObjectMeta, ObjectMeta> metaInterner = new HashMap<>();
    /** The committed key in each slot (null: none), for {@link SlotGroups}: references, no object per key. */
    private String[] keyBySlot = new String[0];

    Entry get(String key) {
        return committed.get(key);
    }

    boolean contains(String key) {
        return committed.containsKey(key);
    }

    void put(String key, Entry e) {
        committed.put(key, e);
        if (e.slot >= keyBySlot.length) {
            keyBySlot = java.util.Arrays.copyOf(keyBySlot, Math.max(e.slot + 1, 2 * keyBySlot.length));
        }
        keyBySlot[e.slot] = key;
    }

    Entry remove(String key) {
        Entry e = committed.remove(key);
        if (e != null) {
            keyBySlot[e.slot] = null;
        }
        return e;
    }

    /** The committed key in {@code slot}, or null. */
    String keyAt(int slot) {
        return slot < keyBySlot.length ? keyBySlot[slot] : null;
    }

    int size() {
        return committed.size();
    }

    int lockedCount() {
        int n = 0;
        for (Entry e : committed.values()) {
            if (e.locks > 0) {
                n++;
            }
        }
        return n;
    }

    void forEach(BiConsumer<String, Entry> action) {
        committed.forEach(action);
    }

    Iterable<Map.Entry<String, Entry>> entries() {
        return committed.entrySet();
    }

    /** @return per key: committed; with {@code lockHits}, each hit's lock count goes up by one */
    boolean[] lookup(java.util.List<String> keys, boolean lockHits) {
        boolean[] out = new boolean[keys.size()];
        for (int i = 0; i < out.length; i++) {
            Entry e = committed.get(keys.get(i));
            if (e != null) {
                out[i] = true;
                if (lockHits) {
                    e.locks++;
                }
            }
        }
        return out;
    }

    /** Lock count -1 per key, never below zero; unknown keys are ignored. */
    void unlock(java.util.List<String> keys) {
        for (String k : keys) {
            Entry e = committed.get(k);
            if (e != null && e.locks > 0) {
                e.locks--;
            }
        }
    }

    /**
     * Removes {@code key} (kept when locked, unless {@code force}) or cancels its write in flight. Its
     * slot goes to {@code freed} at once, or, while loads of it are in flight, when the last one ends.
     */
    DeleteOutcome delete(String key, boolean force, java.util.function.IntConsumer freed) {
        Entry e = committed.get(key);
        if (e == null) {
            return cancelWrite(key) != null ? DeleteOutcome.CANCELLED : DeleteOutcome.MISSING;
        }
        if (e.locks > 0 && !force) {
            return DeleteOutcome.LOCKED;
        }
        remove(key);
        if (e.readers > 0) {
            e.deleted = true;
        } else {
            freed.accept(e.slot);
        }
        return DeleteOutcome.REMOVED;
    }

    boolean isInflight(String key) {
        return inflight.containsKey(key);
    }

    Inflight startWrite(String key, int slot) {
        Inflight inf = new Inflight(slot);
        inflight.put(key, inf);
        return inf;
    }

    /** Ends the write {@code inf} of {@code key} (a cancel may have removed it already). */
    void endWrite(String key, Inflight inf) {
        if (inflight.get(key) == inf) {
            inflight.remove(key);
        }
    }

    /** @return the cancelled write of {@code key}, or null when none is in flight */
    Inflight cancelWrite(String key) {
        Inflight inf = inflight.remove(key);
        if (inf != null) {
            inf.canceled = true;
        }
        return inf;
    }

    int inflightCount() {
        return inflight.size();
    }

    /** Most chunks share a handful of shapes: keep one copy of each. */
    ObjectMeta intern(ObjectMeta meta) {
        if (meta == null) {
            return null;
        }
        ObjectMeta known = metaInterner.get(meta);
        if (known != null) {
            return known;
        }
        if (metaInterner.size() < MAX_INTERNED_META) {
            metaInterner.put(meta, meta);
        }
        return meta;
    }
}
