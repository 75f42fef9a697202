package io.fdpblock.controller;

import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The eviction policies by name: every {@link EvictionPolicyFactory} found by {@link ServiceLoader}
 * ({@code lru} and {@code reclaim_unit} built in), plus those added with {@link #register}.
 */
public final class EvictionPolicies {
    private EvictionPolicies() {}

    /** Per-key least-recently-used: today's behaviour. */
    public static final String LRU = "lru";
    /** Whole reclaim-unit groups at a time (FDP). */
    public static final String RECLAIM_UNIT = "reclaim_unit";

    private static final class Holder {
        static final PolicyRegistry<EvictionPolicy> REGISTRY = load();

        private static PolicyRegistry<EvictionPolicy> load() {
            PolicyRegistry<EvictionPolicy> r = new PolicyRegistry<>("eviction");
            for (EvictionPolicyFactory f : ServiceLoader.load(EvictionPolicyFactory.class,
                    EvictionPolicies.class.getClassLoader())) {
                r.register(f.name(), f::create, f.getClass().getName());
            }
            return r;
        }
    }

    /**
     * Adds a policy.
     *
     * @throws IllegalStateException when the name is taken (naming the registered ones)
     */
    public static void register(String name, Supplier<? extends EvictionPolicy> factory) {
        Holder.REGISTRY.register(name, factory, "register(\"" + name + "\")");
    }

    /**
     * A new policy of that name.
     *
     * @throws IllegalArgumentException for an unknown name, listing the known ones
     */
    public static EvictionPolicy create(String name) {
        return Holder.REGISTRY.create(name);
    }

    /** The registered names, sorted. */
    public static Set<String> names() {
        return Holder.REGISTRY.names();
    }
}
