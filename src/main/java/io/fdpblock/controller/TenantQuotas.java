package io.fdpblock.controller;

import io.fdpblock.l2.ObjectKey;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The L2 byte quota of each tenant (cache salt, {@code ""} = keys without a salt), for the
 * {@code tenant_quota} eviction policy. An allowlist, as LMCache's quota manager is: a salt without a
 * quota (or with a quota of 0) may store, but its keys are evicted at the next round, before any other
 * tenant's; a tenant above its quota loses its own least recently used keys only. Quotas may be set and
 * removed at any time; a change applies from the next eviction round. Thread-safe.
 */
public final class TenantQuotas {
    private final ConcurrentHashMap<String, Long> limits = new ConcurrentHashMap<>();

    /**
     * Sets (or changes) the quota of {@code cacheSalt}.
     *
     * @throws IllegalArgumentException for a negative quota, or a salt no key can have
     */
    public void set(String cacheSalt, long limitBytes) {
        checkSalt(cacheSalt);
        if (limitBytes < 0) {
            throw new IllegalArgumentException("quota of cache salt '" + cacheSalt + "' is " + limitBytes
                    + " bytes: it must be >= 0 (0 has the salt's keys evicted, as no quota does)");
        }
        limits.put(cacheSalt, limitBytes);
    }

    /** Removes the quota of {@code cacheSalt}: its keys are evicted at the next round. @return whether it had one */
    public boolean remove(String cacheSalt) {
        return cacheSalt != null && limits.remove(cacheSalt) != null;
    }

    /** The quota of {@code cacheSalt} in bytes; 0 when it has none (its keys are evicted). */
    public long limitOf(String cacheSalt) {
        Long l = cacheSalt == null ? null : limits.get(cacheSalt);
        return l == null ? 0 : l;
    }

    /** Whether {@code cacheSalt} has a quota (possibly 0). */
    public boolean has(String cacheSalt) {
        return cacheSalt != null && limits.containsKey(cacheSalt);
    }

    /** Every quota now, by salt in order. */
    public Map<String, Long> snapshot() {
        return Collections.unmodifiableMap(new TreeMap<>(limits));
    }

    /** The rules of {@link ObjectKey}'s salt: a quota for a salt no key can carry would never apply. */
    private static void checkSalt(String cacheSalt) {
        if (cacheSalt == null) {
            throw new IllegalArgumentException("cache salt of a quota is null (use \"\" for keys without a salt)");
        }
        try {
            ObjectKey.of("quota", 0, new byte[0]).withCacheSalt(cacheSalt);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("no quota for that salt: " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "TenantQuotas" + snapshot();
    }
}
