/**
 * The store: {@link io.fdpblock.core.RawBlockCore} keeps KV-cache chunks in fixed-size slots of a raw
 * device, a file or an NVMe namespace, with two-phase puts, zero-copy loads checked by CRC32C, FDP
 * placement and slot groups for eviction. How its index is made durable is a
 * {@link io.fdpblock.core.StoreFormat} (LMCache's {@code lmcache_v1} checkpoints, or
 * {@code fdpblock_v2}'s log and snapshots), found through {@link java.util.ServiceLoader} by name, so
 * that the engine names no format; the formats are given a narrow
 * {@link io.fdpblock.core.StoreContext}, not the store. The formats live in {@code core.v1} and
 * {@code core.v2}; migration between them and inspection of a device's metadata in
 * {@code io.fdpblock.core.tools}. What the formats share lives here: the slot header
 * ({@link io.fdpblock.core.OnDiskFormat}), and how an opening refuses a device
 * ({@link io.fdpblock.core.LayoutMismatch}, {@link io.fdpblock.core.ForeignData}).
 */
package io.fdpblock.core;
