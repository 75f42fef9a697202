package io.fdpblock.core.v1;

import io.fdpblock.core.KeyBatch;
import io.fdpblock.core.StoreIndex;
import io.fdpblock.core.StoreKey;
import io.fdpblock.l2.ObjectMeta;

import java.util.Arrays;
import java.util.HashMap;
import java.util.function.BiConsumer;

/**
 * The v1 index: a map from each key to its entry, on the heap. LMCache's raw_block checkpoints list
 * every key, so this format keeps them; fdpblock_v2's compact index (hashes, no key strings) is the one
 * that scales.
 */
public final class HeapKeyIndex implements StoreIndex {
    /** A committed key. */
    private static final class Entry {
        final int slot;
        final int size;
        final ObjectMeta meta;
        final int saltId;
        int crc;
        boolean hasCrc;
        int locks;

        Entry(int slot, int size, ObjectMeta meta, int crc, boolean hasCrc, int saltId) {
            this.slot = slot;
            this.size = size;
            this.meta = meta;
            this.crc = crc;
            this.hasCrc = hasCrc;
            this.saltId = saltId;
        }

        Found found() {
            return new Found(slot, size, crc, hasCrc, meta, saltId);
        }
    }

    /** Distinct metadata shapes kept shared, at most this many. */
    private static final int MAX_INTERNED_META = 4096;
    /** Heap bytes per entry assumed for status: the map node, the entry, the key string (~110 chars). */
    private static final long ESTIMATED_BYTES_PER_ENTRY = 230;

    private final HashMap<String, Entry> committed = new HashMap<>();
    private final HashMap<ObjectMeta, ObjectMeta> metaInterner = new HashMap<>();
    /** The key in each slot (null: none), so that a slot group's keys are known without reading its headers. */
    private String[] keyBySlot = new String[0];

    @Override
    public Found get(StoreKey storeKey) {
        String key = storeKey.text();
        Entry e = committed.get(key);
        return e == null ? null : e.found();
    }

    @Override
    public boolean contains(StoreKey storeKey) {
        String key = storeKey.text();
        return committed.containsKey(key);
    }

    @Override
    public void put(StoreKey storeKey, int slot, int size, int crc, boolean hasCrc, ObjectMeta meta, int saltId) {
        String key = storeKey.text();
        Entry old = committed.put(key, new Entry(slot, size, intern(meta), crc, hasCrc, saltId));
        if (old != null) {
            forgetSlot(old.slot, key);
        }
        if (slot >= keyBySlot.length) {
            keyBySlot = Arrays.copyOf(keyBySlot, Math.max(slot + 1, 2 * keyBySlot.length));
        }
        keyBySlot[slot] = key;
    }

    /** The committed key in {@code slot}, or null. */
    @Override
    public boolean keepsKeys() {
        return true;
    }

    @Override
    public String keyAt(int slot) {
        return slot < keyBySlot.length ? keyBySlot[slot] : null;
    }

    private void forgetSlot(int slot, String key) {
        if (slot < keyBySlot.length && key.equals(keyBySlot[slot])) {
            keyBySlot[slot] = null;
        }
    }

    @Override
    public boolean[] lookup(KeyBatch keys, boolean lockHits) {
        boolean[] out = new boolean[keys.size()];
        for (int i = 0; i < out.length; i++) {
            Entry e = committed.get(keys.text(i));
            if (e != null) {
                out[i] = true;
                if (lockHits) {
                    e.locks++;
                }
            }
        }
        return out;
    }

    @Override
    public void unlock(KeyBatch keys) {
        for (int i = 0; i < keys.size(); i++) {
            Entry e = committed.get(keys.text(i));
            if (e != null && e.locks > 0) {
                e.locks--;
            }
        }
    }

    @Override
    public int lockCount(StoreKey key) {
        Entry e = committed.get(key.text());
        return e == null ? 0 : e.locks;
    }

    @Override
    public int remove(StoreKey storeKey, boolean force) {
        String key = storeKey.text();
        Entry e = committed.get(key);
        if (e == null) {
            return MISSING;
        }
        if (e.locks > 0 && !force) {
            return LOCKED;
        }
        committed.remove(key);
        forgetSlot(e.slot, key);
        return e.slot;
    }

    @Override
    public void setCrc(StoreKey storeKey, int crc) {
        String key = storeKey.text();
        Entry e = committed.get(key);
        if (e != null) {
            e.crc = crc;
            e.hasCrc = true;
        }
    }

    @Override
    public int size() {
        return committed.size();
    }

    @Override
    public int lockedCount() {
        int n = 0;
        for (Entry e : committed.values()) {
            if (e.locks > 0) {
                n++;
            }
        }
        return n;
    }

    @Override
    public long memoryBytes() {
        return committed.size() * ESTIMATED_BYTES_PER_ENTRY + 4L * keyBySlot.length; // compressed references
    }

    /** Every key with its entry (v1 checkpoints and key listings). */
    public void forEach(BiConsumer<String, Found> action) {
        committed.forEach((k, e) -> action.accept(k, e.found()));
    }

    /** Most chunks share a handful of shapes: keep one copy of each. */
    private ObjectMeta intern(ObjectMeta meta) {
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

    @Override
    public void close() {
        committed.clear();
        keyBySlot = new String[0];
    }
}
