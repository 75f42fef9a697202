package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * fdpblock_v2's recovery rules, on what a device holds: the newest snapshot whose body checks out (an
 * older one when it does not), then every record of the log after that snapshot's start, up to the
 * first chunk that is missing, torn or stale. One place for them: the store's open ({@link V2Meta})
 * and the read-only inspector ({@link Inspector}) both rebuild an index with it.
 */
final class V2Recovery {
    private V2Recovery() {}

    /**
     * What was rebuilt.
     *
     * @param snapshot the snapshot applied, or null (none was valid, or there was none)
     * @param notes the snapshots passed over, and why
     * @param log where the log replay stopped, and why
     * @param nextSlot the applied snapshot's next slot (0 without one)
     * @param used per slot: an entry holds it
     * @param groups per slot: the allocator group of its entry
     */
    record Outcome(Snapshots.Header snapshot, List<String> notes, MetaLog.Replay log, long nextSlot, boolean[] used,
            char[] groups, long puts, long deletes, long saltRecords) {
        long records() {
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

        long startLsn() {
            return snapshot == null ? 0 : snapshot.startLsn();
        }
    }

    /**
     * Loads into {@code index} and {@code salts} (both empty) the newest snapshot of {@code headers}
     * (newest first, from {@link Snapshots#headers}) whose body checks out, then the log after it. When
     * there are snapshots and none checks out, the log is not replayed (the outcome has no snapshot).
     */
    static Outcome run(BlockDevice device, V2Layout layout, int maxSlots, List<Snapshots.Header> headers,
            CompactIndex index, SaltTable salts) throws IOException {
        boolean[] used = new boolean[maxSlots];
        char[] groups = new char[maxSlots];
        List<String> notes = new ArrayList<>();
        Snapshots.Header applied = null;
        long nextSlot = 0;
        for (Snapshots.Header h : headers) {
            boolean ok = Snapshots.load(device, layout, h, new Snapshots.Visitor() {
                @Override
                public void salt(int id, String salt) {
                    salts.define(id, salt);
                }

                @Override
                public void entry(long h1, long h2, int slot, int size, int crc, int group, int saltId) {
                    if (slot >= 0 && slot < maxSlots) {
                        index.put(h1, h2, slot, size, crc, saltId);
                        salts.added(saltId);
                        used[slot] = true;
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
        long[] counts = new long[3]; // puts, deletes, salts
        if (applied == null && !headers.isEmpty()) { // the log before them may be gone: the store is refused
            return new Outcome(null, notes, new MetaLog.Replay(0, 0, "not replayed: no snapshot could be loaded",
                    false), 0, used, groups, 0, 0, 0);
        }
        MetaLog.Replay log = MetaLog.scan(device, layout, applied == null ? 0 : applied.startLsn(), new MetaLog.Visitor() {
            @Override
            public void put(long h1, long h2, int slot, int size, int crc, int group, int saltId, String key) {
                counts[0]++;
                if (slot < 0 || slot >= maxSlots) {
                    return;
                }
                int oldSlot = index.slotOf(h1, h2);
                if (oldSlot >= 0) { // stored again: the older version's slot is free
                    salts.removed(index.saltIdOf(h1, h2));
                    used[oldSlot] = false;
                }
                index.put(h1, h2, slot, size, crc, saltId);
                salts.added(saltId);
                used[slot] = true;
                groups[slot] = (char) group;
            }

            @Override
            public void delete(long h1, long h2, int slot) {
                counts[1]++;
                int salt = index.saltIdOf(h1, h2);
                if (index.removeIfAt(h1, h2, slot) >= 0) {
                    salts.removed(salt);
                    used[slot] = false;
                }
            }

            @Override
            public void salt(int id, String salt) {
                counts[2]++;
                salts.define(id, salt);
            }
        });
        return new Outcome(applied, notes, log, nextSlot, used, groups, counts[0], counts[1], counts[2]);
    }
}
