package io.fdpblock.controller;

/**
 * Makes eviction policies of one name. Implementations register themselves in
 * {@code META-INF/services/io.fdpblock.controller.EvictionPolicyFactory} (and {@code provides} in a
 * module); {@link EvictionPolicies#register} adds one at run time.
 */
public interface EvictionPolicyFactory {
    /** The name the policy is chosen by, e.g. {@code "lru"}. */
    String name();

    EvictionPolicy create();
}
