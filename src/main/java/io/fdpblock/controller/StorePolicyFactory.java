package io.fdpblock.controller;

/**
 * Makes store policies of one name. Implementations register themselves in
 * {@code META-INF/services/io.fdpblock.controller.StorePolicyFactory} (a new jar brings its own file),
 * so adding a policy never edits an existing file; {@code Policies.STORE.register}
 * ({@link PolicyRegistry#register}) adds one at run time.
 */
public interface StorePolicyFactory extends PolicyFactory<StorePolicy> {}
