package io.fdpblock.nvme;

/**
 * An FDP placement identifier (NVMe DSPEC of a write with DTYPE 2): 0..65535, where with RGIF = n the
 * top n bits name the reclaim group and the rest the placement handle. {@link #NONE} means "no
 * directive": the device then writes to the namespace's default handle. Id 0 is a real id (reclaim
 * group 0, handle 0) and is sent as such when asked for; only {@link #NONE} sends nothing.
 *
 * <p>The one place for the rule: every layer that takes a placement id (batches, NVMe encoding, the
 * store's configuration and puts) checks it here. Instances are cached: {@code of} allocates nothing.
 */
public final class PlacementId {
    /** The largest id: DSPEC is 16 bits. */
    public static final int MAX = 0xFFFF;
    /** The raw value of {@link #NONE}. */
    public static final int NONE_VALUE = -1;
    public static final PlacementId NONE = new PlacementId(NONE_VALUE);
    private static final PlacementId[] CACHE = new PlacementId[MAX + 1];

    static {
        for (int i = 0; i <= MAX; i++) {
            CACHE[i] = new PlacementId(i);
        }
    }

    private final int value;

    private PlacementId(int value) {
        this.value = value;
    }

    /**
     * @throws IllegalArgumentException naming the value and the range when {@code id} is outside 0..65535
     */
    public static PlacementId of(int id) {
        return CACHE[check("placement id", id)];
    }

    /** {@link #NONE} for {@link #NONE_VALUE}, else {@link #of}. */
    public static PlacementId ofRaw(int raw) {
        return raw == NONE_VALUE ? NONE : of(raw);
    }

    /**
     * @param what names the value in the message (e.g. the configuration key)
     * @return {@code id} when it is in 0..65535
     */
    public static int check(String what, int id) {
        if (id < 0 || id > MAX) {
            throw new IllegalArgumentException(what + " " + id + " is outside 0.." + MAX
                    + " (FDP placement identifiers are 16 bits; take them from the device's RUH Status)");
        }
        return id;
    }

    /** The raw id, or {@link #NONE_VALUE}. */
    public int value() {
        return value;
    }

    public boolean isNone() {
        return value == NONE_VALUE;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PlacementId p && p.value == value;
    }

    @Override
    public int hashCode() {
        return value;
    }

    @Override
    public String toString() {
        return isNone() ? "none" : Integer.toString(value);
    }
}
