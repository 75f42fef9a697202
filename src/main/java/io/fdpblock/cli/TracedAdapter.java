package io.fdpblock.cli;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.RawBlockL2Adapter;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.sim.TracingBlockDevice;

import java.io.IOException;
import java.nio.file.Path;

/**
 * {@code run --trace}: the job's raw-block adapter over a {@link TracingBlockDevice}, so every write,
 * flush and deallocation the store makes lands in the trace. Closing it closes the adapter (its final
 * checkpoint is traced too), then the device, then the trace.
 */
final class TracedAdapter implements AutoCloseable {
    private final RawBlockL2Adapter adapter;
    private final TracingBlockDevice device;

    private TracedAdapter(RawBlockL2Adapter adapter, TracingBlockDevice device) {
        this.adapter = adapter;
        this.device = device;
    }

    static TracedAdapter open(String adapterJson, Path traceFile) throws IOException {
        RawBlockCoreConfig cfg = RawBlockCoreConfig.fromJson(adapterJson);
        // the options the store would open its own device with (RawBlockCore opens it privately)
        BlockDevice dev = BlockDevices.open(Path.of(cfg.devicePath()), DeviceOptions.of(cfg.ioEngine())
                .withQueueDepth(cfg.iouringQueueDepth()).withDirect(cfg.useOdirect()).withBuffers(1 << 20, 0));
        TracingBlockDevice traced;
        try {
            traced = TracingBlockDevice.wrap(dev, traceFile);
        } catch (IOException | RuntimeException e) {
            dev.close();
            throw e;
        }
        try {
            return new TracedAdapter(RawBlockL2Adapter.open(cfg, traced), traced);
        } catch (IOException | RuntimeException e) {
            traced.close();
            throw e;
        }
    }

    RawBlockL2Adapter adapter() {
        return adapter;
    }

    /** Records written so far. */
    long records() {
        return device.trace().records();
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
