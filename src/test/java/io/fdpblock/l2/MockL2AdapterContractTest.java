package io.fdpblock.l2;

class MockL2AdapterContractTest extends L2AdapterContractTest {
    @Override
    protected L2Adapter create() throws Exception {
        return new MockL2Adapter();
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
