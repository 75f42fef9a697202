package io.fdpblock.controller;

/**
 * Makes policies of one name: what {@link StorePolicyFactory}, {@link PrefetchPolicyFactory} and
 * {@link EvictionPolicyFactory} (the service types a jar provides) have in common, so that one
 * {@link PolicyRegistry} serves all three.
 *
 * @param <P> the kind of policy made
 */
public interface PolicyFactory<P> {
    /** The name the policy is chosen by, e.g. {@code "default"}. */
    String name();

    /** A new policy (never null). */
    P create();
}
