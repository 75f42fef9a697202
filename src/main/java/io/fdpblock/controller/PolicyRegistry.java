package io.fdpblock.controller;

import java.util.Collections;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * Policies of one kind by name: the factories of one service type, loaded by {@link ServiceLoader} on
 * first use, plus those added with {@link #register}. The registries are in {@link Policies}.
 *
 * @param <P> the kind of policy
 */
public final class PolicyRegistry<P> {
    private final String kind;
    private final Class<? extends PolicyFactory<? extends P>> service;
    private final TreeMap<String, Supplier<? extends P>> factories = new TreeMap<>();
    private boolean loaded;

    PolicyRegistry(String kind, Class<? extends PolicyFactory<? extends P>> service) {
        this.kind = kind;
        this.service = service;
    }

    /**
     * Adds a policy.
     *
     * @throws IllegalArgumentException for a blank name or a null factory
     * @throws IllegalStateException when the name is taken (naming the registered ones)
     */
    public synchronized void register(String name, Supplier<? extends P> factory) {
        loadOnce();
        add(factories, name, factory, "register(\"" + name + "\")");
    }

    /**
     * A new policy of that name.
     *
     * @throws IllegalArgumentException for an unknown name, listing the known ones
     */
    public synchronized P create(String name) {
        loadOnce();
        Supplier<? extends P> f = factories.get(name);
        if (f == null) {
            throw new IllegalArgumentException("unknown " + kind + " policy '" + name + "'; known " + kind
                    + " policies: " + factories.keySet());
        }
        P p = f.get();
        if (p == null) {
            throw new IllegalStateException(kind + " policy '" + name + "' factory returned null");
        }
        return p;
    }

    /** The registered names, sorted. */
    public synchronized Set<String> names() {
        loadOnce();
        return Collections.unmodifiableSortedSet(new TreeSet<>(factories.keySet()));
    }

    // On first use, not when Policies is initialised: the three registries are constants of one class,
    // and a program that names only a store policy should not load the eviction providers.
    private void loadOnce() {
        if (loaded) {
            return;
        }
        // All or nothing: a provider that fails fails this call, and the next one tries again.
        TreeMap<String, Supplier<? extends P>> found = new TreeMap<>();
        for (PolicyFactory<? extends P> f : ServiceLoader.load(service, PolicyRegistry.class.getClassLoader())) {
            add(found, f.name(), f::create, f.getClass().getName());
        }
        factories.putAll(found);
        loaded = true;
    }

    private void add(TreeMap<String, Supplier<? extends P>> to, String name, Supplier<? extends P> factory,
            String origin) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException(kind + " policy name must be non-blank (from " + origin + ")");
        }
        if (factory == null) {
            throw new IllegalArgumentException(kind + " policy '" + name + "' has no factory");
        }
        if (to.containsKey(name)) {
            throw new IllegalStateException(kind + " policy '" + name + "' is already registered; registered: "
                    + to.keySet() + " (duplicate from " + origin + ")");
        }
        to.put(name, factory);
    }
}
