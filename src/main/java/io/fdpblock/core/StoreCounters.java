package io.fdpblock.core;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The counters of an open store that {@link RawBlockCore#status()} reports and no other state depends
 * on; the put and load paths count, the status reads. Thread-safe.
 */
final class StoreCounters {
    /** Loads whose payload failed its CRC32C (reported as misses). */
    final AtomicLong crcMismatches = new AtomicLong();
    /** Keys whose write failed and was rolled back. */
    final AtomicLong rolledBackKeys = new AtomicLong();
    /** Keys refused because no slot was free and none were coming. */
    final AtomicLong deviceFullRejects = new AtomicLong();
    /** Keys whose put found no free slot and waited for slots freed by deletes (being deallocated, or released). */
    final AtomicLong slotWaits = new AtomicLong();
    /** Keys refused because their payload was empty or larger than a slot holds. */
    final AtomicLong oversizeRejects = new AtomicLong();
}
