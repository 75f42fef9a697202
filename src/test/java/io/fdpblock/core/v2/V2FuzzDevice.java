package io.fdpblock.core.v2;

import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.StoreRefusedException;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.fuzz.Fuzzing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.zip.CRC32C;

/**
 * The device the fdpblock_v2 fuzz targets decode from: a small store (512-byte blocks and slot headers,
 * 8 slots of 4 KiB, the smallest metadata area the format gives them: two snapshot areas of 4 KiB and a
 * log of 32 KiB) on one memory device that lives as long as the JVM. Each input rewrites the whole
 * metadata area: both superblocks of the input's incarnation, then what the target puts there.
 *
 * <p>Optionally a store is opened on it ({@link #openStore}): the decoders' outputs are what recovery
 * builds the index from, so it checks that what they hand over cannot make the store itself fail other
 * than by refusing the device with a message.
 */
final class V2FuzzDevice {
    static final int BLOCK = 512;
    static final int HEADER = 512;
    static final long SLOT = 4096;
    static final int SLOTS = 8;
    static final long META = V2Layout.requiredMetaBytes(BLOCK, SLOTS, BLOCK);
    static final long CAPACITY = META + SLOTS * SLOT;

    private static BlockDevice device;
    private static MemorySegment buffer;
    /** Kept so that the level set on it stays (java.util.logging holds its loggers weakly). */
    private static final Logger CORE_LOG = Logger.getLogger("io.fdpblock.core");

    private V2FuzzDevice() {}

    /** The layout of this geometry with {@code incarnation}: what a store formats it with. */
    static V2Layout layout(long incarnation) {
        return V2Layout.create(BLOCK, HEADER, SLOT, CAPACITY, META, BLOCK, incarnation);
    }

    /** A metadata area holding both superblocks of {@code layout}, zeros elsewhere. */
    static byte[] image(V2Layout layout) {
        byte[] meta = new byte[(int) META];
        MemorySegment sb = MemorySegment.ofArray(new byte[BLOCK]);
        layout.write(sb);
        MemorySegment.copy(sb, 0, MemorySegment.ofArray(meta), 0, BLOCK);
        MemorySegment.copy(sb, 0, MemorySegment.ofArray(meta), BLOCK, BLOCK);
        return meta;
    }

    /** The device, its metadata area replaced by {@code meta}. */
    static synchronized BlockDevice holding(byte[] meta) {
        try {
            if (device == null) {
                device = BlockDevices.memory(CAPACITY, BLOCK);
                buffer = Arena.global().allocate(META, 4096);
            }
            MemorySegment.copy(meta, 0, buffer, ValueLayout.JAVA_BYTE, 0, meta.length);
            IoBatch b = new IoBatch(1);
            b.write(0, buffer);
            device.execute(b);
            return device;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code input} from {@code from}, zero-padded or cut to {@code size} bytes. */
    static byte[] slice(byte[] input, int from, long size) {
        return Fuzzing.padded(input, from, (int) size);
    }

    static int crc32c(byte[] b, int from, int len) {
        CRC32C c = new CRC32C();
        c.update(b, from, len);
        return (int) c.getValue();
    }

    static void putU32(byte[] b, int off, int v) {
        ByteBuffer.wrap(b, off, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(v);
    }

    static long u64(byte[] b, int off) {
        return Fuzzing.u64(b, off);
    }

    static RawBlockCoreConfig config() {
        return RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(CAPACITY).metaTotalBytes(META)
                .blockAlign(BLOCK).headerBytes(HEADER).metaFormat(RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)
                .metaEnablePeriodic(false).ioEngine(IoEngine.MEMORY).build();
    }

    /**
     * Opens a store on the device as it is, then closes it. Documented: the store refuses the device
     * ({@link StoreRefusedException}) or fails with an IOException, each with a message. Once open its
     * free slots are some of its slots, and each key holds a slot of its own: a log whose CRCs hold but
     * that puts several keys on one slot (no store writes that: a slot is reused only once its delete
     * record is durable) opens with the latest claim of each slot only.
     */
    static void openStore() {
        CORE_LOG.setLevel(Level.OFF); // a recovery note per input would flood the run
        RawBlockCore core;
        try {
            core = RawBlockCore.open(config(), device);
        } catch (IOException e) {
            Fuzzing.requireMessage(e);
            return;
        }
        try {
            if (core.keyCount() < 0 || core.freeSlots() < 0 || core.freeSlots() > SLOTS) {
                throw Fuzzing.wrong("keys, free slots of the recovered store", core.keyCount() + ", "
                        + core.freeSlots(), "at least 0, and at most " + SLOTS + " free");
            }
            if ((long) core.keyCount() + core.freeSlots() > SLOTS) {
                throw Fuzzing.wrong("keys + free slots of the recovered store", core.keyCount() + " + "
                        + core.freeSlots(), "at most " + SLOTS + ": one slot per key, no key on a free slot");
            }
        } finally {
            try {
                core.close();
            } catch (IOException e) {
                throw new AssertionError("closing a store that changed nothing failed", e);
            }
        }
    }
}
