package io.fdpblock.core;

import io.fdpblock.device.IoBatch;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.util.Segments;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The put path of a {@link RawBlockCore}: keys are accepted under the core's lock (a slot reserved, the
 * key in flight), written outside it (at most {@code max_batch_keys} keys at a time: their payloads, then
 * their headers), then committed or rolled back together. Nothing is acknowledged that a
 * close could lose: a write that completes after close took its final snapshot is reported
 * {@link PutOutcome#CLOSED}; nothing is acknowledged once a metadata commit failed
 * ({@link PutOutcome#READ_ONLY}, {@link MetaStore#readOnlyCause}).
 */
final class PutWriter {
    private final StoreParts store;
    private final SlotLayout layout;

    PutWriter(StoreParts store) {
        this.store = store;
        this.layout = store.layout();
    }

    /** A key accepted for writing. */
    private record Pending(int index, StoreKey key, PutRequest request, InFlight.Write inflight, int crc) {}

    void put(List<PutRequest> requests, RawBlockCore.OutcomeCompletion done) {
        requests = store.placement().admit(requests);
        int n = requests.size();
        PutOutcome[] outcomes = new PutOutcome[n];
        int[] sameAs = new int[n];
        Arrays.fill(sameAs, -1);
        List<Pending> accepted = new ArrayList<>(n);
        long maxPayload = layout.maxPayloadBytes();
        List<String> rejected = null;
        List<String> saltRefused = null;
        List<Integer> waiting = null;
        store.lock().lock();
        try {
            store.gate().checkOpenLocked();
            boolean readOnly = store.meta().readOnlyCause() != null;
            HashMap<String, Integer> firstInCall = n > 1 ? new HashMap<>(n * 2) : null;
            for (int i = 0; i < n; i++) {
                PutRequest r = requests.get(i);
                String key = r.key();
                if (firstInCall != null) {
                    Integer first = firstInCall.putIfAbsent(key, i);
                    if (first != null) {
                        sameAs[i] = first;
                        continue;
                    }
                }
                if (readOnly) {
                    outcomes[i] = PutOutcome.READ_ONLY;
                    continue;
                }
                long len = r.payload().byteSize();
                if (len <= 0 || len > maxPayload) {
                    store.counters().oversizeRejects.incrementAndGet();
                    outcomes[i] = len <= 0 ? PutOutcome.PAYLOAD_EMPTY : PutOutcome.PAYLOAD_TOO_LARGE;
                    rejected = rejected == null ? new ArrayList<>() : rejected;
                    rejected.add(key + " (" + len + " bytes)");
                    continue;
                }
                StoreKey storeKey = r.storeKey(); // with its hash when the caller keeps it
                if (store.index().contains(storeKey)) {
                    outcomes[i] = PutOutcome.ALREADY_STORED; // the original bytes stay
                    continue;
                }
                if (store.inflight().isWriting(key)) {
                    outcomes[i] = PutOutcome.WRITE_IN_FLIGHT;
                    continue;
                }
                String salt = SaltTable.saltOf(key);
                if (!store.salts().canTake(salt)) { // counted under another salt otherwise, silently
                    outcomes[i] = PutOutcome.TOO_MANY_SALTS;
                    saltRefused = saltRefused == null ? new ArrayList<>() : saltRefused;
                    saltRefused.add(key + " (salt '" + salt + "')");
                    continue;
                }
                int slot = store.slots().allocate(allocatorGroup(r.placement()));
                if (slot < 0 && store.releaser().slotsComing()) { // freed by deletes, being deallocated or released
                    waiting = waiting == null ? new ArrayList<>() : waiting;
                    waiting.add(i);
                    store.counters().slotWaits.incrementAndGet();
                    continue;
                }
                if (slot < 0) {
                    store.counters().deviceFullRejects.incrementAndGet();
                    outcomes[i] = PutOutcome.DEVICE_FULL;
                    continue;
                }
                if (store.unverifiedSlots() != null) {
                    store.unverifiedSlots().clear(slot); // its bytes are this put's from now on
                }
                store.salts().reserve(salt);
                accepted.add(new Pending(i, storeKey, r, store.inflight().startWrite(key, slot), 0));
            }
            if (!accepted.isEmpty()) {
                store.ops().add(accepted.size());
            }
            if (waiting != null) {
                store.ops().add(1); // a close waits for the retry
            }
        } finally {
            store.lock().unlock();
        }
        if (rejected != null) {
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "put on " + store.device().path() + ": "
                    + rejected.size() + " keys not stored, their payload is empty or larger than the " + maxPayload
                    + " bytes a slot holds (slot_bytes " + layout.slotBytes() + " - header_bytes "
                    + layout.headerBytes() + "; raise slot_bytes for larger chunks): " + firstFew(rejected));
        }
        if (saltRefused != null) {
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "put on " + store.device().path() + ": "
                    + saltRefused.size() + " keys not stored, their cache salt would be one more than the "
                    + SaltTable.MAX_IDS + " the store keeps (no salt included; a salt's id stays taken while the store"
                    + " lives, its keys deleted or not): use fewer cache salts: " + firstFew(saltRefused));
        }
        if (accepted.isEmpty() && waiting == null) {
            finish(outcomes, sameAs, done);
            return;
        }
        int chunk = store.config().maxBatchKeys();
        int chunks = (accepted.size() + chunk - 1) / chunk;
        AtomicInteger remaining = new AtomicInteger(chunks + (waiting != null ? 1 : 0));
        Runnable chunkDone = () -> {
            if (remaining.decrementAndGet() == 0) {
                finish(outcomes, sameAs, done);
            }
        };
        if (waiting != null) {
            waitForSlots(requests, waiting, outcomes, chunkDone);
        }
        for (int c = 0; c < chunks; c++) {
            submit(accepted.subList(c * chunk, Math.min(accepted.size(), (c + 1) * chunk)), outcomes, chunkDone);
        }
    }

    /**
     * Retries the keys that found the device full once slots of deletes on their way (being deallocated,
     * or between a delete and its release) are free; a key that finds none again waits again while more
     * are coming, and fails with {@link PutOutcome#DEVICE_FULL} when none are.
     */
    private void waitForSlots(List<PutRequest> requests, List<Integer> waiting, PutOutcome[] outcomes,
            Runnable chunkDone) {
        List<PutRequest> again = new ArrayList<>(waiting.size());
        for (int i : waiting) {
            again.add(requests.get(i));
        }
        Runnable retry = () -> {
            try {
                put(again, o -> {
                    for (int k = 0; k < o.length; k++) {
                        outcomes[waiting.get(k)] = o[k];
                    }
                    store.ops().done(1);
                    chunkDone.run();
                });
            } catch (IllegalStateException closed) {
                for (int i : waiting) {
                    outcomes[i] = PutOutcome.CLOSED;
                }
                store.ops().done(1);
                chunkDone.run();
            }
        };
        if (!store.releaser().whenSlotsFreed(retry)) { // they came in the meantime
            retry.run();
        }
    }

    /**
     * The allocator's group of a placement id: slots are grouped (and reused) per id; a write
     * without a directive and one to id 0 both land on the default handle, so they share group 0.
     */
    private static int allocatorGroup(PlacementId p) {
        return p.isNone() ? 0 : p.value();
    }

    /**
     * Writes a chunk of keys as two device submissions: their payloads first, then their headers. A header
     * holds its payload's CRC32C, and computing that (about 45 us per MiB here) before anything went to the
     * device kept the device short of work: measured side by side, a store had 13 of its 16 chunks in
     * the kernel on average, 15 without the CRC32C. With the payloads under way first, the CRC32C runs
     * while the device writes them. The chunk is settled once both submissions completed; until then no
     * record names its slots, so a crash between the two leaves what a crash during one write left.
     */
    private void submit(List<Pending> chunk, PutOutcome[] outcomes, Runnable chunkDone) {
        IoBatch payloads = new IoBatch(chunk.size());
        IoBatch headerBatch = new IoBatch(chunk.size());
        MemorySegment[] headers = new MemorySegment[chunk.size()];
        List<Pending> prepared = new ArrayList<>(chunk.size());
        WrittenChunk written = new WrittenChunk(chunk, prepared, payloads, headerBatch, headers, outcomes, chunkDone);
        try {
            for (Pending p : chunk) {
                payloads.write(layout.slotOffset(p.inflight().slot) + layout.headerBytes(),
                        writablePayload(p.request().payload()), p.request().placement());
            }
            store.device().submit(payloads, b -> written.batchDone());
        } catch (IOException | RuntimeException e) {
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "put of " + chunk.size() + " keys on "
                    + store.device().path() + " was not submitted, rolled back: " + e.getMessage());
            settle(chunk, false, outcomes, chunkDone);
            return;
        }
        try {
            for (int k = 0; k < chunk.size(); k++) {
                Pending p = chunk.get(k);
                MemorySegment payload = p.request().payload();
                int crc = OnDiskFormat.crc32c(payload);
                headers[k] = store.headers().acquire();
                OnDiskFormat.writeSlotHeader(headers[k], SlotIdentity.of(p.key().text()), payload.byteSize(), crc,
                        p.key().text().getBytes(StandardCharsets.UTF_8));
                headerBatch.write(layout.slotOffset(p.inflight().slot), headers[k], p.request().placement());
                prepared.add(new Pending(p.index(), p.key(), p.request(), p.inflight(), crc));
            }
            store.device().submit(headerBatch, b -> written.batchDone());
        } catch (IOException | RuntimeException e) {
            // the payloads are on their way: rolled back once they completed, never while the kernel has them
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "put of " + chunk.size() + " keys on "
                    + store.device().path() + ": slot headers not submitted, rolled back: " + e.getMessage());
            written.headersNotSubmitted();
        }
    }

    /** A chunk's two submissions: settled once both completed (or the second was never made). */
    private final class WrittenChunk {
        private final List<Pending> chunk;
        /** The chunk's keys with their CRC32Cs, complete once the headers were submitted. */
        private final List<Pending> prepared;
        private final IoBatch payloads;
        private final IoBatch headerBatch;
        private final MemorySegment[] headers;
        private final PutOutcome[] outcomes;
        private final Runnable chunkDone;
        private final AtomicInteger pending = new AtomicInteger(2);
        /** Set (before the count drops) when the headers never went to the device: the chunk rolls back. */
        private volatile boolean headersNotSubmitted;

        WrittenChunk(List<Pending> chunk, List<Pending> prepared, IoBatch payloads, IoBatch headerBatch,
                MemorySegment[] headers, PutOutcome[] outcomes, Runnable chunkDone) {
            this.chunk = chunk;
            this.prepared = prepared;
            this.payloads = payloads;
            this.headerBatch = headerBatch;
            this.headers = headers;
            this.outcomes = outcomes;
            this.chunkDone = chunkDone;
        }

        void batchDone() {
            if (pending.decrementAndGet() == 0) {
                complete();
            }
        }

        void headersNotSubmitted() {
            headersNotSubmitted = true;
            batchDone();
        }

        private void complete() {
            boolean ok = !headersNotSubmitted && allWritten(payloads, chunk.size())
                    && allWritten(headerBatch, chunk.size());
            if (payloads.buffersMayBeInUse() || headerBatch.buffersMayBeInUse()) {
                // the kernel may still read them: never reuse
                store.quarantine().keep(new Object[] {payloads, headerBatch, headers});
            } else {
                releaseHeaders(headers);
            }
            settle(ok ? prepared : chunk, ok, outcomes, chunkDone);
        }
    }

    private static boolean allWritten(IoBatch batch, int keys) {
        for (int i = 0; i < batch.size(); i++) {
            if (!batch.isComplete(i)) {
                RawBlockCore.LOG.log(System.Logger.Level.WARNING, "put of " + keys + " keys rolled back: "
                        + (batch.failed(i) ? batch.failure(i).getMessage() : "short write at op " + i));
                return false;
            }
        }
        return true;
    }

    /**
     * Commits every key of a chunk, or rolls every one back (slot released, nothing indexed); with
     * {@code meta_sync_interval_ms} 0 the chunk completes only once its records are durable.
     */
    private void settle(List<Pending> chunk, boolean written, PutOutcome[] outcomes, Runnable chunkDone) {
        int[] freed = new int[chunk.size()];
        int nFreed = 0;
        long ticket = 0;
        store.lock().lock();
        try {
            boolean committing = store.gate().committingLocked();
            for (Pending p : chunk) {
                InFlight.Write inf = p.inflight();
                store.inflight().endWrite(p.key().text(), inf);
                String salt = SaltTable.saltOf(p.key().text());
                if (!written || inf.canceled || !committing) {
                    freed[nFreed++] = inf.slot; // it may hold (part of) the write: deallocated first
                    if (!written) {
                        store.counters().rolledBackKeys.incrementAndGet();
                    }
                    outcomes[p.index()] = !written ? PutOutcome.IO_ERROR
                            : inf.canceled ? PutOutcome.CANCELLED : PutOutcome.CLOSED;
                    store.salts().release(salt);
                } else {
                    long size = p.request().payload().byteSize();
                    boolean newSalt = !store.salts().known(salt);
                    int saltId = Math.max(0, store.salts().idOf(salt)); // always one: reserved when accepted
                    store.salts().release(salt);
                    // the record first: a commit that failed while this was written refuses it
                    long t = store.meta().putCommitted(p.key(), inf.slot, (int) size, p.crc(),
                            allocatorGroup(p.request().placement()), saltId, newSalt && saltId > 0);
                    if (t < 0) {
                        freed[nFreed++] = inf.slot;
                        outcomes[p.index()] = PutOutcome.READ_ONLY;
                        continue;
                    }
                    ticket = t;
                    store.index().put(p.key(), inf.slot, (int) size, p.crc(), true, p.request().meta(), saltId);
                    store.salts().added(saltId);
                    store.slots().markUsed(inf.slot);
                    store.placement().recordWrite(p.request().placement(), layout.headerBytes() + size);
                    outcomes[p.index()] = PutOutcome.STORED;
                }
            }
        } finally {
            store.lock().unlock();
        }
        store.releaser().release(freed, nFreed); // rolled back or cancelled: no record names them
        if (ticket > 0 && store.meta().acknowledgesWhenDurable()) {
            store.meta().whenDurable(ticket, t -> {
                if (t < 0) { // the log could not be written: not acknowledged as stored
                    unindexNotDurable(chunk, outcomes);
                }
                store.ops().done(chunk.size());
                chunkDone.run();
            });
            return;
        }
        store.ops().done(chunk.size());
        chunkDone.run();
    }

    /**
     * The keys of a chunk whose commit failed leave the index, so that what was reported failed is not
     * served either. Their slots stay taken and no delete is logged: the store takes no puts any more, and
     * a reopen finds them as the device kept them (the failed commit may have reached it).
     */
    private void unindexNotDurable(List<Pending> chunk, PutOutcome[] outcomes) {
        store.lock().lock();
        try {
            for (Pending p : chunk) {
                if (outcomes[p.index()] != PutOutcome.STORED) {
                    continue;
                }
                outcomes[p.index()] = PutOutcome.IO_ERROR;
                StoreIndex.Found f = store.index().get(p.key());
                if (f != null && f.slot() == p.inflight().slot && store.index().remove(p.key(), true) >= 0) {
                    store.salts().removed(f.saltId());
                }
            }
        } finally {
            store.lock().unlock();
        }
    }

    private static void finish(PutOutcome[] outcomes, int[] sameAs, RawBlockCore.OutcomeCompletion done) {
        for (int i = 0; i < outcomes.length; i++) {
            if (sameAs[i] >= 0) { // a duplicate in the call shares the result, not the credit
                PutOutcome first = outcomes[sameAs[i]];
                outcomes[i] = first == PutOutcome.STORED ? PutOutcome.ALREADY_STORED : first;
            }
        }
        try {
            done.onComplete(outcomes);
        } catch (Throwable t) {
            RawBlockCore.LOG.log(System.Logger.Level.ERROR, "completion callback threw", t);
        }
    }

    /** The first three of {@code keys} for a message, and "..." when there are more. */
    private static String firstFew(List<String> keys) {
        return String.join(", ", keys.subList(0, Math.min(3, keys.size()))) + (keys.size() > 3 ? ", ..." : "");
    }

    /** The payload itself when the device can write it as is, else an aligned, zero-padded copy. */
    private MemorySegment writablePayload(MemorySegment payload) {
        long len = payload.byteSize();
        int align = store.config().blockAlign();
        // A payload confined to the caller's thread is copied too: an engine that does its I/O on threads of
        // its own (posix) cannot touch it there.
        if (payload.isNative() && len % align == 0 && payload.address() % store.device().bufferAlignment() == 0
                && !Segments.isConfined(payload)) {
            return payload;
        }
        MemorySegment copy = Arena.ofAuto().allocate(OnDiskFormat.roundUp(len, align), align);
        MemorySegment.copy(payload, 0, copy, 0, len);
        return copy;
    }

    private void releaseHeaders(MemorySegment[] headers) {
        for (MemorySegment h : headers) {
            store.headers().release(h); // null (a header never made) is ignored there
        }
    }
}
