package io.fdpblock.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The cache salts of the store's keys, each with a small id and the number of keys it has: usage by
 * salt without keeping the keys (fdpblock_v2 persists the ids in its log and snapshots). Not
 * thread-safe: the core calls it under its lock.
 */
public final class SaltTable {
    /**
     * Salt ids at most, id 0 (no salt) included: tenants are few, and the snapshot areas are sized for
     * this many. A put of a key whose salt would need one more is refused ({@link PutOutcome#TOO_MANY_SALTS}).
     */
    public static final int MAX_IDS = 4_096;

    private final Map<String, Integer> ids = new HashMap<>();
    /** New salts of puts accepted but not yet committed, with how many: each will take an id. */
    private final Map<String, Integer> pending = new HashMap<>();
    private final List<String> salts = new ArrayList<>();
    private long[] keys = new long[16];

    /** A table that knows only id 0, the empty salt. */
    public SaltTable() {
        idOf(""); // id 0: no salt
    }

    /**
     * The salt of an encoded key ({@code <model>@0x<rank>@<hash>[@<salt>][/g<group>]}); "" for none or a
     * key of another form.
     */
    public static String saltOf(String key) {
        int a = key.indexOf('@');
        int b = a < 0 ? -1 : key.indexOf('@', a + 1);
        int c = b < 0 ? -1 : key.indexOf('@', b + 1);
        if (c < 0) {
            return "";
        }
        int end = key.length();
        int g = key.lastIndexOf("/g");
        if (g > c) {
            end = g;
        }
        return key.substring(c + 1, end);
    }

    /** @return the id of {@code salt}, given one now when it is new; -1 when every id is taken */
    public int idOf(String salt) {
        Integer id = ids.get(salt);
        if (id != null) {
            return id;
        }
        if (salts.size() >= MAX_IDS) {
            return -1;
        }
        return define(salts.size(), salt);
    }

    /**
     * Whether a put of a key of {@code salt} can be accepted: its salt has an id, or one is left for it
     * once the new salts of the puts already accepted have theirs.
     */
    boolean canTake(String salt) {
        return ids.containsKey(salt) || pending.containsKey(salt) || salts.size() + pending.size() < MAX_IDS;
    }

    /** A put of {@code salt} is accepted ({@link #canTake} was true): a new salt's id is held for it. */
    void reserve(String salt) {
        if (!ids.containsKey(salt)) {
            pending.merge(salt, 1, Integer::sum);
        }
    }

    /** That put committed (after {@link #idOf}) or was rolled back. */
    void release(String salt) {
        pending.computeIfPresent(salt, (k, n) -> n == 1 ? null : n - 1);
    }

    /** Whether {@code salt} has an id already. */
    boolean known(String salt) {
        return ids.containsKey(salt);
    }

    /** Records a persisted id (recovery). */
    public int define(int id, String salt) {
        while (salts.size() <= id) {
            salts.add(null);
        }
        salts.set(id, salt);
        ids.put(salt, id);
        if (keys.length <= id) {
            keys = Arrays.copyOf(keys, Math.max(id + 1, keys.length * 2));
        }
        return id;
    }

    /** The salt of {@code id}, or null when it is not defined. */
    public String salt(int id) {
        return id < salts.size() ? salts.get(id) : null;
    }

    /**
     * Counts a key of salt {@code id}, defined or not yet: a snapshot may hold a key put while it was
     * copied, whose salt is defined only by the log replayed after it.
     */
    public void added(int id) {
        if (id < 0) {
            return;
        }
        if (keys.length <= id) {
            keys = Arrays.copyOf(keys, Math.max(id + 1, keys.length * 2));
        }
        keys[id]++;
    }

    /** Uncounts a key of salt {@code id}. */
    public void removed(int id) {
        if (id >= 0 && id < keys.length && keys[id] > 0) {
            keys[id]--;
        }
    }

    /** Keys per salt, for the salts that have any. */
    Map<String, Long> keysBySalt() {
        Map<String, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < salts.size(); i++) {
            if (salts.get(i) != null && keys[i] > 0) {
                out.put(salts.get(i), keys[i]);
            }
        }
        return out;
    }

    /** Every defined id and its salt, in id order (for snapshots). */
    public Map<Integer, String> definitions() {
        Map<Integer, String> out = new LinkedHashMap<>();
        for (int i = 0; i < salts.size(); i++) {
            if (salts.get(i) != null) {
                out.put(i, salts.get(i));
            }
        }
        return out;
    }
}
