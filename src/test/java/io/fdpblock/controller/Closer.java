package io.fdpblock.controller;

import java.util.ArrayDeque;
import java.util.Deque;

/** Closes what a test opened, last opened first (controllers, then adapters, then L1). */
final class Closer {
    private final Deque<AutoCloseable> items = new ArrayDeque<>();

    <T extends AutoCloseable> T add(T item) {
        items.push(item);
        return item;
    }

    void close() throws Exception {
        Exception first = null;
        while (!items.isEmpty()) {
            try {
                items.pop().close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
