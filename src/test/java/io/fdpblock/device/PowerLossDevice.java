package io.fdpblock.device;

import io.fdpblock.linux.Errno;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A device with a volatile write cache that loses power: what SIGKILL cannot test (the page cache
 * survives a killed process, a power cut does not).
 *
 * <p>A completed write lands in the cache: reads see it at once, but it is durable only once a flush
 * completes after it. At the crash point (the {@code n}-th operation submitted, counted from
 * {@link #crashAtOp}) power goes: that operation and every later one fail with EIO, and each write
 * not covered by a completed flush is, independently, dropped, kept whole, or torn to a random
 * 4 KiB-aligned prefix (applied in completion order). {@link #afterPowerLoss()} then gives the device
 * as it comes back: exactly the durable bytes.
 *
 * <p>Submissions complete on the caller's thread, so a single-threaded workload is reproducible from
 * its seed. Deallocation, when enabled, reads back as zeros (DLFEAT 001b) and is volatile like a write.
 */
public final class PowerLossDevice implements BlockDevice {
    private static final int TEAR_UNIT = 4096;

    private final Arena arena = Arena.ofShared();
    private final long size;
    private final int blockSize;
    /** What survives a power loss. */
    private final MemorySegment durable;
    /** What reads see: durable plus the cache. */
    private final MemorySegment visible;
    private final List<Pending> cache = new ArrayList<>();
    private final AlignedBufferPool buffers = new AlignedBufferPool(4096, 0, 4096);
    private final boolean deallocates;
    private final SplittableRandom random;
    private long ops;
    private long crashAt = Long.MAX_VALUE;
    private boolean dead;
    private long writesDropped;
    private long writesTorn;
    private long writesKept;

    /** One completed write (or deallocation) not yet covered by a flush. */
    private record Pending(long offset, byte[] data) {}

    /**
     * @param deallocates whether it takes deallocations (as an FDP SSD does), reading them back as zeros
     * @param seed what it tears and drops at the crash
     */
    public PowerLossDevice(long size, int blockSize, boolean deallocates, long seed) {
        this.size = size;
        this.blockSize = blockSize;
        this.durable = arena.allocate(size, 4096);
        this.visible = arena.allocate(size, 4096);
        this.deallocates = deallocates;
        this.random = new SplittableRandom(seed);
    }

    private PowerLossDevice(PowerLossDevice crashed, long seed) {
        this(crashed.size, crashed.blockSize, crashed.deallocates, seed);
        durable.copyFrom(crashed.durable);
        visible.copyFrom(crashed.durable);
    }

    /** Power goes when the {@code n}-th operation from now is submitted (1 = the next one). */
    public synchronized void crashAtOp(long n) {
        crashAt = ops + n;
    }

    /** Operations submitted so far (reads, writes, flushes, deallocations). */
    public synchronized long ops() {
        return ops;
    }

    public synchronized boolean crashed() {
        return dead;
    }

    /** The device after the power came back: the durable bytes, an empty cache, alive again. */
    public synchronized PowerLossDevice afterPowerLoss(long seed) {
        if (!dead) {
            powerLoss();
        }
        return new PowerLossDevice(this, seed);
    }

    /** Cuts the power now. */
    public synchronized void powerLoss() {
        if (dead) {
            return;
        }
        dead = true;
        for (Pending p : cache) {
            int fate = random.nextInt(3);
            int len = p.data().length;
            if (fate == 0) {
                writesDropped++;
                continue;
            }
            if (fate == 1 && len > TEAR_UNIT) {
                len = random.nextInt(len / TEAR_UNIT) * TEAR_UNIT; // any 4 KiB-aligned prefix, maybe none
                writesTorn++;
            } else {
                writesKept++;
            }
            MemorySegment.copy(MemorySegment.ofArray(p.data()), 0, durable, p.offset(), len);
        }
        cache.clear();
    }

    /** Writes the crash dropped, tore and kept. */
    public synchronized long[] crashFates() {
        return new long[] {writesDropped, writesTorn, writesKept};
    }

    @Override
    public String path() {
        return "power-loss:" + size;
    }

    @Override
    public IoEngine engine() {
        return IoEngine.MEMORY;
    }

    @Override
    public long sizeBytes() {
        return size;
    }

    @Override
    public int logicalBlockSize() {
        return blockSize;
    }

    @Override
    public int maxTransferBytes() {
        return 1 << 30;
    }

    @Override
    public int bufferAlignment() {
        return 1;
    }

    @Override
    public boolean supportsDeallocate() {
        return deallocates;
    }

    @Override
    public AlignedBufferPool buffers() {
        return buffers;
    }

    @Override
    public void submit(IoBatch batch, IoBatch.Callback callback) throws IOException {
        batch.devicePath = path();
        synchronized (this) {
            for (int i = 0; i < batch.size(); i++) {
                ops++;
                if (!dead && ops >= crashAt) {
                    powerLoss();
                }
                if (dead) {
                    batch.complete(i, -Errno.EIO);
                    continue;
                }
                long off = batch.offset(i);
                long len = batch.length(i);
                if (!batch.isFlush(i) && (off < 0 || len <= 0 || off % blockSize != 0 || len % blockSize != 0
                        || off > size || len > size - off)) {
                    throw new IOException(batch.describe(i) + ": outside the device or misaligned");
                }
                if (batch.isRead(i)) {
                    MemorySegment.copy(visible, off, batch.buffer(i), 0, len);
                    batch.complete(i, len);
                } else if (batch.isWrite(i)) {
                    byte[] data = new byte[(int) len];
                    MemorySegment.copy(batch.buffer(i), 0, MemorySegment.ofArray(data), 0, len);
                    MemorySegment.copy(MemorySegment.ofArray(data), 0, visible, off, len);
                    cache.add(new Pending(off, data));
                    batch.complete(i, len);
                } else if (batch.isDeallocate(i)) {
                    if (deallocates) {
                        visible.asSlice(off, len).fill((byte) 0);
                        cache.add(new Pending(off, new byte[(int) len]));
                    }
                    batch.complete(i, 0);
                } else { // flush: everything completed before it is durable
                    for (Pending p : cache) {
                        MemorySegment.copy(MemorySegment.ofArray(p.data()), 0, durable, p.offset(), p.data().length);
                    }
                    cache.clear();
                    batch.complete(i, 0);
                }
            }
        }
        try {
            callback.onComplete(batch);
        } catch (Throwable t) {
            // as the real engines: a callback's failure never escapes into the I/O path
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            dead = true;
        }
    }

    /** Frees the memory (after {@link #afterPowerLoss} took what it needs). */
    public void release() {
        arena.close();
    }
}
