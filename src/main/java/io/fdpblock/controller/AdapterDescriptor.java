package io.fdpblock.controller;

import io.fdpblock.l2.L2Adapter;

import java.util.ArrayList;
import java.util.List;

/**
 * An adapter as the policies see it: its index in the controller's adapter list (the index that store
 * targets and load plans are keyed by) and the adapter itself (for {@code usage()} or
 * {@code reportStatus()}; a policy must not submit tasks to it).
 */
public record AdapterDescriptor(int index, L2Adapter adapter) {
    public AdapterDescriptor {
        if (index < 0) {
            throw new IllegalArgumentException("adapter index " + index + " must be >= 0");
        }
        if (adapter == null) {
            throw new IllegalArgumentException("adapter " + index + " is null");
        }
    }

    /** A name for messages. */
    public String name() {
        return "L2[" + index + "] " + adapter;
    }

    static List<AdapterDescriptor> of(List<L2Adapter> adapters) {
        List<AdapterDescriptor> out = new ArrayList<>(adapters.size());
        for (int i = 0; i < adapters.size(); i++) {
            out.add(new AdapterDescriptor(i, adapters.get(i)));
        }
        return List.copyOf(out);
    }
}
