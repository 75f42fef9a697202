package io.fdpblock.core.v2;

import io.fdpblock.core.SaltTable;
import io.fdpblock.device.BlockDevice;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * fdpblock_v2's recovery rules, on what a device holds: the newest snapshot whose body checks out (an
 * older one when it does not), then every record of the log after that snapshot's start, up to the
 * first chunk that is missing, torn or stale. One place for them: the store's open ({@link V2Meta})
 * and the read-only inspector (the tools' {@code Inspector}) both rebuild an index with it.
 */
public final class V2Recovery {
    private V2Recovery() {}

    /**
     * Applies puts and deletes to the index, the salt counts and the slots in use, holding one key per
     * slot. In the log a slot's new key's PUT follows the DELETE of its old key; a fuzzy snapshot replayed
     * with the log from its start still passes through states where two keys claim one slot (a key copied
     * before its delete, its slot's next key put again by the log). The rule: the latest claim of a slot
     * wins, and the keys it overrides are dropped at the end ({@link #settle}), so that no two keys share
     * a slot and deleting one never frees a slot another key still holds. (A slot is reused at once after
     * a delete, before its DELETE is durable: a power loss may leave a recovered key over bytes a lost put
     * wrote, which no record here reveals; the payload's CRC32C check makes its load a miss.) Overridden claims
     * are kept in a map, and the index is walked once at the end only when there are any.
     */
    private static final class SlotClaims {
        private final CompactIndex index;
        private final SaltTable salts;
        private final boolean[] used;
        /** Slots claimed more than once: the hash of the latest claim, or null once that key let go. */
        private final Map<Integer, long[]> contested = new HashMap<>();

        SlotClaims(CompactIndex index, SaltTable salts, boolean[] used) {
            this.index = index;
            this.salts = salts;
            this.used = used;
        }

        void put(long h1, long h2, int slot, int size, int crc, int saltId) {
            boolean taken = used[slot];
            long replaced = index.put(h1, h2, slot, size, crc, saltId);
            if (replaced >= 0) { // stored again: the older version's slot is let go
                salts.removed((int) (replaced >>> 32));
                letGo((int) replaced, h1, h2);
            }
            salts.added(saltId);
            if ((taken && (replaced < 0 || (int) replaced != slot)) || isContested(slot)) {
                contested.put(slot, new long[] {h1, h2});
            }
            used[slot] = true;
        }

        void delete(long h1, long h2, int slot) {
            int salt = index.saltIdOf(h1, h2);
            if (index.removeIfAt(h1, h2, slot) >= 0) {
                salts.removed(salt);
                letGo(slot, h1, h2);
            }
        }

        /** Empty in every store's recovery: no boxing, no lookup per record then. */
        private boolean isContested(int slot) {
            return !contested.isEmpty() && contested.containsKey(slot);
        }

        /** Key (h1, h2) no longer holds {@code slot}: free, unless a later claim holds it. */
        private void letGo(int slot, long h1, long h2) {
            if (!isContested(slot)) {
                used[slot] = false;
                return;
            }
            long[] owner = contested.get(slot);
            if (owner != null && owner[0] == h1 && owner[1] == h2) {
                contested.put(slot, null); // the slot's keys that lost it are dropped by settle()
                used[slot] = false;
            }
        }

        /** Drops every key that still points at a slot a later claim took. */
        void settle() {
            if (contested.isEmpty()) {
                return;
            }
            List<long[]> losers = new ArrayList<>();
            int step = 16_384;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate((long) step * CompactIndex.ENTRY_BYTES, 8);
                for (long pos = 0; pos < index.capacity(); pos += step) {
                    int n = index.copyLive(pos, step, out, s -> 0);
                    for (int i = 0; i < n; i++) {
                        long at = (long) i * CompactIndex.ENTRY_BYTES;
                        long h1 = out.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
                        long h2 = out.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 8);
                        int slot = out.get(ValueLayout.JAVA_INT_UNALIGNED, at + 16);
                        if (contested.containsKey(slot)) {
                            long[] owner = contested.get(slot);
                            if (owner == null || owner[0] != h1 || owner[1] != h2) {
                                losers.add(new long[] {h1, h2, slot});
                            }
                        }
                    }
                }
            }
            for (long[] l : losers) {
                int salt = index.saltIdOf(l[0], l[1]);
                if (index.removeIfAt(l[0], l[1], (int) l[2]) >= 0) {
                    salts.removed(salt);
                }
            }
        }
    }

    /**
     * What was rebuilt.
     *
     * @param snapshot the snapshot applied, or null (none was valid, or there was none)
     * @param notes the snapshots passed over, and why
     * @param log where the log replay stopped, and why
     * @param nextSlot the applied snapshot's next slot (0 without one)
     * @param used per slot: an entry holds it
     * @param groups per slot: the allocator group of its entry
     * @param snapshotMillis how long loading the snapshot took
     * @param logMillis how long replaying the log took
     */
    public record Outcome(Snapshots.Header snapshot, List<String> notes, LogReader.Replay log, long nextSlot, boolean[] used,
            char[] groups, long puts, long deletes, long saltRecords, long snapshotMillis, long logMillis,
            LogReader.Beyond beyond) {
        /** Whether the log goes on past where the replay stopped ({@link LogReader#probe}): damaged, not torn. */
        public boolean logDamaged() {
            return beyond != null;
        }

        public long records() {
            return puts + deletes + saltRecords;
        }

        /** The highest slot an entry holds, or -1. */
        int highestUsed() {
            for (int s = used.length - 1; s >= 0; s--) {
                if (used[s]) {
                    return s;
                }
            }
            return -1;
        }

        public long startLsn() {
            return snapshot == null ? 0 : snapshot.startLsn();
        }
    }

    /**
     * Loads into {@code index} and {@code salts} (both empty) the newest snapshot of {@code headers}
     * (newest first, from {@link Snapshots#headers}) whose body checks out, then the log after it. When
     * there are snapshots and none checks out, the log is not replayed (the outcome has no snapshot).
     */
    public static Outcome run(BlockDevice device, V2Layout layout, int maxSlots, List<Snapshots.Header> headers,
            CompactIndex index, SaltTable salts) throws IOException {
        index.beginReplay();
        try {
            return replay(device, layout, maxSlots, headers, index, salts);
        } finally {
            index.endReplay();
        }
    }

    private static Outcome replay(BlockDevice device, V2Layout layout, int maxSlots, List<Snapshots.Header> headers,
            CompactIndex index, SaltTable salts) throws IOException {
        boolean[] used = new boolean[maxSlots];
        char[] groups = new char[maxSlots];
        SlotClaims claims = new SlotClaims(index, salts, used);
        List<String> notes = new ArrayList<>();
        Snapshots.Header applied = null;
        long nextSlot = 0;
        long t0 = System.nanoTime();
        for (Snapshots.Header h : headers) {
            boolean ok = Snapshots.load(device, layout, h, new Snapshots.Visitor() {
                @Override
                public void salt(int id, String salt) {
                    salts.define(id, salt);
                }

                @Override
                public void entry(long h1, long h2, int slot, int size, int crc, int group, int saltId) {
                    if (slot >= 0 && slot < maxSlots) {
                        claims.put(h1, h2, slot, size, crc, saltId);
                        groups[slot] = (char) group;
                    }
                }
            });
            if (ok) {
                applied = h;
                nextSlot = Math.min(maxSlots, h.nextSlot());
                break;
            }
            notes.add("snapshot seq " + h.seq() + " in area " + h.area() + " fails its CRC32C or holds what the store"
                    + " cannot have written");
        }
        long t1 = System.nanoTime();
        long[] counts = new long[3]; // puts, deletes, salts
        if (applied == null && !headers.isEmpty()) { // the log before them may be gone: the store is refused
            return new Outcome(null, notes, new LogReader.Replay(0, 0, "not replayed: no snapshot could be loaded",
                    false), 0, used, groups, 0, 0, 0, (t1 - t0) / 1_000_000, 0, null);
        }
        LogReader.Replay log = LogReader.scan(device, layout, applied == null ? 0 : applied.startLsn(), new LogFormat.Visitor() {
            @Override
            public void put(long h1, long h2, int slot, int size, int crc, int group, int saltId, String key) {
                counts[0]++;
                if (slot < 0 || slot >= maxSlots) {
                    return;
                }
                claims.put(h1, h2, slot, size, crc, saltId);
                groups[slot] = (char) group;
            }

            @Override
            public void delete(long h1, long h2, int slot) {
                counts[1]++;
                claims.delete(h1, h2, slot);
            }

            @Override
            public void salt(int id, String salt) {
                counts[2]++;
                salts.define(id, salt);
            }
        });
        claims.settle();
        // A clean close ends the log with a marker; any other end may hide damage with later commits past it.
        LogReader.Beyond beyond = log.closed() ? null : LogReader.probe(device, layout, log.endLsn());
        long t2 = System.nanoTime();
        return new Outcome(applied, notes, log, nextSlot, used, groups, counts[0], counts[1], counts[2],
                (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000, beyond);
    }
}
