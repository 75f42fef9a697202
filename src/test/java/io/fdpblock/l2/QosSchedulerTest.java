package io.fdpblock.l2;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link QosScheduler} on its own: admission order and shares, deterministic (no adapters, no threads,
 * no clock: an admission happens only when the test completes what is in flight).
 */
@Tag("unit")
class QosSchedulerTest {
    private final List<Ticket> admitted = new ArrayList<>();
    private final List<Ticket> inFlight = new ArrayList<>();

    private final class Ticket extends QosScheduler.Ticket {
        final String name;

        Ticket(Object owner, String salt, long cost, String name) {
            super(owner, salt, cost);
            this.name = name;
        }

        @Override
        void admit() {
            admitted.add(this);
            inFlight.add(this);
        }
    }

    private Ticket ticket(String salt, long cost, String name) {
        return new Ticket(this, salt, cost, name);
    }

    private void submit(QosScheduler s, Ticket... tickets) {
        s.enqueue(List.of(tickets));
        s.pump();
    }

    /** Completes the oldest operation in flight (which admits what that allows). */
    private void completeOldest(QosScheduler s) {
        s.complete(inFlight.removeFirst());
    }

    private String order() {
        StringBuilder b = new StringBuilder();
        for (Ticket t : admitted) {
            b.append(t.name);
        }
        return b.toString();
    }

    @Test
    void underContentionWeight300GetsThreeAdmissionsForEveryOneOfWeight100() {
        QosScheduler s = QosScheduler.builder().quantumBytes(1).maxInflightTasks(1).weight("hi", 300).weight("lo", 100)
                .build();
        submit(s, ticket("blocker", 1, "X"));
        for (int i = 0; i < 20; i++) {
            submit(s, ticket("lo", 1, "L"), ticket("hi", 1, "H"));
        }
        assertThat(order()).as("one in flight at a time: the rest waits").isEqualTo("X");
        for (int i = 0; i < 40; i++) {
            completeOldest(s);
        }
        // rounds of one quantum each: lo 1, hi 3; once hi is drained lo has the device to itself
        assertThat(order().substring(1)).isEqualTo("LHHH".repeat(6) + "LHH" + "L".repeat(13));
        completeOldest(s);
        assertThat(s.snapshot()).containsEntry("inflight_tasks", 0).containsEntry("queued_tasks", 0L);
    }

    @Test
    void equalWeightsShareBytesNotOperations() {
        QosScheduler s = QosScheduler.builder().quantumBytes(16384).maxInflightTasks(1).build();
        submit(s, ticket("x", 1, "X"));
        for (int i = 0; i < 8; i++) {
            submit(s, ticket("small", 4096, "s"));
        }
        for (int i = 0; i < 4; i++) {
            submit(s, ticket("big", 16384, "B"));
        }
        for (int i = 0; i < 12; i++) {
            completeOldest(s);
        }
        assertThat(order()).isEqualTo("X" + "ssssB" + "ssssB" + "BB");
    }

    @Test
    void roundsInWhichNoSaltCanAdmitAreSkippedExactly() {
        // quantum per round: weight 1 -> 1 byte, weight 100 -> 100 bytes; every operation costs 1000 bytes.
        // "a" needs 1000 rounds, "b" 10 per operation: "b" admits 99 times, then in round 1000 "a" comes first.
        QosScheduler s = QosScheduler.builder().quantumBytes(100).maxInflightTasks(1).weight("a", 1).build();
        submit(s, ticket("x", 1, "X"));
        submit(s, ticket("a", 1000, "a"));
        for (int i = 0; i < 120; i++) {
            submit(s, ticket("b", 1000, "b"));
        }
        for (int i = 0; i < 101; i++) {
            completeOldest(s);
        }
        assertThat(order()).isEqualTo("X" + "b".repeat(99) + "a" + "b");
    }

    @Test
    void aWeightChangedAtRunTimeAppliesToWorkAlreadyQueued() {
        QosScheduler s = QosScheduler.builder().quantumBytes(1).maxInflightTasks(1).build();
        submit(s, ticket("x", 1, "X"));
        for (int i = 0; i < 8; i++) {
            submit(s, ticket("a", 1, "A"), ticket("b", 1, "B"));
        }
        completeOldest(s);
        completeOldest(s);
        assertThat(order()).isEqualTo("XAB");
        s.setWeight("b", 300);
        for (int i = 0; i < 8; i++) {
            completeOldest(s);
        }
        assertThat(order()).isEqualTo("XAB" + "ABBB" + "ABBB");
        assertThat(s.weight("b")).isEqualTo(300);
        assertThat(s.removeWeight("b")).isTrue();
        assertThat(s.weight("b")).isEqualTo(100);
        s.setDefaultWeight(50);
        assertThat(s.weight("b")).isEqualTo(50);
        assertThat(s.weights()).isEmpty();
    }

    @Test
    void theByteLimitLetsSmallerWorkPastAndAnOversizedOperationGoesAlone() {
        QosScheduler s = QosScheduler.builder().maxInflightTasks(0).maxInflightBytes(10_000).build();
        submit(s, ticket("a", 6000, "A"));
        submit(s, ticket("a", 6000, "a"), ticket("b", 3000, "B"));
        assertThat(order()).as("6000 + 6000 would pass the limit; 6000 + 3000 does not").isEqualTo("AB");
        completeOldest(s); // the first A: 3000 + 6000 fits
        assertThat(order()).isEqualTo("ABa");
        completeOldest(s);
        completeOldest(s);
        submit(s, ticket("c", 50_000, "C"));
        assertThat(order()).as("larger than the limit, but nothing else is in flight").isEqualTo("ABaC");
        submit(s, ticket("c", 1, "c"));
        assertThat(order()).isEqualTo("ABaC");
        completeOldest(s);
        assertThat(order()).isEqualTo("ABaCc");
    }

    @Test
    void saltsWithNothingQueuedOrInFlightAreForgotten() {
        QosScheduler s = QosScheduler.builder().build();
        for (int i = 0; i < 64; i++) {
            submit(s, ticket("tenant-" + i, 100, "t"));
            completeOldest(s);
        }
        assertThat(s.snapshot()).containsEntry("domains", Map.of()).containsEntry("admitted_tasks", 64L)
                .containsEntry("admitted_bytes", 6400L);
        assertThat(s.weights()).isEmpty();
    }

    @Test
    void cancelTakesOnlyTheOwnersQueuedWorkAndForgetReleasesItsAdmittedWork() {
        QosScheduler s = QosScheduler.builder().maxInflightTasks(1).build();
        Object other = new Object();
        Ticket mine = ticket("a", 1, "M");
        submit(s, mine);
        Ticket theirs = new Ticket(other, "a", 1, "O");
        submit(s, ticket("a", 1, "m"), theirs);
        assertThat(s.cancel(this)).extracting(t -> ((Ticket) t).name).containsExactly("m");
        assertThat(order()).isEqualTo("M");
        s.forget(this); // "M" was in flight: its share is released, so the other owner's ticket goes
        assertThat(order()).isEqualTo("MO");
        s.complete(mine); // already forgotten: ignored
        assertThat(s.snapshot()).containsEntry("inflight_tasks", 1);
    }

    @Test
    void badSettingsNameTheValueAndTheLimit() {
        assertThatThrownBy(() -> QosScheduler.builder().weight("a", 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'a' 0").hasMessageContaining("[1, 10000]");
        assertThatThrownBy(() -> QosScheduler.builder().defaultWeight(10_001)).hasMessageContaining("[1, 10000]");
        assertThatThrownBy(() -> QosScheduler.builder().quantumBytes(0)).hasMessageContaining("quantum_bytes 0");
        assertThatThrownBy(() -> QosScheduler.builder().maxInflightTasks(-1)).hasMessageContaining("0 = no limit");
        assertThatThrownBy(() -> QosScheduler.builder().build().setWeight(null, 5)).hasMessageContaining("\"\"");
    }
}
