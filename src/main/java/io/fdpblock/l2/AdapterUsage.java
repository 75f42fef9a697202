package io.fdpblock.l2;

import java.util.Map;

/**
 * How much an adapter holds.
 *
 * @param totalCapacityBytes 0 when unknown
 * @param bytesByCacheSalt only salts with a positive usage ("" = no salt)
 */
public record AdapterUsage(long totalBytesUsed, long totalCapacityBytes, Map<String, Long> bytesByCacheSalt) {
    public AdapterUsage {
        bytesByCacheSalt = Map.copyOf(bytesByCacheSalt);
    }

    /** used / capacity, or -1 when the capacity is unknown. */
    public double usageFraction() {
        return totalCapacityBytes == 0 ? -1 : (double) totalBytesUsed / totalCapacityBytes;
    }
}
