package io.fdpblock.core;

import java.util.HashMap;
import java.util.HashSet;

/**
 * What the store has in flight, beside its index: keys whose write is in flight (invisible to
 * lookups until committed) and slots being read by loads (a slot deleted during a load is released
 * only after the last one). Both are bounded by the I/O in flight, not by the number of keys. Not
 * thread-safe: the core calls it under its lock.
 */
final class InFlight {
    /** A key whose write is in flight. */
    static final class Write {
        final int slot;
        boolean canceled;

        Write(int slot) {
            this.slot = slot;
        }
    }

    private final HashMap<String, Write> writes = new HashMap<>();
    private final HashMap<Integer, int[]> readers = new HashMap<>();
    /** Slots deleted while read. */
    private final HashSet<Integer> freedWhileRead = new HashSet<>();

    boolean isWriting(String key) {
        return writes.containsKey(key);
    }

    Write startWrite(String key, int slot) {
        Write w = new Write(slot);
        writes.put(key, w);
        return w;
    }

    /** Ends the write {@code w} of {@code key} (a cancel may have removed it already). */
    void endWrite(String key, Write w) {
        if (writes.get(key) == w) {
            writes.remove(key);
        }
    }

    /** @return the cancelled write of {@code key}, or null when none is in flight */
    Write cancelWrite(String key) {
        Write w = writes.remove(key);
        if (w != null) {
            w.canceled = true;
        }
        return w;
    }

    int writes() {
        return writes.size();
    }

    void startRead(int slot) {
        readers.computeIfAbsent(slot, s -> new int[1])[0]++;
    }

    /** Whether a load is reading {@code slot}. */
    boolean isRead(int slot) {
        return readers.containsKey(slot);
    }

    /** @return whether {@code slot} was freed while read and this was its last load (release it now) */
    boolean endRead(int slot) {
        int[] n = readers.get(slot);
        if (--n[0] > 0) {
            return false;
        }
        readers.remove(slot);
        return freedWhileRead.remove(slot);
    }

    /**
     * A deleted key's slot.
     *
     * @return true when it may be released now; false when loads still read it (released by their end)
     */
    boolean freeSlot(int slot) {
        if (readers.containsKey(slot)) {
            freedWhileRead.add(slot);
            return false;
        }
        return true;
    }
}
