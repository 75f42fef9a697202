package io.fdpblock.controller;

import io.fdpblock.cache.KvLayout;
import io.fdpblock.cache.L1Manager;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterListener;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.linux.EventFd;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Keys, payload patterns, adapters of both kinds, and L2 helpers for the controller tests (the L1 cache's
 * tests use its keys and adapters too).
 */
public final class Fixtures {
    private Fixtures() {}

    /** L1 chunk = one raw_block payload (slot of 8 KiB minus its 4 KiB header). */
    public static final int CHUNK = 4096;
    static final long SLOT = 8192;
    static final int SLOTS = 128;
    static final long META = RawBlockCoreConfig.v2MetaBytesFor(4096, SLOTS);
    /** Generous: only a bound so that nothing can hang; never a timing assertion. */
    static final Duration WAIT = Duration.ofSeconds(60);
    public static final KvLayout LAYOUT = KvLayout.ofBytes(CHUNK);

    /** The adapter kinds the tests run on. */
    public enum Kind { MOCK, RAW_BLOCK }

    public static ObjectKey key(int i) {
        return key("org/model", 0x01000100, i);
    }

    static ObjectKey key(String model, int rank, int i) {
        return ObjectKey.of(model, rank, new byte[] {7, 3, (byte) i, (byte) (i >> 8)});
    }

    public static List<ObjectKey> keys(int from, int to) {
        List<ObjectKey> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(key(i));
        }
        return out;
    }

    public static List<ObjectKey> pick(List<ObjectKey> keys, int... idx) {
        List<ObjectKey> out = new ArrayList<>();
        for (int i : idx) {
            out.add(keys.get(i));
        }
        return out;
    }

    private static byte patternByte(ObjectKey k, long j) {
        return (byte) (k.hashCode() * 31 + j * 7 + (j >> 8));
    }

    static MemorySegment payload(Arena arena, ObjectKey k) {
        MemorySegment seg = arena.allocate(CHUNK, 4096);
        for (long j = 0; j < CHUNK; j++) {
            seg.set(ValueLayout.JAVA_BYTE, j, patternByte(k, j));
        }
        return seg;
    }

    /** True when {@code seg} holds {@code k}'s pattern. */
    static boolean holdsPattern(MemorySegment seg, ObjectKey k) {
        if (seg.byteSize() < CHUNK) {
            return false;
        }
        for (long j = 0; j < CHUNK; j++) {
            if (seg.get(ValueLayout.JAVA_BYTE, j) != patternByte(k, j)) {
                return false;
            }
        }
        return true;
    }

    public static L2Adapter open(Kind kind, Path dir, String name) throws IOException {
        return switch (kind) {
            case MOCK -> new MockL2Adapter();
            case RAW_BLOCK -> RawBlockL2Adapter.open(RawBlockCoreConfig.builder(dir.resolve(name + ".img").toString(), SLOT)
                    .capacityBytes(META + SLOTS * SLOT).metaTotalBytes(META).ioEngine(IoEngine.IO_URING)
                    .metaEnablePeriodic(false).build());
        };
    }

    /** The L2 lock count of {@code k} on {@code a}. */
    static int l2Locks(L2Adapter a, ObjectKey k) {
        if (a instanceof GatedAdapter g) {
            return l2Locks(g.delegate, k);
        }
        if (a instanceof MockL2Adapter m) {
            return m.lockCount(k);
        }
        if (a instanceof RawBlockL2Adapter rb) {
            return rb.core().lockCount(k.encoded());
        }
        throw new IllegalArgumentException("no lock count for " + a);
    }

    /**
     * One character per key: L1 ('-' absent, 'W' write-locked, 'U' ready and unlocked, else its read-lock
     * count), then per adapter the L2 lock count of each key.
     */
    static String state(L1Manager l1, List<L2Adapter> adapters, List<ObjectKey> keys) {
        StringBuilder sb = new StringBuilder("L1=");
        for (ObjectKey k : keys) {
            if (!l1.contains(k)) {
                sb.append('-');
            } else if (l1.isWriteLocked(k)) {
                sb.append('W');
            } else {
                int r = l1.readLockCount(k);
                sb.append(r == 0 ? "U" : String.valueOf(r));
            }
        }
        for (int i = 0; i < adapters.size(); i++) {
            sb.append(" L2[").append(i).append("]=");
            for (ObjectKey k : keys) {
                sb.append(l2Locks(adapters.get(i), k));
            }
        }
        return sb.toString();
    }

    static void assertNoL2Locks(List<L2Adapter> adapters, List<ObjectKey> keys) {
        for (L2Adapter a : adapters) {
            for (ObjectKey k : keys) {
                assertThat(l2Locks(a, k)).as("L2 lock count of %s on %s", k, a).isZero();
            }
        }
    }

    static void assertNoL1Locks(L1Manager l1) {
        assertThat(l1.totalReadLocks()).as("L1 read locks").isZero();
        assertThat(l1.writeLockedKeys()).as("L1 write-locked keys").isZero();
    }

    /** Stores each key's pattern straight into the adapter and waits for the task (no controller running). */
    static void putDirect(L2Adapter a, List<ObjectKey> keys) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            List<MemoryObj> objs = new ArrayList<>();
            for (ObjectKey k : keys) {
                objs.add(MemoryObj.of(payload(arena, k)));
            }
            long id = a.submitStoreTask(keys, objs);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                Map<Long, L2StoreResult> done = a.popCompletedStoreTasks();
                if (done.containsKey(id)) {
                    assertThat(done.get(id).success()).as("direct store to %s", a).isTrue();
                    return;
                }
                assertThat(System.nanoTime()).as("store to %s did not complete", a).isLessThan(deadline);
                EventFd.await(a.storeEventFd(), Duration.ofMillis(200));
            }
        }
    }

    /** Which keys the adapter holds (looked up, then unlocked again). */
    static Bitmap holds(L2Adapter a, List<ObjectKey> keys) throws IOException {
        long id = a.submitLookupAndLockTask(keys);
        long deadline = System.nanoTime() + WAIT.toNanos();
        Bitmap b;
        while ((b = a.queryLookupAndLockResult(id)) == null) {
            assertThat(System.nanoTime()).as("lookup on %s did not complete", a).isLessThan(deadline);
            EventFd.await(a.lookupAndLockEventFd(), Duration.ofMillis(200));
        }
        List<ObjectKey> hits = new ArrayList<>();
        for (int i : b.indices()) {
            hits.add(keys.get(i));
        }
        if (!hits.isEmpty()) {
            a.submitUnlock(hits);
        }
        return b;
    }

    /** The keys of every onKeysDeleted call, in order. */
    static final class Recorder implements L2AdapterListener {
        final List<List<ObjectKey>> deleted = new CopyOnWriteArrayList<>();

        @Override
        public void onKeysDeleted(List<ObjectKey> keys) {
            deleted.add(List.copyOf(keys));
        }
    }

    /** Keys {@code from..to-1} with cache salt {@code salt}. */
    static List<ObjectKey> salted(String salt, int from, int to) {
        List<ObjectKey> out = new ArrayList<>();
        for (ObjectKey k : keys(from, to)) {
            out.add(k.withCacheSalt(salt));
        }
        return out;
    }

    /** Lookup-and-lock: the keys stay locked against deletion until unlocked. */
    static void lock(L2Adapter a, List<ObjectKey> keys) throws Exception {
        long id = a.submitLookupAndLockTask(keys);
        long deadline = System.nanoTime() + Fixtures.WAIT.toNanos();
        Bitmap b;
        while ((b = a.queryLookupAndLockResult(id)) == null) {
            assertThat(System.nanoTime()).isLessThan(deadline);
            EventFd.await(a.lookupAndLockEventFd(), Duration.ofMillis(200));
        }
        assertThat(b.cardinality()).isEqualTo(keys.size());
    }

    /** The keys of {@code keys} the adapter holds, in order. */
    static List<ObjectKey> held(L2Adapter a, List<ObjectKey> keys) throws Exception {
        Bitmap b = holds(a, keys);
        List<ObjectKey> out = new ArrayList<>();
        for (int i : b.indices()) {
            out.add(keys.get(i));
        }
        return out;
    }

    /**
     * For a request of keys 0..3 over two adapters: stores keys 0 and 1 on {@code fast}, and returns a slow
     * mock that holds keys 2 and 3 and holds its loads back until {@code releaseLoads()}.
     */
    static MockL2Adapter slowBeside(L2Adapter fast, Closer closer, List<ObjectKey> keys) throws IOException {
        MockL2Adapter slow = closer.add(new MockL2Adapter());
        putDirect(fast, pick(keys, 0, 1));
        putDirect(slow, pick(keys, 2, 3));
        slow.holdLoads();
        return slow;
    }

    /** Writes each key's pattern into L1 as a ready object (finishWrite: the store listener fires). */
    static void putL1(L1Manager l1, List<ObjectKey> keys, boolean temporary) {
        List<MemoryObj> objs = l1.reserveWrite(keys, LAYOUT, temporary);
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < keys.size(); i++) {
                assertThat(objs.get(i)).as("L1 reservation of %s", keys.get(i)).isNotNull();
                MemorySegment.copy(payload(arena, keys.get(i)), 0, objs.get(i).segment(), 0, CHUNK);
            }
        }
        assertThat(l1.finishWrite(keys)).isEqualTo(keys.size());
    }
}
