package io.fdpblock.core;

import io.fdpblock.device.AlignedBufferPool;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.ReclaimUnitGroups.Outcome;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static io.fdpblock.core.CoreFixture.SLOT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Group eviction in the store, in both metadata formats: fdpblock_v2 reads a group's keys back from its
 * slot headers (it keeps none in memory), lmcache_v1 knows them; either way a group goes all or nothing,
 * through the delete path (logged; its slots released only once that is durable, as one deallocation of
 * the group's whole range) and comes back whole. A file through io_uring acts as an FDP namespace (ids
 * 0..3, reclaim units of 4 slots); fdpblock_v2 commits its log only when told (a 60 s interval), so what
 * waits for durability can be seen waiting.
 */
@Tag("host")
class SlotGroupsTest {
    private static final int GROUP = 4;
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    @TempDir
    Path dir;

    private static List<String> keys(int from, int to) {
        List<String> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(CoreFixture.key(i));
        }
        return out;
    }

    private static void put(CoreFixture f, RawBlockCore core, List<String> keys, int placementId) throws IOException {
        List<PutRequest> reqs = new ArrayList<>();
        for (String k : keys) {
            reqs.add(PutRequest.of(k, f.payload(k, SLOT - 4096)).withPlacement(placementId));
        }
        assertThat(core.put(reqs)).containsOnly(true);
    }

    @ParameterizedTest
    @EnumSource(RawBlockCoreConfig.MetaFormat.class)
    void aGroupGoesWholeThroughTheDeletePathOnlyWhenNothingHoldsItAndComesBackWhole(RawBlockCoreConfig.MetaFormat format)
            throws Exception {
        try (CoreFixture f = new CoreFixture(IoEngine.IO_URING, dir, 32, format)) {
            f.device.emulatePlacement(List.of(0, 1, 2, 3), GROUP * SLOT);
            LoadGate gate = new LoadGate(f.device);
            RawBlockCoreConfig config = f.config().fdpEnabled(true).metaCheckpointPlacementId(3)
                    .metaSyncIntervalMs(60_000).build();
            List<String> a = keys(0, 4); // id 1 fills group 0
            List<String> b = keys(10, 12); // id 2 starts group 1
            RawBlockCore core = RawBlockCore.open(config, gate);
            try {
                SlotGroups groups = core.slotGroups();
                assertThat(groups.slotsPerGroup()).isEqualTo(GROUP);
                assertThat(groups.groupBytes()).isEqualTo(GROUP * SLOT);
                int count = groups.groupCount();
                assertThat(count).as("whole groups of the data area").isEqualTo(core.maxSlots() / GROUP).isGreaterThan(2);

                put(f, core, a, 1);
                put(f, core, b, 2);
                List<String> asked = new ArrayList<>(a);
                asked.addAll(b);
                asked.add(CoreFixture.key(99));
                assertThat(groups.groupsOf(asked)).containsExactly(0, 0, 0, 0, 1, 1, -1);
                assertThat(groups.groups()).hasSize(2);
                assertThat(groups.groups().get(0)).satisfies(g -> {
                    assertThat(g.index()).isZero();
                    assertThat(g.offset()).isEqualTo(core.slotOffset(0));
                    assertThat(g.usedSlots()).isEqualTo(4);
                    assertThat(g.placementId()).isEqualTo(1);
                    assertThat(g.open()).isFalse();
                });
                assertThat(groups.groups().get(1).open()).as("id 2 is still filling group 1").isTrue();

                // what cannot go: an open group, an empty one, one that does not exist
                assertThat(groups.evict(1).outcome()).isEqualTo(Outcome.OPEN);
                assertThat(groups.evict(2).outcome()).isEqualTo(Outcome.EMPTY);
                assertThatThrownBy(() -> groups.evict(count)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("slot group " + count + " does not exist")
                        .hasMessageContaining("(0.." + (count - 1) + ")");

                // a locked key keeps its whole group
                core.exists(List.of(a.get(2)), true);
                assertThat(groups.evict(0).outcome()).isEqualTo(Outcome.LOCKED);
                assertThat(core.exists(a, false)).containsOnly(true);
                core.unlock(List.of(a.get(2)));

                // so does a load in flight: it is held at the device until the attempt is over
                int slot1 = core.index.get(new StoreKey(a.get(1))).slot();
                gate.holdLoadsOf(core.slotOffset(slot1));
                MemorySegment into = f.buffer(SLOT - 4096);
                CompletableFuture<boolean[]> loaded = new CompletableFuture<>();
                core.loadAsync(List.of(new LoadRequest(a.get(1), into)), loaded::complete);
                gate.awaitHeld(1);
                assertThat(groups.evict(0).outcome()).isEqualTo(Outcome.BUSY);
                gate.release();
                assertThat(loaded.get(10, TimeUnit.SECONDS)).containsExactly(true);
                assertThat(into.mismatch(f.payload(a.get(1), SLOT - 4096))).isEqualTo(-1);

                // a key deleted on its own: its slot is deallocated, then free (its delete record need not be
                // durable first)
                int freeBefore = core.freeSlots();
                int deallocs = f.device.deallocations().size();
                int released = gate.deallocationsDone();
                core.delete(List.of(a.get(3)), false);
                gate.awaitDeallocationsDone(released + 1); // the slot is free once its deallocation completed
                assertThat(core.freeSlots()).isEqualTo(freeBefore + 1);
                assertThat(f.device.deallocations()).hasSize(deallocs + 1);
                assertThat(f.device.deallocations().get(deallocs)).containsExactly(core.slotOffset(3), SLOT);

                // evicted: its keys through the delete path, its range (with the free slot 3) in one deallocation
                deallocs = f.device.deallocations().size();
                gate.holdMetadataWrites(core.dataBase);
                SlotGroups.Eviction e = groups.evict(0);
                assertThat(e.outcome()).isEqualTo(Outcome.EVICTED);
                assertThat(e.removed()).containsExactly(a.get(0), a.get(1), a.get(2));
                assertThat(e.offset()).isEqualTo(core.slotOffset(0));
                assertThat(e.bytes()).isEqualTo(GROUP * SLOT);
                assertThat(core.exists(a, false)).containsOnly(false);
                assertThat(core.keyCount()).isEqualTo(2);
                assertThat(groups.groupsOf(a)).containsOnly(-1);
                // released while metadata writes are held: no log commit (or checkpoint) was needed for it
                gate.awaitDeallocationsDone(released + 2);
                assertThat(core.freeSlots()).isEqualTo(freeBefore + GROUP);
                assertThat(gate.held()).isZero();
                gate.release();
                assertThat(f.device.deallocations()).hasSize(deallocs + 1);
                assertThat(f.device.deallocations().get(deallocs)).as("the group's whole range, one deallocation")
                        .containsExactly(core.slotOffset(0), GROUP * SLOT);
                core.lock.lock();
                try {
                    for (int s = 0; s < GROUP; s++) {
                        assertThat(core.slots.state(s)).as("slot %d held: the group is free whole", s)
                                .isEqualTo(SlotAllocator.HELD);
                    }
                } finally {
                    core.lock.unlock();
                }
                assertThat(groups.evict(0).outcome()).isEqualTo(Outcome.EMPTY);
            } finally {
                core.close();
            }

            // the deletes were logged (v2) or checkpointed (v1): a reopen finds what was left, nothing more
            RawBlockCore again = RawBlockCore.open(config, gate);
            try {
                assertThat(again.exists(a, false)).containsOnly(false);
                assertThat(again.exists(b, false)).containsOnly(true);
                assertThat(again.keyCount()).isEqualTo(2);
                assertThat(again.slotGroups().groupsOf(b)).containsOnly(1);
            } finally {
                again.close();
            }
        }
    }

    /**
     * The fixture's device, holding until released the loads of one slot (reads longer than a header) or
     * the writes to the metadata area (a log commit).
     */
    private static final class LoadGate implements BlockDevice {
        private final BlockDevice inner;
        private long holdSlotOffset = -1;
        private long holdWritesBelow = -1;
        private final List<Runnable> held = new ArrayList<>();
        /** Deallocation batches whose completion (the store freeing their slots) has returned. */
        private int deallocationsDone;

        LoadGate(BlockDevice inner) {
            this.inner = inner;
        }

        synchronized void holdLoadsOf(long slotOffset) {
            holdSlotOffset = slotOffset;
        }

        synchronized void holdMetadataWrites(long dataBase) {
            holdWritesBelow = dataBase;
        }

        synchronized int held() {
            return held.size();
        }

        /** Waits (bounded) until {@code n} submissions are held. */
        synchronized void awaitHeld(int n) throws InterruptedException {
            awaitLocked("submissions held: " + n, () -> held.size() >= n);
        }

        synchronized int deallocationsDone() {
            return deallocationsDone;
        }

        /** Waits (bounded) until {@code n} deallocation batches have completed, their slots freed. */
        synchronized void awaitDeallocationsDone(int n) throws InterruptedException {
            awaitLocked("deallocations completed: " + n, () -> deallocationsDone >= n);
        }

        private void awaitLocked(String what, BooleanSupplier done) throws InterruptedException {
            long deadline = System.nanoTime() + WAIT_NANOS;
            while (!done.getAsBoolean()) {
                long left = deadline - System.nanoTime();
                assertThat(left).as(what).isPositive();
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }

        void release() {
            List<Runnable> go;
            synchronized (this) {
                holdSlotOffset = -1;
                holdWritesBelow = -1;
                go = new ArrayList<>(held);
                held.clear();
            }
            go.forEach(Runnable::run);
        }

        @Override
        public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
            if (batch.size() > 0 && batch.isDeallocate(0)) { // the store's releases: counted once they completed
                IoBatch.Callback release = callback;
                callback = b -> {
                    release.onComplete(b);
                    synchronized (this) {
                        deallocationsDone++;
                        notifyAll();
                    }
                };
            }
            IoBatch.Callback then = callback;
            synchronized (this) {
                for (int i = 0; i < batch.size(); i++) {
                    boolean load = holdSlotOffset >= 0 && batch.isRead(i) && batch.length(i) > 4096
                            && batch.offset(i) >= holdSlotOffset && batch.offset(i) < holdSlotOffset + SLOT;
                    boolean meta = batch.isWrite(i) && batch.offset(i) < holdWritesBelow;
                    if (load || meta) {
                        held.add(() -> {
                            try {
                                inner.submit(batch, then);
                            } catch (IOException e) {
                                throw new IllegalStateException(e);
                            }
                        });
                        return;
                    }
                }
            }
            inner.submit(batch, then);
        }

        @Override public boolean supportsPlacement() { return inner.supportsPlacement(); }
        @Override public List<Integer> placementIds() throws IOException { return inner.placementIds(); }
        @Override public long reclaimUnitBytes() throws IOException { return inner.reclaimUnitBytes(); }
        @Override public boolean supportsDeallocate() { return inner.supportsDeallocate(); }
        @Override public String path() { return inner.path(); }
        @Override public IoEngine engine() { return inner.engine(); }
        @Override public long sizeBytes() { return inner.sizeBytes(); }
        @Override public int logicalBlockSize() { return inner.logicalBlockSize(); }
        @Override public int maxTransferBytes() { return inner.maxTransferBytes(); }
        @Override public int bufferAlignment() { return inner.bufferAlignment(); }
        @Override public AlignedBufferPool buffers() { return inner.buffers(); }
        @Override public boolean registerBuffers(MemorySegment region) throws IOException {
            return inner.registerBuffers(region);
        }
        @Override public void unregisterBuffers(MemorySegment region) throws IOException {
            inner.unregisterBuffers(region);
        }
        @Override public void flush() throws IOException { inner.flush(); }
        @Override public void close() { /* the fixture closes the device */ }
    }
}
