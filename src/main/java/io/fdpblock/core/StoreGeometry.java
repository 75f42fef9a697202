package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.linux.NativeFile;
import io.fdpblock.nvme.NvmeNamespace;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where a store's parts lie on its device: the capacity it uses, the data area after the metadata
 * area, and how many slots fit, checked against the device; and the device a configuration names.
 */
record StoreGeometry(long capacityBytes, long dataBase, long maxSlots) {
    /** The capacity the configuration asks of the device (0: all of it). */
    static long capacity(RawBlockCoreConfig config, BlockDevice device) {
        long deviceSize = device.sizeBytes();
        if (config.capacityBytes() > deviceSize) {
            throw new IllegalArgumentException("raw_block config: capacity_bytes = " + config.capacityBytes()
                    + " exceeds the size of " + device.path() + " (" + deviceSize + " bytes); use 0 for the whole device");
        }
        return config.capacityBytes() > 0 ? config.capacityBytes() : deviceSize;
    }

    /**
     * @param dataBase where the data area starts (the metadata area's size)
     * @throws IllegalArgumentException naming the value and the limit when the device cannot hold the layout
     */
    static StoreGeometry of(RawBlockCoreConfig config, BlockDevice device, long dataBase) {
        int blockAlign = config.blockAlign();
        int lbs = device.logicalBlockSize();
        if (blockAlign % lbs != 0) {
            throw new IllegalArgumentException("raw_block config: block_align = " + blockAlign + " is not a multiple of"
                    + " the device's logical block size " + lbs + " (" + device.path() + "); use " + lbs + " or more");
        }
        long capacity = capacity(config, device);
        long slotBytes = config.slotBytes();
        long maxSlots = capacity > dataBase ? (capacity - dataBase) / slotBytes : 0;
        if (maxSlots < 1) {
            throw new IllegalArgumentException("raw_block config: " + device.path() + " (" + capacity
                    + " bytes) has no room for a slot of " + slotBytes + " bytes after the meta area of " + dataBase
                    + " bytes; use a larger device or smaller meta_total_bytes / slot_bytes");
        }
        if (maxSlots > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("raw_block config: " + maxSlots + " slots exceed the index limit of "
                    + (Integer.MAX_VALUE - 8) + "; use a larger slot_bytes");
        }
        return new StoreGeometry(capacity, dataBase, maxSlots);
    }

    /**
     * The opened device, and the file this open created for it (null when it existed): a store whose
     * open is then refused removes that file, never one it found.
     */
    record Opened(BlockDevice device, Path created) {
        /** Closes the device and removes the file this open made; a failure to do either is added to {@code e}. */
        void abandon(Throwable e) {
            try {
                device.close();
            } catch (RuntimeException c) {
                e.addSuppressed(c);
            }
            if (created != null) {
                try {
                    Files.deleteIfExists(created);
                } catch (IOException | RuntimeException d) {
                    e.addSuppressed(d);
                }
            }
        }
    }

    /** Opens the device the configuration names with its engine, for one owner; creates a file of capacity_bytes. */
    static Opened openDevice(RawBlockCoreConfig config) throws IOException {
        IoEngine engine = config.ioEngine();
        checkPassthruTargets(config);
        if (engine == IoEngine.MEMORY) {
            if (config.capacityBytes() == 0) {
                throw new IllegalArgumentException("raw_block config: io_engine memory needs capacity_bytes > 0");
            }
            return new Opened(BlockDevices.memory(config.capacityBytes(), config.blockAlign()), null);
        }
        DeviceOptions options = DeviceOptions.of(engine).withQueueDepth(config.iouringQueueDepth())
                .withDirect(config.useOdirect()).withBuffers(1 << 20, 0).withExclusive(true);
        if (config.devicePaths().size() > 1) {
            return new Opened(openStriped(config, options), null);
        }
        Path path = Path.of(config.devicePath());
        boolean created = false;
        if (!Files.exists(path)) {
            if (engine == IoEngine.URING_CMD) {
                throw new IOException("device_path " + path + " does not exist: io_engine uring_cmd opens an NVMe"
                        + " namespace character device (/dev/ngXnY) and never creates one; check that the namespace"
                        + " is attached (nvme list) and name its generic device");
            }
            if (config.capacityBytes() == 0) {
                throw new IOException("device_path " + path + " does not exist: create it, or set capacity_bytes to"
                        + " have a file of that size created");
            }
            created = BlockDevices.createFileIfMissing(path, config.capacityBytes());
        }
        try {
            return new Opened(BlockDevices.open(path, options), created ? path : null);
        } catch (IOException | RuntimeException e) {
            if (created) { // e.g. O_DIRECT refused by its file system: the file it made is of no use
                try {
                    Files.deleteIfExists(path);
                } catch (IOException d) {
                    e.addSuppressed(d);
                }
            }
            throw e;
        }
    }

    /**
     * uring_cmd reaches nothing but an NVMe namespace's generic character device: a path that exists and is
     * something else (a regular file, a block device, a character device not named ngXnY) is a value error
     * of the configuration, refused before anything is opened or created, as LMCache refuses it. What only
     * an open tells (the namespace answering, permissions) is still checked at open.
     */
    private static void checkPassthruTargets(RawBlockCoreConfig config) {
        if (config.ioEngine() != IoEngine.URING_CMD) {
            return;
        }
        String key = config.devicePaths().size() > 1 ? "device_paths" : "device_path";
        for (String p : config.devicePaths()) {
            Path path = Path.of(p);
            NativeFile.Kind kind = NativeFile.kindOf(path);
            String notGeneric = kind == null ? null : NvmeNamespace.notAGenericDevice(path, kind);
            if (notGeneric != null) {
                throw new IllegalArgumentException("raw_block config: io_engine uring_cmd, " + key + " " + notGeneric);
            }
        }
    }

    /**
     * device_paths: every member must exist (a missing one is refused, never created: which size it
     * should have is the operator's call); each is opened exclusively, with its own ring(s), and their
     * labels are checked ({@link StripeMembers}) before anything else reads or writes them.
     */
    private static BlockDevice openStriped(RawBlockCoreConfig config, DeviceOptions options) throws IOException {
        List<Path> paths = new ArrayList<>();
        for (String p : config.devicePaths()) {
            Path path = Path.of(p);
            if (!Files.exists(path)) {
                throw new IOException("device_paths: " + path + " does not exist (of " + config.devicePaths() + "):"
                        + " create it (every member of a striped store must exist; none is created), or leave it out");
            }
            paths.add(path);
        }
        List<BlockDevice> opened = new ArrayList<>();
        try {
            for (Path p : paths) {
                opened.add(BlockDevices.open(p, options.withBuffers(options.bufferSize(), 0)));
            }
        } catch (IOException | RuntimeException e) {
            opened.forEach(BlockDevice::close);
            throw e;
        }
        return StripeMembers.open(config, opened, options);
    }

}
