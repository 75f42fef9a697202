package io.fdpblock.adapter;

import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.L2StoreResult;
import io.fdpblock.linux.EventFd;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Waits for an adapter's tasks on their event fds, as the L2 contract tests do. */
final class AdapterTasks {
    static final Duration WAIT = Duration.ofSeconds(30);

    private AdapterTasks() {}

    /** Waits on the store fd until task {@code id} is popped. */
    static L2StoreResult awaitStore(L2Adapter a, long id) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            EventFd.await(a.storeEventFd(), Duration.ofMillis(200));
            Map<Long, L2StoreResult> done = a.popCompletedStoreTasks();
            if (done.containsKey(id)) {
                return done.get(id);
            }
        }
        throw new AssertionError("store task " + id + " did not complete");
    }

    static Bitmap awaitLookup(L2Adapter a, long id) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        Bitmap b;
        while ((b = a.queryLookupAndLockResult(id)) == null && System.nanoTime() < deadline) {
            EventFd.await(a.lookupAndLockEventFd(), Duration.ofMillis(200));
        }
        assertThat(b).as("lookup %d completed", id).isNotNull();
        return b;
    }

    static Bitmap awaitLoad(L2Adapter a, long id) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        Bitmap b;
        while ((b = a.queryLoadResult(id)) == null && System.nanoTime() < deadline) {
            EventFd.await(a.loadEventFd(), Duration.ofMillis(200));
        }
        assertThat(b).as("load %d completed", id).isNotNull();
        return b;
    }
}
