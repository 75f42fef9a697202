package io.fdpblock.controller;

import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The prefetch policies by name: every {@link PrefetchPolicyFactory} found by {@link ServiceLoader}
 * ({@code default} built in), plus those added with {@link #register}.
 */
public final class PrefetchPolicies {
    private PrefetchPolicies() {}

    /** The name used when none is given. */
    public static final String DEFAULT = "default";

    private static final class Holder {
        static final PolicyRegistry<PrefetchPolicy> REGISTRY = load();

        private static PolicyRegistry<PrefetchPolicy> load() {
            PolicyRegistry<PrefetchPolicy> r = new PolicyRegistry<>("prefetch");
            for (PrefetchPolicyFactory f : ServiceLoader.load(PrefetchPolicyFactory.class, PrefetchPolicies.class.getClassLoader())) {
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
    public static void register(String name, Supplier<? extends PrefetchPolicy> factory) {
        Holder.REGISTRY.register(name, factory, "register(\"" + name + "\")");
    }

    /**
     * A new policy of that name.
     *
     * @throws IllegalArgumentException for an unknown name, listing the known ones
     */
    public static PrefetchPolicy create(String name) {
        return Holder.REGISTRY.create(name);
    }

    /** The registered names, sorted. */
    public static Set<String> names() {
        return Holder.REGISTRY.names();
    }
}
