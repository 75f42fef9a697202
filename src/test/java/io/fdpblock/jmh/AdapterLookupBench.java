package io.fdpblock.jmh;

import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.linux.EventFd;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The adapter's lookup-and-lock of 1,000 stored keys as a consumer sees it: submit, wait for the
 * lookup eventfd with {@code poll(2)} ({@link EventFd#await(int, Duration)}), take the result. Sampled,
 * so JMH prints percentiles: p0.50 is the figure for the target (median < 200 us). The locks taken are
 * released after each invocation, outside the measurement. It looks up the same {@link ObjectKey}
 * instances every time, which keep their hashes: it times a lookup that hashes no key (the bench's lookup
 * case names new instances each time, and so hashes each key once).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class AdapterLookupBench {
    static final int KEYS = 1000;
    private static final Duration WAIT = Duration.ofSeconds(5);

    /** raw_block: RawBlockL2Adapter over a memory device; mock: MockL2Adapter (no store underneath). */
    @Param({"raw_block", "mock"})
    String adapterType;

    private BlockDevice device;
    private L2Adapter adapter;
    private Arena arena;
    private List<ObjectKey> keys;
    private int fd;
    private long locked;

    @Setup(Level.Trial)
    public void open() throws IOException {
        int slot = 8192;
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, KEYS + 8);
        long capacity = meta + (long) (KEYS + 8) * slot;
        if (adapterType.equals("mock")) {
            adapter = new MockL2Adapter();
        } else {
            device = BlockDevices.memory(capacity, 4096);
            adapter = RawBlockL2Adapter.open(RawBlockCoreConfig.builder("memory:jmh", slot).capacityBytes(capacity)
                    .metaTotalBytes(meta).ioEngine(IoEngine.MEMORY).loadCheckpointOnInit(false)
                    .metaEnablePeriodic(false).build(), device);
        }
        arena = Arena.ofShared();
        MemorySegment payload = arena.allocate(4096, 4096);
        List<ObjectKey> k = new ArrayList<>(KEYS);
        List<MemoryObj> objs = new ArrayList<>(KEYS);
        for (int i = 0; i < KEYS; i++) {
            byte[] hash = new byte[16];
            ByteBuffer.wrap(hash).putLong(8, i);
            k.add(ObjectKey.of("jmh/model", 0, hash));
            objs.add(MemoryObj.of(payload));
        }
        keys = List.copyOf(k);
        long id = adapter.submitStoreTask(keys, objs);
        L2StoreResult r = null;
        while (r == null) {
            EventFd.await(adapter.storeEventFd(), WAIT);
            r = adapter.popCompletedStoreTasks().get(id);
        }
        if (!r.success()) {
            throw new IllegalStateException("storing " + KEYS + " keys failed: " + adapter.reportStatus());
        }
        fd = adapter.lookupAndLockEventFd();
    }

    /**
     * Releases the locks the last lookup took, outside the measurement: a key's lock count is a u16, so
     * an iteration's tens of thousands of lookups must not pile them up.
     */
    @TearDown(Level.Invocation)
    public void unlock() {
        for (; locked > 0; locked--) {
            adapter.submitUnlock(keys);
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        adapter.close();
        if (device != null) {
            device.close();
        }
        arena.close();
    }

    @Benchmark
    public Bitmap lookupAndLockToSignal() throws IOException {
        long id = adapter.submitLookupAndLockTask(keys);
        Bitmap hits;
        do {
            if (!EventFd.await(fd, WAIT)) {
                throw new IllegalStateException("no lookup signal within " + WAIT);
            }
            hits = adapter.queryLookupAndLockResult(id);
        } while (hits == null);
        locked++;
        if (hits.cardinality() != KEYS) {
            throw new IllegalStateException("lookup found " + hits.cardinality() + " of " + KEYS + " keys");
        }
        return hits;
    }
}
