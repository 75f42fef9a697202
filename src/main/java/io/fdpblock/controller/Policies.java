package io.fdpblock.controller;

/**
 * The policy registries, one per kind, and the names of the built-in policies. Each registry holds every
 * factory of its service type found by {@link java.util.ServiceLoader}, plus those added with
 * {@link PolicyRegistry#register}.
 */
public final class Policies {
    private Policies() {}

    /** The store and prefetch policy used when none is named. */
    public static final String DEFAULT = "default";
    /** The store policy that deletes from L1 what it stored to L2. */
    public static final String SKIP_L1 = "skip_l1";
    /** Per-key least-recently-used eviction. */
    public static final String LRU = "lru";
    /** Eviction of whole reclaim-unit groups at a time (FDP). */
    public static final String RECLAIM_UNIT = "reclaim_unit";
    /** Per-key least-recently-used eviction per cache salt, against the tenants' quotas. */
    public static final String TENANT_QUOTA = "tenant_quota";

    /** Store policies ({@code default}, {@code skip_l1} built in). */
    public static final PolicyRegistry<StorePolicy> STORE = new PolicyRegistry<>("store", StorePolicyFactory.class);
    /** Prefetch policies ({@code default} built in). */
    public static final PolicyRegistry<PrefetchPolicy> PREFETCH =
            new PolicyRegistry<>("prefetch", PrefetchPolicyFactory.class);
    /** Eviction policies ({@code lru}, {@code reclaim_unit}, {@code tenant_quota} built in). */
    public static final PolicyRegistry<EvictionPolicy> EVICTION =
            new PolicyRegistry<>("eviction", EvictionPolicyFactory.class);
}
