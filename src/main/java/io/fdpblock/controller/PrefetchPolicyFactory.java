package io.fdpblock.controller;

/**
 * Makes prefetch policies of one name. Implementations register themselves in
 * {@code META-INF/services/io.fdpblock.controller.PrefetchPolicyFactory};
 * {@code Policies.PREFETCH.register} ({@link PolicyRegistry#register}) adds one at run time.
 */
public interface PrefetchPolicyFactory extends PolicyFactory<PrefetchPolicy> {}
