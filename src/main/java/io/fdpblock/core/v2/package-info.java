/**
 * This project's scalable format ({@code fdpblock_v2}), one {@code StoreFormat} of the store: two
 * superblocks ({@code V2Layout}), a ring log of chunked commit records ({@code LogFormat}, written by
 * {@code LogWriter}, read by {@code LogReader}) and two snapshot areas ({@code Snapshots}) in front of a
 * data area aligned to a reclaim unit, with an off-heap index of 128-bit key hashes
 * ({@code CompactIndex}). Recovery ({@code V2Recovery}) loads the newest valid snapshot and replays the log after it. Not exported: the
 * engine finds it through {@link java.util.ServiceLoader}; {@code V2Migration} is its part in the tools'
 * migration, and the inspector in {@code core.tools} reads it.
 */
package io.fdpblock.core.v2;
