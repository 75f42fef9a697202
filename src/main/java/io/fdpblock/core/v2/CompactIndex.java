package io.fdpblock.core.v2;

import com.dynatrace.hash4j.hashing.HashValue128;
import io.fdpblock.core.KeyBatch;
import io.fdpblock.core.StoreIndex;
import io.fdpblock.core.StoreKey;
import io.fdpblock.l2.ObjectMeta;
import io.fdpblock.util.KeyHash;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.IntUnaryOperator;

/**
 * The fdpblock_v2 index: one fixed-size entry per key in an off-heap open-addressing table, keyed by
 * a 128-bit hash of the key ({@link KeyHash}), with no key and no Java object per entry. Sized for the
 * device's slots (larger only while a recovery replays, {@link #beginReplay}) at a load of at most {@value #MAX_LOAD}: 32 bytes an entry, about 40 per key when
 * full.
 *
 * <pre>
 * entry (32 bytes): 0 h1 | 8 h2 | 16 slot + 1 (0 = empty, -1 = removed) | 20 payload size
 *                   | 24 payload CRC32C | 28 u16 lock count | 30 u16 salt id
 * </pre>
 *
 * Linear probing; a removed entry leaves a marker that later inserts reuse, so entries never move
 * while they live: a snapshot may copy the table a chunk at a time without holding the store's lock
 * throughout ({@link #copyLive}). The table is rebuilt (markers dropped) when they pile up and no
 * snapshot is copying. Two keys with the same 128-bit hash would share an entry; for N keys that
 * happens with probability about N^2 / 2^129 (1e-23 for 100 million keys). Not thread-safe: the core
 * calls it under its lock.
 */
public final class CompactIndex implements StoreIndex {
    static final int ENTRY_BYTES = 32;
    static final double MAX_LOAD = 0.8;
    private static final int EMPTY = 0;
    private static final int REMOVED = -1;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;

    /** The table's entries: sized for the device's slots, larger only while a recovery replays. */
    private final long baseCapacity;
    private long capacity;
    private boolean growable;
    private Arena arena;
    private MemorySegment table;
    private int size;
    private long removed;
    private int locked;
    private int copying;

    /** @param maxEntries the most keys it will hold (the device's slots) */
    public CompactIndex(long maxEntries) {
        this.baseCapacity = Math.max(16, (long) Math.ceil(maxEntries / MAX_LOAD) + 1);
        this.capacity = baseCapacity;
        this.arena = Arena.ofShared();
        this.table = arena.allocate(capacity * ENTRY_BYTES, 8);
    }

    private long home(long h1) {
        return Math.unsignedMultiplyHigh(h1, capacity);
    }

    private static long at(long pos) {
        return pos * ENTRY_BYTES;
    }

    private int slotField(long pos) {
        return table.get(INT, at(pos) + 16);
    }

    /** @return the position of the live entry with this hash, or -1 */
    private long find(long h1, long h2) {
        long pos = home(h1);
        for (long probes = 0; probes < capacity; probes++) {
            int s = slotField(pos);
            if (s == EMPTY) {
                return -1;
            }
            long off = at(pos);
            if (s != REMOVED && table.get(LONG, off) == h1 && table.get(LONG, off + 8) == h2) {
                return pos;
            }
            pos = pos + 1 == capacity ? 0 : pos + 1;
        }
        return -1;
    }

    /** Key {@code i} of {@code keys}: by the hash it carries, else by the hash of its text. */
    private long find(KeyBatch keys, int i) {
        if (keys.carriesHashes()) {
            return find(keys.h1(i), keys.h2(i));
        }
        HashValue128 h = KeyHash.of(keys.text(i));
        return find(h.getMostSignificantBits(), h.getLeastSignificantBits());
    }

    private long find(StoreKey key) {
        return find(key.h1(), key.h2());
    }

    @Override
    public Found get(StoreKey key) {
        long pos = find(key);
        if (pos < 0) {
            return null;
        }
        long off = at(pos);
        return new Found(table.get(INT, off + 16) - 1, table.get(INT, off + 20), table.get(INT, off + 24), true, null,
                Short.toUnsignedInt(table.get(SHORT, off + 30)));
    }

    @Override
    public boolean contains(StoreKey key) {
        return find(key) >= 0;
    }

    @Override
    public void put(StoreKey key, int slot, int size, int crc, boolean hasCrc, ObjectMeta meta, int saltId) {
        put(key.h1(), key.h2(), slot, size, crc, saltId);
    }

    /**
     * Commits (or replaces) the entry of a key by its hash (recovery replays hashes, not keys). One probe
     * sequence finds the key or, when it is new, the place it goes (the first removal marker before the
     * empty entry that ends the sequence, else that entry): a put costs one walk of a cluster, not two.
     *
     * @return the entry it replaced as {@code slot | (long) saltId << 32}, or -1 when the key is new
     */
    long put(long h1, long h2, int slot, int size, int crc, int saltId) {
        long pos = home(h1);
        long free = -1;
        long found = -1;
        for (long probes = 0; probes < capacity; probes++) {
            int s = slotField(pos);
            if (s == EMPTY) {
                free = free < 0 ? pos : free;
                break;
            }
            if (s == REMOVED) {
                free = free < 0 ? pos : free;
            } else if (table.get(LONG, at(pos)) == h1 && table.get(LONG, at(pos) + 8) == h2) {
                found = pos;
                break;
            }
            pos = pos + 1 == capacity ? 0 : pos + 1;
        }
        long replaced = -1;
        if (found < 0 && growable && (this.size >= capacity * MAX_LOAD || free < 0)) {
            rebuild(capacity * 2);
            return put(h1, h2, slot, size, crc, saltId);
        }
        if (found < 0) {
            if (this.size >= capacity * MAX_LOAD || free < 0) {
                throw new IllegalStateException("compact index full: " + this.size + " keys in a table sized for "
                        + (long) (capacity * MAX_LOAD) + " (the device's slots)");
            }
            pos = free;
            if (slotField(pos) == REMOVED) {
                removed--;
            }
            this.size++;
            table.set(SHORT, at(pos) + 28, (short) 0);
        } else {
            pos = found;
            replaced = Integer.toUnsignedLong(slotField(pos) - 1)
                    | (long) Short.toUnsignedInt(table.get(SHORT, at(pos) + 30)) << 32;
            if (lockCountAt(pos) > 0) {
                locked--; // replaced: its locks go with the old version
                table.set(SHORT, at(pos) + 28, (short) 0);
            }
        }
        long off = at(pos);
        table.set(LONG, off, h1);
        table.set(LONG, off + 8, h2);
        table.set(INT, off + 16, slot + 1);
        table.set(INT, off + 20, size);
        table.set(INT, off + 24, crc);
        table.set(SHORT, off + 30, (short) saltId);
        return replaced;
    }

    private int lockCountAt(long pos) {
        return Short.toUnsignedInt(table.get(SHORT, at(pos) + 28));
    }

    @Override
    public boolean[] lookup(KeyBatch keys, boolean lockHits) {
        boolean[] out = new boolean[keys.size()];
        for (int i = 0; i < out.length; i++) {
            long pos = find(keys, i);
            if (pos >= 0) {
                out[i] = true;
                if (lockHits) {
                    int n = lockCountAt(pos);
                    if (n == 0xFFFF) {
                        throw new IllegalStateException("key " + keys.text(i) + " is locked 65535 times: unlock it first");
                    }
                    if (n == 0) {
                        locked++;
                    }
                    table.set(SHORT, at(pos) + 28, (short) (n + 1));
                }
            }
        }
        return out;
    }

    @Override
    public void unlock(KeyBatch keys) {
        for (int i = 0; i < keys.size(); i++) {
            long pos = find(keys, i);
            if (pos >= 0) {
                int n = lockCountAt(pos);
                if (n > 0) {
                    table.set(SHORT, at(pos) + 28, (short) (n - 1));
                    if (n == 1) {
                        locked--;
                    }
                }
            }
        }
    }

    @Override
    public int lockCount(StoreKey key) {
        long pos = find(key);
        return pos < 0 ? 0 : lockCountAt(pos);
    }

    @Override
    public int remove(StoreKey key, boolean force) {
        long pos = find(key);
        if (pos < 0) {
            return MISSING;
        }
        if (lockCountAt(pos) > 0 && !force) {
            return LOCKED;
        }
        return removeAt(pos);
    }

    /** The salt id of the entry with this hash, or -1 when there is none (a v2 log replay). */
    int saltIdOf(long h1, long h2) {
        long pos = find(h1, h2);
        return pos < 0 ? -1 : Short.toUnsignedInt(table.get(SHORT, at(pos) + 30));
    }

    /** Removes the entry with this hash if it holds {@code slot} (a v2 log replay). @return its slot, or -1 */
    int removeIfAt(long h1, long h2, int slot) {
        long pos = find(h1, h2);
        return pos >= 0 && slotField(pos) - 1 == slot ? removeAt(pos) : MISSING;
    }

    private int removeAt(long pos) {
        int slot = slotField(pos) - 1;
        if (lockCountAt(pos) > 0) {
            locked--;
        }
        table.set(INT, at(pos) + 16, REMOVED);
        size--;
        removed++;
        if (removed > capacity / 8 && copying == 0) {
            rebuild(capacity);
        }
        return slot;
    }

    @Override
    public void setCrc(StoreKey key, int crc) {
        long pos = find(key);
        if (pos >= 0) {
            table.set(INT, at(pos) + 24, crc);
        }
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public int lockedCount() {
        return locked;
    }

    @Override
    public long memoryBytes() {
        return capacity * ENTRY_BYTES;
    }

    @Override
    public long offHeapBytes() {
        return capacity * ENTRY_BYTES;
    }

    long capacity() {
        return capacity;
    }

    /**
     * A snapshot copies the table from position 0 to {@link #capacity()} in steps, releasing the store's
     * lock between them: entries never move while they live, so every entry that lives throughout is
     * copied once; one added or removed meanwhile may or may not be, which the log after the snapshot's
     * start settles. Rebuilds wait until {@link #endCopy()}.
     */
    void beginCopy() {
        copying++;
    }

    void endCopy() {
        copying--;
    }

    /**
     * Copies the live entries at positions [{@code from}, {@code from + count}) to {@code out} as
     * 32-byte records (h1, h2, slot, size, crc, salt id) with {@code group(slot)} in bytes 28..29.
     *
     * @return how many entries were copied
     */
    int copyLive(long from, long count, MemorySegment out, IntUnaryOperator group) {
        int n = 0;
        long end = Math.min(capacity, from + count);
        for (long pos = from; pos < end; pos++) {
            int s = slotField(pos);
            if (s == EMPTY || s == REMOVED) {
                continue;
            }
            long src = at(pos);
            long dst = (long) n * ENTRY_BYTES;
            MemorySegment.copy(table, src, out, dst, 28);
            out.set(SHORT, dst + 16 + 12, (short) group.applyAsInt(s - 1));
            out.set(SHORT, dst + 30, table.get(SHORT, src + 30));
            out.set(INT, dst + 16, s - 1);
            n++;
        }
        return n;
    }

    /**
     * While a recovery replays: the table grows instead of refusing a key past its load. A replay goes
     * through states the store never had (a fuzzy snapshot holds keys deleted while it was copied, and
     * the log from its start puts again keys deleted later), so it may hold more keys than the device
     * has slots until the log is applied; then {@link #endReplay()} gives the table back its size.
     */
    void beginReplay() {
        growable = true;
    }

    /**
     * Ends {@link #beginReplay()}: the table returns to the size for the device's slots.
     *
     * @throws IllegalStateException when it still holds more keys than that (the replay is not settled)
     */
    void endReplay() {
        growable = false;
        if (capacity != baseCapacity) {
            if (size >= baseCapacity * MAX_LOAD) {
                throw new IllegalStateException("compact index: " + size + " keys after the replay, more than the "
                        + (long) (baseCapacity * MAX_LOAD) + " the device's slots allow");
            }
            rebuild(baseCapacity);
        }
    }

    /**
     * Re-inserts the live entries into a fresh table of {@code newCapacity} entries, dropping the removal
     * markers (a stall of O(capacity)).
     */
    private void rebuild(long newCapacity) {
        Arena oldArena = arena;
        MemorySegment old = table;
        long oldCapacity = capacity;
        capacity = newCapacity;
        arena = Arena.ofShared();
        table = arena.allocate(capacity * ENTRY_BYTES, 8);
        size = 0;
        removed = 0;
        locked = 0;
        for (long pos = 0; pos < oldCapacity; pos++) {
            long off = at(pos);
            int s = old.get(INT, off + 16);
            if (s == EMPTY || s == REMOVED) {
                continue;
            }
            long h1 = old.get(LONG, off);
            long dst = home(h1);
            while (slotField(dst) != EMPTY) {
                dst = dst + 1 == capacity ? 0 : dst + 1;
            }
            MemorySegment.copy(old, off, table, at(dst), ENTRY_BYTES);
            size++;
            if (lockCountAt(dst) > 0) {
                locked++;
            }
        }
        oldArena.close();
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
