package io.fdpblock.controller;

import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.ObjectKey;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * {@code tenant_quota}: per-tenant quotas (LMCache's {@code IsolatedLRU} with its quota manager). One
 * least-recently-used order per cache salt; the {@link EvictionController} asks per salt, against the
 * {@link TenantQuotas}: a salt without a quota loses all its keys (first), a salt at or above the high
 * watermark of its quota loses its least recently used keys down to the low watermark of it, and no salt
 * loses keys for another's sake. Locked and retained keys stay, as with {@code lru}.
 */
public final class TenantQuotaEvictionPolicy implements EvictionPolicy {
    private final ConcurrentHashMap<String, LruOrder> bySalt = new ConcurrentHashMap<>();
    private L2Adapter adapter;

    @Override
    public void bind(L2Adapter adapter) {
        if (adapter == null) {
            throw new IllegalArgumentException("tenant_quota eviction needs an adapter");
        }
        this.adapter = adapter;
    }

    @Override
    public void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
        for (int i = 0; i < keys.size(); i++) {
            ObjectKey k = keys.get(i);
            bySalt.computeIfAbsent(k.cacheSalt(), s -> new LruOrder()).stored(k, sizes.get(i));
        }
    }

    @Override
    public void onKeysAccessed(List<ObjectKey> keys) {
        for (ObjectKey k : keys) {
            LruOrder o = bySalt.get(k.cacheSalt());
            if (o != null) {
                o.accessed(k);
            }
        }
    }

    @Override
    public void onKeysDeleted(List<ObjectKey> keys) {
        for (ObjectKey k : keys) {
            LruOrder o = bySalt.get(k.cacheSalt());
            if (o != null) {
                o.deleted(k);
            }
        }
    }

    /**
     * Not for this policy: it evicts per cache salt only, so that one tenant never loses keys for another's
     * sake (LMCache's isolated policy refuses a round without a salt too).
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public EvictionRound evict(long bytes) {
        throw new UnsupportedOperationException("tenant_quota evicts per cache salt (evictCacheSalt), against the"
                + " tenants' quotas; an eviction controller with TenantQuotas asks it so");
    }

    @Override
    public boolean takesKeyFilter() {
        return true;
    }

    @Override
    public boolean perCacheSalt() {
        return true;
    }

    @Override
    public EvictionRound evictCacheSalt(String cacheSalt, long bytes, Predicate<ObjectKey> eligible) {
        LruOrder o = bySalt.get(cacheSalt);
        if (o == null) {
            return EvictionRound.NONE;
        }
        return o.evict(adapter, bytes, () -> adapter.usage().bytesByCacheSalt().getOrDefault(cacheSalt, 0L), eligible);
    }

    @Override
    public Map<String, Object> status() {
        int keys = 0;
        int salts = 0;
        for (LruOrder o : bySalt.values()) {
            int n = o.size();
            keys += n;
            salts += n > 0 ? 1 : 0;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("policy", Policies.TENANT_QUOTA);
        m.put("tracked_keys", keys);
        m.put("tracked_salts", salts);
        return m;
    }

    /** Registered as {@code tenant_quota}. */
    public static final class Factory implements EvictionPolicyFactory {
        @Override
        public String name() {
            return Policies.TENANT_QUOTA;
        }

        @Override
        public EvictionPolicy create() {
            return new TenantQuotaEvictionPolicy();
        }
    }
}
