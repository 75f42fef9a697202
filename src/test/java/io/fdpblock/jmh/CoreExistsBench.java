package io.fdpblock.jmh;

import com.dynatrace.hash4j.hashing.HashValue128;
import io.fdpblock.core.KeyBatch;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;
import io.fdpblock.util.KeyHash;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link RawBlockCore#exists} of 1,000 keys on a memory device holding them (an in-memory question:
 * the index under the core's lock), plain and with lock + unlock.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class CoreExistsBench {
    static final int KEYS = 1000;

    private BlockDevice device;
    private RawBlockCore core;
    private Arena arena;
    private List<String> keys;
    /** The same keys with their hashes, as the L2 adapter hands them over: the probes alone. */
    private KeyBatch hashed;

    @Setup(Level.Trial)
    public void open() throws IOException {
        int slot = 8192;
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, KEYS + 8); // the default format's, for a full device
        long capacity = meta + (long) (KEYS + 8) * slot;
        device = BlockDevices.memory(capacity, 4096);
        RawBlockCoreConfig cfg = RawBlockCoreConfig.builder("memory:jmh", slot).capacityBytes(capacity)
                .metaTotalBytes(meta).ioEngine(IoEngine.MEMORY).loadCheckpointOnInit(false)
                .metaEnablePeriodic(false).build();
        core = RawBlockCore.open(cfg, device);
        arena = Arena.ofShared();
        MemorySegment payload = arena.allocate(4096, 4096);
        keys = new ArrayList<>(KEYS);
        List<PutRequest> puts = new ArrayList<>(KEYS);
        for (int i = 0; i < KEYS; i++) {
            byte[] hash = new byte[16];
            ByteBuffer.wrap(hash).putLong(8, i);
            String k = KeyCodec.encode("jmh/model", 0, hash, "", 0);
            keys.add(k);
            puts.add(PutRequest.of(k, payload));
        }
        boolean[] ok = core.put(puts);
        for (boolean b : ok) {
            if (!b) {
                throw new IllegalStateException("pre-populating " + KEYS + " keys failed: " + core.status());
            }
        }
        keys = List.copyOf(keys);
        long[] h1 = new long[KEYS];
        long[] h2 = new long[KEYS];
        for (int i = 0; i < KEYS; i++) {
            HashValue128 h = KeyHash.of(keys.get(i));
            h1[i] = h.getMostSignificantBits();
            h2[i] = h.getLeastSignificantBits();
        }
        List<String> texts = keys;
        hashed = new KeyBatch() {
            @Override
            public int size() {
                return KEYS;
            }

            @Override
            public String text(int i) {
                return texts.get(i);
            }

            @Override
            public boolean carriesHashes() {
                return true;
            }

            @Override
            public long h1(int i) {
                return h1[i];
            }

            @Override
            public long h2(int i) {
                return h2[i];
            }
        };
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        core.close();
        device.close();
        arena.close();
    }

    @Benchmark
    public boolean[] exists1000() {
        return core.exists(keys, false);
    }

    @Benchmark
    public boolean[] existsHashed1000() {
        return core.exists(hashed, false);
    }

    @Benchmark
    public boolean[] existsLockUnlockHashed1000() {
        boolean[] r = core.exists(hashed, true);
        core.unlock(hashed);
        return r;
    }

    @Benchmark
    public boolean[] existsLockUnlock1000() {
        boolean[] r = core.exists(keys, true);
        core.unlock(keys);
        return r;
    }
}
