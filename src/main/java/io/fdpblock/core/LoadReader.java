package io.fdpblock.core;

import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The load path of a {@link RawBlockCore}: every read of a call goes to the device in one submission
 * (a task of many chunks keeps them all in flight at once); each hit is read straight into the caller's
 * buffer when it is aligned and large enough (else through an aligned bounce buffer). A load reads the
 * payload alone when the index knows its CRC32C; an entry whose CRC is not known (recovered without
 * {@code meta_verify_on_load}, or a slot LMCache wrote) has its slot header read with it and checked
 * first (magic, key identity, length). With {@code verify_payload} "always" every payload is checked
 * against that CRC32C; with "recovery" only those of slots whose bytes predate this open, until one load
 * verified them: what this open wrote or verified is read as LMCache reads it, the payload only, with
 * no check. A slot deleted during a load is released after the load.
 */
final class LoadReader {
    private final StoreParts store;
    private final SlotLayout layout;

    LoadReader(StoreParts store) {
        this.store = store;
        this.layout = store.layout();
    }

    /** verify_payload "always": the CRC32C of every payload; else ("recovery") of slots that predate the open. */
    private boolean payloadCrc() {
        return store.config().verifyPayload() == RawBlockCoreConfig.VerifyPayload.ALWAYS;
    }

    /**
     * One planned read.
     *
     * @param entry what the index held when planned (slot, size, and the CRC when known; else the slot
     *        header is read too, into {@code header})
     * @param checkCrc whether the payload's CRC32C is checked: always under "always", and under
     *        "recovery" for a slot whose bytes predate this open ({@link StoreParts#unverifiedSlots})
     */
    private record Planned(int index, StoreKey key, StoreIndex.Found entry, MemorySegment destination,
            MemorySegment target, MemorySegment header, boolean checkCrc) {}

    /**
     * What a load learned about an entry, applied with the end of its reads under one lock: its payload
     * passed the CRC32C ({@code verified}: "recovery" skips it from then on), or its header's CRC
     * ({@code crcKnown}: later loads need not read the header).
     */
    private record Learned(StoreKey key, int slot, boolean verified, boolean crcKnown, int crc) {}

    void load(List<LoadRequest> requests, RawBlockCore.Completion done) {
        boolean[] results = new boolean[requests.size()];
        List<Planned> plan = new ArrayList<>(requests.size());
        store.lock().lock();
        try {
            store.gate().checkOpenLocked();
            for (int i = 0; i < requests.size(); i++) {
                LoadRequest r = requests.get(i);
                StoreKey key = r.storeKey(); // with its hash when the caller keeps it
                StoreIndex.Found e = store.index().get(key);
                if (e == null) {
                    continue;
                }
                if (r.destination().byteSize() < e.size()) {
                    throw new IllegalArgumentException("load " + r.key() + ": destination of "
                            + r.destination().byteSize() + " bytes is smaller than the stored payload of " + e.size()
                            + " bytes; nothing was loaded");
                }
                boolean checkCrc = store.unverifiedSlots() == null || store.unverifiedSlots().get(e.slot());
                plan.add(new Planned(i, key, e, r.destination(), null, null, checkCrc));
            }
            for (Planned p : plan) {
                store.inflight().startRead(p.entry().slot());
            }
            if (!plan.isEmpty()) {
                store.ops().add(plan.size());
            }
        } finally {
            store.lock().unlock();
        }
        if (plan.isEmpty()) {
            deliver(done, results);
            return;
        }
        int align = store.config().blockAlign();
        IoBatch batch = new IoBatch(plan.size());
        List<Planned> targets = new ArrayList<>(plan.size());
        try {
            for (Planned p : plan) {
                StoreIndex.Found e = p.entry();
                long padded = OnDiskFormat.roundUp(e.size(), align);
                MemorySegment dest = p.destination();
                MemorySegment target = dest.isNative() && dest.byteSize() >= padded
                        && dest.address() % store.device().bufferAlignment() == 0
                        ? dest.asSlice(0, padded)
                        : Arena.ofAuto().allocate(padded, align);
                MemorySegment header = null;
                if (!e.hasCrc()) { // a known CRC tells another key's bytes apart; else the header does
                    header = store.headers().acquire();
                    batch.read(layout.slotOffset(e.slot()), header);
                }
                batch.read(layout.slotOffset(e.slot()) + layout.headerBytes(), target);
                targets.add(new Planned(p.index(), p.key(), e, dest, target, header, p.checkCrc()));
            }
            store.device().submit(batch, b -> complete(targets, b, results, done));
        } catch (IOException | RuntimeException e) {
            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "load of " + plan.size() + " keys on "
                    + store.device().path() + " was not submitted: " + e.getMessage());
            releaseHeaders(targets);
            end(plan, List.of());
            deliver(done, results);
        }
    }

    private void complete(List<Planned> plan, IoBatch batch, boolean[] results, RawBlockCore.Completion done) {
        // Runs on the device's I/O thread. Whatever happens to one key (e.g. a destination from a
        // confined or closed arena cannot be touched here), the readers are released and the caller is
        // answered: an escaping exception would leave load() waiting, and close(), forever.
        List<Learned> learned = null; // most loads learn nothing: no list for them
        try {
            if (batch.buffersMayBeInUse()) {
                store.quarantine().keep(batch); // its header buffers too: the kernel may still write them
                return;
            }
            boolean payloadCrc = payloadCrc();
            int op = 0;
            for (Planned p : plan) {
                StoreIndex.Found e = p.entry();
                int headerOp = p.header() == null ? -1 : op++;
                int payloadOp = op++;
                if ((headerOp >= 0 && !batch.isComplete(headerOp)) || batch.failed(payloadOp)
                        || batch.result(payloadOp) < e.size()) {
                    continue;
                }
                try {
                    int crc = e.crc();
                    boolean hasCrc = e.hasCrc();
                    if (headerOp >= 0) {
                        OnDiskFormat.SlotHeader h = OnDiskFormat.readSlotHeader(p.header());
                        String problem = OnDiskFormat.slotHeaderProblem(h, p.key().text(), e.size());
                        if (problem != null) {
                            RawBlockCore.LOG.log(System.Logger.Level.WARNING, "slot " + e.slot() + " on "
                                    + store.device().path() + " does not hold " + p.key() + " (" + problem
                                    + "): a miss");
                            continue;
                        }
                        crc = h.crc32c();
                        hasCrc = h.hasCrc();
                    }
                    MemorySegment payload = p.target().asSlice(0, e.size());
                    if (p.checkCrc() && hasCrc && OnDiskFormat.crc32c(payload) != crc) {
                        store.counters().crcMismatches.incrementAndGet();
                        RawBlockCore.LOG.log(System.Logger.Level.WARNING, "payload of slot " + e.slot() + " on "
                                + store.device().path() + " fails its CRC32C: reported as a miss");
                        continue;
                    }
                    boolean verified = !payloadCrc && p.checkCrc() && hasCrc;
                    boolean crcKnown = headerOp >= 0 && hasCrc && !e.hasCrc();
                    if (verified || crcKnown) {
                        learned = learned == null ? new ArrayList<>() : learned;
                        learned.add(new Learned(p.key(), e.slot(), verified, crcKnown, crc));
                    }
                    if (p.target().address() != p.destination().address()) {
                        MemorySegment.copy(p.target(), 0, p.destination(), 0, e.size());
                    }
                    results[p.index()] = true;
                } catch (RuntimeException ex) {
                    RawBlockCore.LOG.log(System.Logger.Level.WARNING, "load of slot " + e.slot() + " on "
                            + store.device().path() + " reported as a miss: its destination is not usable from the I/O"
                            + " thread (a destination must be from a shared, global or automatic arena): " + ex);
                }
            }
        } finally {
            if (!batch.buffersMayBeInUse()) {
                releaseHeaders(plan);
            }
            end(plan, learned == null ? List.of() : learned);
            deliver(done, results);
        }
    }

    private void releaseHeaders(List<Planned> plan) {
        for (Planned p : plan) {
            store.headers().release(p.header());
        }
    }

    /** Ends the plan's reads and applies what they {@code learned}, under one lock. */
    private void end(List<Planned> plan, List<Learned> learned) {
        int[] freed = new int[plan.size()];
        int nFreed = 0;
        store.lock().lock();
        try {
            for (Learned l : learned) {
                StoreIndex.Found now = store.index().get(l.key());
                if (now == null || now.slot() != l.slot()) {
                    continue; // deleted (its slot maybe taken by a put) or stored again elsewhere meanwhile
                }
                if (l.verified()) {
                    store.unverifiedSlots().clear(l.slot());
                }
                if (l.crcKnown()) {
                    store.index().setCrc(l.key(), l.crc());
                }
            }
            for (Planned p : plan) {
                if (store.inflight().endRead(p.entry().slot())) {
                    freed[nFreed++] = p.entry().slot();
                }
            }
        } finally {
            store.lock().unlock();
        }
        if (nFreed > 0) { // deleted during the load: released now that nothing reads them
            store.ops().add(1);
            store.releaser().releaseDeleted(freed, nFreed);
        }
        store.ops().done(plan.size());
    }

    private static void deliver(RawBlockCore.Completion done, boolean[] results) {
        try {
            done.onComplete(results);
        } catch (Throwable t) {
            RawBlockCore.LOG.log(System.Logger.Level.ERROR, "completion callback threw", t);
        }
    }
}
