package io.fdpblock.l2;

import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

class RawBlockL2AdapterContractTest extends L2AdapterContractTest {
    private static final AtomicInteger SEQ = new AtomicInteger();

    @TempDir
    Path dir;

    static RawBlockCoreConfig.Builder config(Path file) {
        return RawBlockCoreConfig.builder(file.toString(), 16 << 10).capacityBytes(RawBlockCoreConfig.v2MetaBytesFor(4096, 2048) + 2048L * (16 << 10)).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
    }

    @Override
    L2Adapter create() throws Exception {
        return RawBlockL2Adapter.open(config(dir.resolve("raw-" + SEQ.incrementAndGet() + ".img")).build());
    }

    @Override
    void breakInternals(L2Adapter adapter) throws Exception {
        ((RawBlockL2Adapter) adapter).core().close(); // the store goes away under the adapter
    }

    @Override
    int lockCount(L2Adapter adapter, ObjectKey key) {
        return ((RawBlockL2Adapter) adapter).core().lockCount(key.encoded());
    }
}
