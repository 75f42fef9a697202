package io.fdpblock.adapter;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterContractTest;
import io.fdpblock.l2.ObjectKey;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

/** LMCache's L2 contract, run against the raw-block adapter over a file-backed store. */
class RawBlockL2AdapterContractTest extends L2AdapterContractTest {
    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final long SLOT_BYTES = 16 << 10;

    @TempDir
    Path dir;

    static RawBlockCoreConfig.Builder config(Path file) {
        return RawBlockCoreConfig.builder(file.toString(), SLOT_BYTES).capacityBytes(RawBlockCoreConfig.v2MetaBytesFor(4096, 2048) + 2048L * SLOT_BYTES).ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
    }

    @Override
    protected L2Adapter create() throws Exception {
        return RawBlockL2Adapter.open(config(dir.resolve("raw-" + SEQ.incrementAndGet() + ".img")).build());
    }

    @Override
    protected void breakInternals(L2Adapter adapter) throws Exception {
        ((RawBlockL2Adapter) adapter).core().close(); // the store goes away under the adapter
    }

    /** A newly stored key reports the slot it occupies, as LMCache's raw_block adapter does. */
    @Override
    protected long storedBytes(int payloadBytes) {
        return SLOT_BYTES;
    }

    @Override
    protected int lockCount(L2Adapter adapter, ObjectKey key) {
        return ((RawBlockL2Adapter) adapter).core().lockCount(key.encoded());
    }
}
