/**
 * The L1 cache: {@link io.fdpblock.cache.L1Manager}, a pool of aligned off-heap chunks holding one object
 * per key with its write lock, read locks and temporary flag, and {@link io.fdpblock.cache.KvLayout},
 * what one object of a request looks like. It knows the L2 contract's types ({@code io.fdpblock.l2}) and
 * nothing of the controllers that fill and drain it ({@code io.fdpblock.controller}).
 */
package io.fdpblock.cache;
