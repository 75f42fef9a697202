package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;

import java.util.BitSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The parts of one open store that its put, load, delete, eviction, status and close paths share, built
 * once by {@link StoreOpening}. Each mutable part owns its own state (the gate its flags, the allocator
 * its slots, the in-flight table its writes and reads, ...), so that a path is given these parts, not
 * the store, and can be read without the store's other paths.
 *
 * @param config the store's configuration
 * @param device the store's device
 * @param layout where the slots lie
 * @param lock the index lock: guards the index, allocator, salts, in-flight table, gate and
 *        {@code unverifiedSlots}; never held across I/O
 * @param gate whether the store takes work and commits writes
 * @param index the committed keys
 * @param inflight the writes and reads in flight
 * @param salts the keys' cache salts
 * @param slots the slot allocator
 * @param ops the operations in flight that close waits for
 * @param releaser frees slots (deallocating them first where the device takes it)
 * @param meta the metadata writer of the store's format
 * @param placement FDP placement ids and per-id write counts
 * @param headers slot header buffers
 * @param quarantine batches abandoned with I/O in the kernel
 * @param counters counters only the status reads
 * @param recovered what the open recovered
 * @param unverifiedSlots {@code verify_payload} "recovery" (else null): the slots whose bytes predate this
 *        open, whose payload a load checks once against its CRC32C (a power loss may have left another
 *        key's or torn bytes under a recovered entry's intact header); a put that takes one, or a load
 *        that verified it, clears its bit. Guarded by {@code lock}
 */
record StoreParts(RawBlockCoreConfig config, BlockDevice device, SlotLayout layout, ReentrantLock lock,
        StoreGate gate, StoreIndex index, InFlight inflight, SaltTable salts, SlotAllocator slots, OpCounter ops,
        SlotReleaser releaser, MetaStore meta, FdpPlacement placement, HeaderBuffers headers,
        Quarantine quarantine, StoreCounters counters, RecoveryResult recovered, BitSet unverifiedSlots) {}
