package io.fdpblock.controller;

/**
 * Makes prefetch policies of one name. Implementations register themselves in
 * {@code META-INF/services/io.fdpblock.controller.PrefetchPolicyFactory}; {@link PrefetchPolicies#register}
 * adds one at run time.
 */
public interface PrefetchPolicyFactory {
    /** The name the policy is chosen by, e.g. {@code "default"}. */
    String name();

    PrefetchPolicy create();
}
