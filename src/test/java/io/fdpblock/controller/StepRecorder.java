package io.fdpblock.controller;

import io.fdpblock.cache.L1Manager;
import io.fdpblock.controller.PrefetchController.Step;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.ObjectKey;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.state;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefetch step hook that records {@link Fixtures#state} at every step (on the controller thread, which
 * waits for it) and lets a test wait for the n-th time a step is reached, instead of sleeping.
 */
final class StepRecorder implements PrefetchController.StepHook {
    private final L1Manager l1;
    private final List<L2Adapter> adapters;
    private final Map<Step, List<String>> states = new EnumMap<>(Step.class);
    /** Runs on the controller thread at a step, after its state was recorded (null: nothing). */
    private volatile PrefetchController.StepHook then;

    StepRecorder(L1Manager l1, List<L2Adapter> adapters) {
        this.l1 = l1;
        this.adapters = List.copyOf(adapters);
    }

    /** Also runs {@code action} at every step, on the controller thread, while it waits. */
    StepRecorder then(PrefetchController.StepHook action) {
        this.then = action;
        return this;
    }

    @Override
    public void onStep(Step step, long requestId, List<ObjectKey> keys, int activeRequests) {
        synchronized (this) {
            states.computeIfAbsent(step, s -> new ArrayList<>()).add(state(l1, adapters, keys));
            notifyAll();
        }
        PrefetchController.StepHook h = then;
        if (h != null) {
            h.onStep(step, requestId, keys, activeRequests);
        }
    }

    /** Waits until {@code step} has been reached {@code nth} times; @return the state then */
    synchronized String await(Step step, int nth) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (count(step) < nth) {
            long left = deadline - System.nanoTime();
            assertThat(left).as("step %s reached %s times", step, nth).isPositive();
            wait(Math.max(1, left / 1_000_000));
        }
        return states.get(step).get(nth - 1);
    }

    /** How often {@code step} was reached so far. */
    synchronized int count(Step step) {
        List<String> s = states.get(step);
        return s == null ? 0 : s.size();
    }
}
