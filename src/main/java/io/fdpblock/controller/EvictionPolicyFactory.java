package io.fdpblock.controller;

/**
 * Makes eviction policies of one name. Implementations register themselves in
 * {@code META-INF/services/io.fdpblock.controller.EvictionPolicyFactory} (and {@code provides} in a
 * module); {@code Policies.EVICTION.register} ({@link PolicyRegistry#register}) adds one at run
 * time.
 */
public interface EvictionPolicyFactory extends PolicyFactory<EvictionPolicy> {}
