package io.fdpblock.controller;

/**
 * Makes prefetch policies of one name. Implementations register themselves in
 * {@code META-INF/services/io.fdpblock.controller.PrefetchPolicyFactory}; {@link Policies#PREFETCH}
 * {@code .register} adds one at run time.
 */
public interface PrefetchPolicyFactory extends PolicyFactory<PrefetchPolicy> {}
