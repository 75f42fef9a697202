package io.fdpblock.controller;

import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The store policies by name: every {@link StorePolicyFactory} found by {@link ServiceLoader}
 * ({@code default}, {@code skip_l1} built in), plus those added with {@link #register}.
 */
public final class StorePolicies {
    private StorePolicies() {}

    /** The name used when none is given. */
    public static final String DEFAULT = "default";

    private static final class Holder {
        static final PolicyRegistry<StorePolicy> REGISTRY = load();

        private static PolicyRegistry<StorePolicy> load() {
            PolicyRegistry<StorePolicy> r = new PolicyRegistry<>("store");
            for (StorePolicyFactory f : ServiceLoader.load(StorePolicyFactory.class, StorePolicies.class.getClassLoader())) {
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
    public static void register(String name, Supplier<? extends StorePolicy> factory) {
        Holder.REGISTRY.register(name, factory, "register(\"" + name + "\")");
    }

    /**
     * A new policy of that name.
     *
     * @throws IllegalArgumentException for an unknown name, listing the known ones
     */
    public static StorePolicy create(String name) {
        return Holder.REGISTRY.create(name);
    }

    /** The registered names, sorted. */
    public static Set<String> names() {
        return Holder.REGISTRY.names();
    }
}
