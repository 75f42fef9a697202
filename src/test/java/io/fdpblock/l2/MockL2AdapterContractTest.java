package io.fdpblock.l2;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

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

    /** As LMCache's storage manager stamps an adapter it builds: with its registered type, not shared. */
    @Test
    void anAdapterMadeFromJsonIsNamedByItsTypeAndOneMadeDirectlyIsUnnamed() throws Exception {
        try (L2Adapter a = new MockL2Adapter()) {
            assertThat(a.reportStatus()).containsEntry("backend", "").containsEntry("backend_shared", false);
        }
        try (L2Adapter a = L2Adapters.create("{\"type\":\"mock\"}")) {
            assertThat(a.reportStatus()).containsEntry("backend", "mock").containsEntry("backend_shared", false);
        }
    }
}
