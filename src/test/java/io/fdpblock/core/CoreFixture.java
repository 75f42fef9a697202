package io.fdpblock.core;

import io.fdpblock.l2.KeyCodec;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.FaultInjectingDevice;
import io.fdpblock.device.IoEngine;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/** A device (memory, or a file through io_uring) that outlives the cores opened on it. */
public final class CoreFixture implements AutoCloseable {
    public static final long SLOT = 64 << 10;
    public static final long META = 1 << 20;

    final IoEngine engine;
    final RawBlockCoreConfig.MetaFormat format;
    /** The metadata area of this fixture's format: {@link #META} for v1, fdpblock_v2's need for its slots. */
    public final long meta;
    final Path file;
    public final FaultInjectingDevice device;
    final Arena arena = Arena.ofShared();
    public final long capacity;
    private final List<RawBlockCore> cores = new ArrayList<>();

    /** A device of exactly {@code slots} slots in fdpblock_v2, the default format. */
    public CoreFixture(IoEngine engine, Path dir, int slots) throws IOException {
        this(engine, dir, slots, RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2);
    }

    public CoreFixture(IoEngine engine, Path dir, int slots, RawBlockCoreConfig.MetaFormat format) throws IOException {
        this.engine = engine;
        this.format = format;
        this.meta = format == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? META
                : RawBlockCoreConfig.v2MetaBytesFor(4096, slots);
        this.capacity = meta + slots * SLOT;
        if (engine == IoEngine.MEMORY) {
            file = null;
            device = new FaultInjectingDevice(BlockDevices.memory(capacity, 4096));
        } else {
            file = BlockDevices.createFile(dir.resolve("core-dev.img"), capacity);
            device = new FaultInjectingDevice(BlockDevices.open(file,
                    DeviceOptions.of(engine).withBuffers(1 << 20, 0)));
        }
    }

    public RawBlockCoreConfig.Builder config() {
        return RawBlockCoreConfig.builder(file == null ? "memory" : file.toString(), SLOT)
                .capacityBytes(capacity).metaTotalBytes(meta).metaFormat(format).metaEnablePeriodic(false)
                .ioEngine(engine);
    }

    public RawBlockCore open() throws IOException {
        return open(config().build());
    }

    public RawBlockCore open(RawBlockCoreConfig config) throws IOException {
        RawBlockCore core = RawBlockCore.open(config, device);
        cores.add(core);
        return core;
    }

    /** Payload bytes for a key: a pattern from its name, so a read can be checked from the key alone. */
    public MemorySegment payload(String key, long size) {
        MemorySegment seg = arena.allocate(size, 4096);
        SplittableRandom r = new SplittableRandom(key.hashCode());
        for (long i = 0; i < size; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
        return seg;
    }

    /** The put of {@link #key key(i)} with its {@link #payload} of {@code size} bytes. */
    public PutRequest put(int i, long size) {
        return PutRequest.of(key(i), payload(key(i), size));
    }

    public MemorySegment buffer(long size) {
        return arena.allocate(size, 4096);
    }

    public static String key(int i) {
        return KeyCodec.encode("org/model", 7, new byte[] {0, 0, 3, (byte) i, (byte) (i >> 8)}, "", 0);
    }

    @Override
    public void close() throws IOException {
        for (RawBlockCore c : cores) {
            c.close();
        }
        device.close();
        arena.close();
    }

    /** Read-modify-write of whole 4 KiB blocks, straight on the device (what a crash or bit rot leaves). */
    public static void patch(BlockDevice dev, long offset, int length, Consumer<MemorySegment> edit) throws IOException {
        long start = offset / 4096 * 4096;
        long len = (offset + length + 4095) / 4096 * 4096 - start;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(len, 4096);
            IoBatch b = new IoBatch();
            b.read(start, buf);
            dev.execute(b);
            edit.accept(buf.asSlice(offset - start, length));
            b.reset();
            b.write(start, buf);
            dev.execute(b);
        }
    }
}
