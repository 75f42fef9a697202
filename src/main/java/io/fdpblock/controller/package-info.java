/**
 * The control loops between the L1 cache ({@code io.fdpblock.cache}) and the L2 adapters
 * ({@code io.fdpblock.l2}): {@link io.fdpblock.controller.StoreController} (L1 to L2),
 * {@link io.fdpblock.controller.PrefetchController} (L2 to L1) and
 * {@link io.fdpblock.controller.EvictionController} (L2 usage, per tenant against
 * {@link io.fdpblock.controller.TenantQuotas}, sparing what a {@link io.fdpblock.controller.RetentionLedger}
 * shields), each on one background thread, with their policies chosen by name from
 * {@link io.fdpblock.controller.Policies}.
 * {@link io.fdpblock.controller.StorageManager} assembles L1, the adapters and the controllers into the
 * API a serving engine calls (docs/contract.md sections 3-5 and 7).
 */
package io.fdpblock.controller;
