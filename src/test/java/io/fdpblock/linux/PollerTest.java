package io.fdpblock.linux;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("host")
class PollerTest {
    private final List<EventFd> eventFds = new ArrayList<>();

    private EventFd newEventFd() throws IOException {
        EventFd ev = EventFd.create();
        eventFds.add(ev);
        return ev;
    }

    @AfterEach
    void closeEventFds() {
        eventFds.forEach(EventFd::close);
    }

    @Test
    void reportsExactlyTheSignalledDescriptors() throws IOException {
        Set<Integer> signalled = Set.of(0, 3, 17, 42, 63);
        try (Poller poller = new Poller(64)) {
            List<EventFd> all = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                EventFd ev = newEventFd();
                all.add(ev);
                assertThat(poller.add(ev.fd())).isEqualTo(i);
                assertThat(poller.fd(i)).isEqualTo(ev.fd());
            }
            assertThat(poller.size()).isEqualTo(64);
            for (int i : signalled) {
                all.get(i).signal();
            }

            assertThat(poller.poll(Duration.ofSeconds(5))).isEqualTo(signalled.size());
            for (int i = 0; i < 64; i++) {
                assertThat(poller.isReadable(i)).as("index %d", i).isEqualTo(signalled.contains(i));
                assertThat(poller.revents(i)).as("index %d", i).isEqualTo(signalled.contains(i) ? 0x1 : 0);
                assertThat(poller.hasError(i)).isFalse();
                assertThat(poller.isInvalid(i)).isFalse();
            }

            for (int i : signalled) {
                assertThat(all.get(i).drain()).isEqualTo(1);
            }
            assertThat(poller.poll(Duration.ZERO)).isZero();
            assertThat(poller.revents(17)).as("revents reset by the next poll").isZero();
        }
    }

    @Test
    void timeoutIsHonoured() throws IOException {
        try (Poller poller = new Poller(4)) {
            for (int i = 0; i < 4; i++) {
                poller.add(newEventFd().fd());
            }
            long start = System.nanoTime();
            int ready = poller.poll(Duration.ofMillis(100));
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(ready).isZero();
            assertThat(tookMillis).as("waited the timeout out").isGreaterThanOrEqualTo(80L);
        }
    }

    @Test
    void negativeDescriptorIsIgnored() throws IOException {
        EventFd a = newEventFd();
        EventFd b = newEventFd();
        try (Poller poller = Poller.of(a.fd(), b.fd())) {
            a.signal();
            b.signal();
            poller.set(0, -1);
            assertThat(poller.poll(Duration.ofSeconds(5))).isEqualTo(1);
            assertThat(poller.isReadable(0)).isFalse();
            assertThat(poller.isReadable(1)).isTrue();
            poller.set(0, a.fd());
            assertThat(poller.poll(Duration.ofSeconds(5))).isEqualTo(2);
        }
    }

    @Test
    void closedDescriptorIsReportedInvalidPromptly() throws IOException {
        EventFd a = newEventFd();
        EventFd closed = newEventFd();
        EventFd c = newEventFd();
        try (Poller poller = Poller.of(a.fd(), closed.fd(), c.fd())) {
            closed.close();
            // 1, not 0: reported at once as ready (POLLNVAL), not left to the timeout
            assertThat(poller.poll(Duration.ofSeconds(10))).isEqualTo(1);
            assertThat(poller.isInvalid(1)).isTrue();
            assertThat(poller.hasError(1)).isTrue();
            assertThat(poller.isReadable(1)).isFalse();
            assertThat(poller.isInvalid(0)).isFalse();
            assertThat(poller.isInvalid(2)).isFalse();
            assertThat(poller.hasError(0)).isFalse();
        }
    }

    @Test
    void addingBeyondCapacityThrows() throws IOException {
        try (Poller poller = new Poller(2)) {
            poller.add(newEventFd().fd());
            poller.add(newEventFd().fd());
            int fd = newEventFd().fd();
            assertThatThrownBy(() -> poller.add(fd))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("capacity 2");
            assertThat(poller.size()).isEqualTo(2);
        }
    }

    @Test
    void invalidCapacityAndIndexAreRejected() {
        assertThatThrownBy(() -> new Poller(0)).isInstanceOf(IllegalArgumentException.class);
        try (Poller poller = new Poller(3)) {
            assertThatThrownBy(() -> poller.set(3, 0)).isInstanceOf(IndexOutOfBoundsException.class)
                    .hasMessageContaining("0..2");
            assertThatThrownBy(() -> poller.fd(-1)).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void aPollerIsConfinedToTheThreadThatMadeIt() throws Exception {
        try (Poller poller = new Poller(1)) {
            Throwable[] seen = new Throwable[1];
            Thread t = Thread.ofPlatform().start(() -> {
                try {
                    poller.add(0);
                } catch (Throwable e) {
                    seen[0] = e;
                }
            });
            t.join();
            assertThat(seen[0]).isInstanceOf(WrongThreadException.class);
            assertThat(poller.size()).isZero();
        }
    }

    @Test
    void closeTwiceIsHarmless() {
        Poller poller = new Poller(1);
        poller.close();
        poller.close();
    }
}
