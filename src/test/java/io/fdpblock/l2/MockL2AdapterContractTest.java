package io.fdpblock.l2;

class MockL2AdapterContractTest extends L2AdapterContractTest {
    @Override
    L2Adapter create() throws Exception {
        return new MockL2Adapter();
    }

    @Override
    void breakInternals(L2Adapter adapter) {
        ((MockL2Adapter) adapter).breakInternals();
    }

    @Override
    int lockCount(L2Adapter adapter, ObjectKey key) {
        return ((MockL2Adapter) adapter).lockCount(key);
    }
}
