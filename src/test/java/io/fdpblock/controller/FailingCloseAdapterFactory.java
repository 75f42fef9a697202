package io.fdpblock.controller;

import com.fasterxml.jackson.databind.JsonNode;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2AdapterFactory;
import io.fdpblock.l2.MockL2Adapter;

import java.io.IOException;

/** Test-only type {@code "failing_close"}: a mock whose close() fails, as a failed final checkpoint does. */
public final class FailingCloseAdapterFactory implements L2AdapterFactory {
    @Override
    public String type() {
        return "failing_close";
    }

    @Override
    public L2Adapter create(JsonNode config) throws IOException {
        GatedAdapter a = new GatedAdapter(new MockL2Adapter());
        a.failClose = true;
        return a;
    }
}
