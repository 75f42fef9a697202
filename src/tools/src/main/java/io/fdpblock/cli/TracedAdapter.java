package io.fdpblock.cli;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.sim.PlacementEmulatingDevice;
import io.fdpblock.sim.TracingBlockDevice;

import java.io.IOException;
import java.nio.file.Path;

/**
 * {@code run --trace} and {@code --emulate-fdp}: the job's raw-block adapter over a device of the caller's:
 * a {@link TracingBlockDevice}, so every write, flush and deallocation the store makes lands in the trace,
 * and/or a {@link PlacementEmulatingDevice}, so a file acts as an FDP namespace (placement ids, a reclaim
 * unit size, deallocations). Closing it closes the adapter (its final checkpoint is traced too), then the
 * device, then the trace.
 */
final class TracedAdapter implements AutoCloseable {
    private final RawBlockL2Adapter adapter;
    private final BlockDevice device;
    private final TracingBlockDevice traced;

    private TracedAdapter(RawBlockL2Adapter adapter, BlockDevice device, TracingBlockDevice traced) {
        this.adapter = adapter;
        this.device = device;
        this.traced = traced;
    }

    static TracedAdapter open(String adapterJson, Path traceFile) throws IOException {
        return open(adapterJson, traceFile, 0);
    }

    /**
     * @param traceFile where to trace, or null
     * @param emulatedReclaimUnitBytes &gt; 0: the device acts as an FDP namespace with
     *        {@link KvJobSetup#EMULATED_PLACEMENT_IDS} and reclaim units of this size
     */
    static TracedAdapter open(String adapterJson, Path traceFile, long emulatedReclaimUnitBytes) throws IOException {
        RawBlockCoreConfig cfg = RawBlockCoreConfig.fromJson(adapterJson);
        // the options the store would open its own device with (RawBlockCore opens it privately)
        BlockDevice dev = BlockDevices.open(Path.of(cfg.devicePath()), DeviceOptions.of(cfg.ioEngine())
                .withQueueDepth(cfg.iouringQueueDepth()).withDirect(cfg.useOdirect()).withBuffers(1 << 20, 0));
        TracingBlockDevice traced = null;
        try {
            if (emulatedReclaimUnitBytes > 0) {
                dev = new PlacementEmulatingDevice(dev, KvJobSetup.EMULATED_PLACEMENT_IDS, emulatedReclaimUnitBytes);
            }
            if (traceFile != null) { // outside the emulation: the trace sees its ids, unit size and deallocations
                traced = TracingBlockDevice.wrap(dev, traceFile);
                dev = traced;
            }
        } catch (IOException | RuntimeException e) {
            dev.close();
            throw e;
        }
        try {
            return new TracedAdapter(RawBlockL2Adapter.open(cfg, dev), dev, traced);
        } catch (IOException | RuntimeException e) {
            dev.close();
            throw e;
        }
    }

    RawBlockL2Adapter adapter() {
        return adapter;
    }

    /** Records written so far (0 without a trace). */
    long records() {
        return traced == null ? 0 : traced.trace().records();
    }

    @Override
    public void close() {
        try {
            adapter.close();
        } finally {
            device.close();
        }
    }
}
