package io.fdpblock.controller;

import java.util.Collections;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/** A name -&gt; factory table shared by the store and prefetch policy registries. */
final class PolicyRegistry<P> {
    private final String kind;
    private final TreeMap<String, Supplier<? extends P>> factories = new TreeMap<>();

    PolicyRegistry(String kind) {
        this.kind = kind;
    }

    synchronized void register(String name, Supplier<? extends P> factory, String origin) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException(kind + " policy name must be non-blank (from " + origin + ")");
        }
        if (factory == null) {
            throw new IllegalArgumentException(kind + " policy '" + name + "' has no factory");
        }
        if (factories.containsKey(name)) {
            throw new IllegalStateException(kind + " policy '" + name + "' is already registered; registered: "
                    + factories.keySet() + " (duplicate from " + origin + ")");
        }
        factories.put(name, factory);
    }

    synchronized P create(String name) {
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

    synchronized Set<String> names() {
        return Collections.unmodifiableSet(new java.util.TreeSet<>(factories.keySet()));
    }
}
