package io.fdpblock.l2;

/** The same contract when completions come later, from another thread (simulated bandwidth). */
class MockWithBandwidthContractTest extends L2AdapterContractTest {
    @Override
    protected L2Adapter create() throws Exception {
        return L2Adapters.create("{\"type\":\"mock\",\"bandwidth_bytes_per_sec\":2000000000}");
    }

    @Override
    protected void breakInternals(L2Adapter adapter) {
        ((MockL2Adapter) adapter).breakInternals();
    }

    @Override
    protected int lockCount(L2Adapter adapter, ObjectKey key) {
        return ((MockL2Adapter) adapter).lockCount(key);
    }
}
