package io.fdpblock.core;

import java.io.IOException;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * How a store keeps its index durable, one per {@link StoreFormat} (LMCache's v1 checkpoints, or
 * fdpblock_v2's log and snapshots). The core tells it every committed change, under its lock, and asks it
 * when a change is durable.
 */
public interface MetaStore {
    /**
     * Under the core's lock: a put is committed to the index, unless this refuses it.
     *
     * @return a ticket for {@link #whenDurable}; -1 when a failed commit refuses it (the put must then not
     *         be committed)
     */
    long putCommitted(StoreKey key, int slot, int size, int crc, int group, int saltId, boolean newSalt);

    /** Under the core's lock: a committed key was removed (its slot is released without waiting for this). */
    void deleted(StoreKey key, int slot);

    /**
     * Runs {@code action} once the change of {@code ticket} is durable (at once where durability is
     * only a checkpoint's business); it gets -1 when the metadata could not be written.
     */
    void whenDurable(long ticket, LongConsumer action);

    /** A put is acknowledged only once its change is durable ({@code meta_sync_interval_ms} 0). */
    boolean acknowledgesWhenDurable();

    /** Makes every committed change durable now (a checkpoint, or a log commit and a snapshot). */
    void checkpointNow() throws IOException;

    void startBackground();

    /** Stops the background work without interrupting its I/O. @return false when still running after the bound */
    boolean stopBackground(long timeoutMillis);

    /** At close: makes what changed durable. */
    void closeDurably() throws IOException;

    /**
     * At close, after {@link #closeDurably()} succeeded with no I/O left in flight: records that the
     * metadata ends here, so that the next open need not look for damage past its end.
     */
    default void markClosedCleanly() throws IOException {}

    /** Releases its memory; after the background work stopped. */
    void release();

    /** Under the core's lock: whether something changed since the last durable point. */
    boolean dirty();

    /** The last failure to write metadata (null when the last attempt succeeded). */
    String lastError();

    /**
     * Why puts are refused: a metadata commit failed, so nothing would be acknowledged that could become
     * durable (fdpblock_v2: until the store is reopened; lmcache_v1: until a checkpoint succeeds); null
     * while puts are taken. Cheap: a put asks it under the core's lock.
     */
    StoreReadOnlyException readOnlyCause();

    /** Puts acknowledged that a failed commit left not durable (0 while no commit failed). */
    long acknowledgedNotDurable();

    /**
     * For close: after a failed commit, what was not made durable (how many acknowledged puts, and
     * what a reopen holds of them), in a sentence; null when no commit failed.
     */
    String notDurable();

    /**
     * Counts snapshot boundaries: +1 when a snapshot (fdpblock_v2) or checkpoint (lmcache_v1) starts
     * being written, +1 when it ends, so it is odd while one is written. An operation that saw the same
     * even value before and after it overlapped none (status {@code meta_snapshot_epoch}).
     */
    default long snapshotEpoch() {
        return 0;
    }

    /**
     * The committed keys and their payload sizes: from memory where the index keeps the keys, else from
     * the slot headers (a read per key); takes the store's lock only briefly.
     */
    Map<String, Integer> keySizes() throws IOException;

    /**
     * Every committed entry with its slot header, read and checked against it by this format's rule (a
     * read per entry, in batches); takes the store's lock only while it copies entries, never across I/O
     * or the visitor.
     */
    void forEachEntry(StoreEntry.Visitor visitor) throws IOException;

    /** The format's own status entries. */
    void status(Map<String, Object> s);
}
