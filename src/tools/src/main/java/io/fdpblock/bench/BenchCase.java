package io.fdpblock.bench;

import io.fdpblock.device.IoEngine;

import java.util.ArrayList;
import java.util.List;

/**
 * One comparison of {@code fdpblock bench}: what our side runs and the fio job it is measured against.
 *
 * @param id short stable name (JSON, {@code --cases})
 * @param kind raw device I/O, or the RawBlock L2 adapter
 * @param engine our engine and fio's ({@code io_uring} / {@code io_uring_cmd})
 * @param rw fio's {@code --rw}: randread, randwrite, read (sequential), write (sequential)
 * @param blockSize bytes per operation (the adapter: bytes per chunk)
 * @param queueDepth operations in flight in all (the adapter: chunks in flight)
 * @param rings our rings (one submitting thread each, {@code queueDepth / rings} in flight each) and fio's
 *        {@code --numjobs} (each job {@code --iodepth=queueDepth / rings})
 */
public record BenchCase(String id, Kind kind, IoEngine engine, String rw, int blockSize, int queueDepth, int rings) {
    public BenchCase {
        if (rings < 1 || queueDepth % rings != 0) {
            throw new IllegalArgumentException("case " + id + ": queue depth " + queueDepth + " must split evenly over "
                    + rings + " ring(s)");
        }
    }

    public BenchCase(String id, Kind kind, IoEngine engine, String rw, int blockSize, int queueDepth) {
        this(id, kind, engine, rw, blockSize, queueDepth, 1);
    }

    /** Operations in flight per ring (per fio job). */
    public int depthPerRing() {
        return queueDepth / rings;
    }

    public enum Kind {
        /** Our BlockDevice pipeline vs fio, same engine and job. */
        RAW,
        /** RawBlock adapter storing 1 MiB chunks vs fio sequential write of 1 MiB at the same depth. */
        ADAPTER_STORE,
        /**
         * The same store with headroom: the keys cycled through leave {@link AdapterWorkload#HEADROOM_SLOTS}
         * slots free, as a cache that evicts ahead of its stores does; {@link #ADAPTER_STORE} fills every slot,
         * so each of its puts waits for the commit of the delete just before it.
         */
        ADAPTER_STORE_HEADROOM,
        /**
         * The store as a cache under an eviction controller runs it: every key group of the device cycled
         * through, and whenever the stored keys reach {@link AdapterWorkload#EVICT_HIGH} of the slots, the
         * oldest are deleted in one call down to {@link AdapterWorkload#EVICT_LOW} (the watermarks of the
         * README's {@code StorageManager} example), instead of one group before each store.
         */
        ADAPTER_STORE_EVICT_ROUNDS,
        /** RawBlock adapter loading 1 MiB chunks vs fio sequential read of 1 MiB at the same depth. */
        ADAPTER_LOAD,
        /**
         * The same load with the store's {@code verify_payload} "recovery": no CRC32C per chunk, a slot
         * header read with each instead (the CPU-per-byte target is judged on this one: it computes no checksum per chunk).
         */
        ADAPTER_LOAD_VERIFY_RECOVERY,
        /** Adapter lookup-and-lock of 1,000 keys, submit to eventfd signal: a latency, no fio reference. */
        ADAPTER_LOOKUP,
        /**
         * FDP placement through the block layer: our io_uring writes on {@code /dev/nvmeXnY} with a write
         * stream, against the same job without placement and through NVMe passthru on {@code /dev/ngXnY} with
         * the same placement id (no fio reference: no released fio sets write streams).
         */
        PLACEMENT
    }

    public static final int KIB4 = 4096;
    public static final int MIB = 1 << 20;

    public boolean isRandom() {
        return rw.startsWith("rand");
    }

    public boolean isWrite() {
        return rw.endsWith("write");
    }

    /** 4 KiB cases are judged by IOPS, 1 MiB ones by bandwidth. */
    public boolean judgedByIops() {
        return blockSize < MIB;
    }

    public boolean hasReference() {
        return kind != Kind.ADAPTER_LOOKUP && kind != Kind.PLACEMENT;
    }

    /** fio's --ioengine for this case. */
    public String fioEngine() {
        return engine == IoEngine.URING_CMD ? "io_uring_cmd" : "io_uring";
    }

    /** Human label, e.g. "randread 4k QD32 io_uring" or "adapter store 1m QD16". */
    public String label() {
        String bs = blockSize >= MIB ? (blockSize / MIB) + "m" : (blockSize / 1024) + "k";
        return switch (kind) {
            case RAW -> (rw.equals("read") ? "seqread" : rw.equals("write") ? "seqwrite" : rw) + " " + bs + " QD"
                    + queueDepth + " " + (engine == IoEngine.URING_CMD ? "uring_cmd" : "io_uring")
                    + (rings > 1 ? " " + rings + " rings" : "");
            case ADAPTER_STORE -> "adapter store " + bs + " QD" + queueDepth;
            case ADAPTER_STORE_HEADROOM -> "adapter store " + bs + " QD" + queueDepth + " headroom";
            case ADAPTER_STORE_EVICT_ROUNDS -> "adapter store " + bs + " QD" + queueDepth + " evict 95-90%";
            case ADAPTER_LOAD -> "adapter load " + bs + " QD" + queueDepth;
            case ADAPTER_LOAD_VERIFY_RECOVERY -> "adapter load " + bs + " QD" + queueDepth + " noCRC";
            case ADAPTER_LOOKUP -> "adapter lookup 1000 keys";
            case PLACEMENT -> "placement " + (rw.equals("write") ? "seqwrite" : rw) + " " + bs + " QD" + queueDepth;
        };
    }

    /** The reference side in words. */
    public String referenceLabel() {
        return switch (kind) {
            case RAW -> "fio --ioengine=" + fioEngine() + " --rw=" + rw + " --bs=" + blockSize + " --iodepth="
                    + depthPerRing() + (rings > 1 ? " --numjobs=" + rings + " --group_reporting" : "");
            case ADAPTER_STORE, ADAPTER_STORE_HEADROOM, ADAPTER_STORE_EVICT_ROUNDS, ADAPTER_LOAD,
                    ADAPTER_LOAD_VERIFY_RECOVERY -> "fio --ioengine=io_uring --rw=" + rw + " --bs=" + blockSize
                    + " --iodepth=" + queueDepth;
            case ADAPTER_LOOKUP -> "none (target: median < 100 us)";
            case PLACEMENT -> "ours: io_uring without placement on the block device, and uring_cmd with the same"
                    + " placement id on the generic device";
        };
    }

    /**
     * The raw cases of one engine: 4 KiB random read and write at QD 1 and 32, 1 MiB sequential write and
     * read at QD 16; for io_uring also 4 KiB random read at QD 128 over 2 rings (fio: 2 jobs of 64).
     */
    public static List<BenchCase> rawCases(IoEngine engine) {
        String p = engine == IoEngine.URING_CMD ? "nvme-" : "";
        List<BenchCase> l = new ArrayList<>();
        l.add(new BenchCase(p + "randread-4k-qd1", Kind.RAW, engine, "randread", KIB4, 1));
        l.add(new BenchCase(p + "randread-4k-qd32", Kind.RAW, engine, "randread", KIB4, 32));
        l.add(new BenchCase(p + "randwrite-4k-qd1", Kind.RAW, engine, "randwrite", KIB4, 1));
        l.add(new BenchCase(p + "randwrite-4k-qd32", Kind.RAW, engine, "randwrite", KIB4, 32));
        l.add(new BenchCase(p + "seqwrite-1m-qd16", Kind.RAW, engine, "write", MIB, 16));
        l.add(new BenchCase(p + "seqread-1m-qd16", Kind.RAW, engine, "read", MIB, 16));
        if (engine == IoEngine.IO_URING) { // several rings need as many cores
            l.add(new BenchCase(p + "randread-4k-2rings-qd128", Kind.RAW, engine, "randread", KIB4, 128, 2));
        }
        return l;
    }

    public static List<BenchCase> adapterCases() {
        return List.of(new BenchCase("adapter-store-1m-qd16", Kind.ADAPTER_STORE, IoEngine.IO_URING, "write", MIB, 16),
                new BenchCase("adapter-store-1m-qd16-headroom", Kind.ADAPTER_STORE_HEADROOM, IoEngine.IO_URING, "write",
                        MIB, 16),
                new BenchCase("adapter-store-1m-qd16-evict-rounds", Kind.ADAPTER_STORE_EVICT_ROUNDS, IoEngine.IO_URING,
                        "write", MIB, 16),
                new BenchCase("adapter-load-1m-qd16", Kind.ADAPTER_LOAD, IoEngine.IO_URING, "read", MIB, 16),
                new BenchCase("adapter-load-1m-qd16-verify-recovery", Kind.ADAPTER_LOAD_VERIFY_RECOVERY,
                        IoEngine.IO_URING, "read", MIB, 16),
                new BenchCase("adapter-lookup-1000", Kind.ADAPTER_LOOKUP, IoEngine.IO_URING, "lookup", 0, 1));
    }

    /**
     * Writes with a placement id through the kernel's write streams vs the same job without placement and
     * through NVMe passthru: 4 KiB random at QD 1 and 32, 1 MiB sequential at QD 16.
     */
    public static List<BenchCase> placementCases() {
        return List.of(new BenchCase("placement-randwrite-4k-qd1", Kind.PLACEMENT, IoEngine.IO_URING, "randwrite", KIB4, 1),
                new BenchCase("placement-randwrite-4k-qd32", Kind.PLACEMENT, IoEngine.IO_URING, "randwrite", KIB4, 32),
                new BenchCase("placement-seqwrite-1m-qd16", Kind.PLACEMENT, IoEngine.IO_URING, "write", MIB, 16));
    }

    /** Every case, in the order they run. */
    public static List<BenchCase> all() {
        List<BenchCase> l = new ArrayList<>(rawCases(IoEngine.IO_URING));
        l.addAll(rawCases(IoEngine.URING_CMD));
        l.addAll(placementCases());
        l.addAll(adapterCases());
        return l;
    }
}
