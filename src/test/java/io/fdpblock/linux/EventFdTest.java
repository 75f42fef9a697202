package io.fdpblock.linux;

import io.fdpblock.uring.Ring;
import io.fdpblock.uring.RingOptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("host")
class EventFdTest {

    @Test
    void signalsCoalesceIntoOneCounter() throws IOException {
        try (EventFd ev = EventFd.create()) {
            ev.signal();
            ev.signal();
            ev.signal();
            assertThat(ev.drain()).isEqualTo(3);
            assertThat(ev.drain()).as("drain clears the counter").isZero();
            ev.signal();
            assertThat(ev.drain()).isEqualTo(1);
        }
    }

    @Test
    void threeSignalsMakeOnePollerWake() throws IOException {
        try (EventFd ev = EventFd.create(); Poller poller = Poller.of(ev.fd())) {
            ev.signal();
            ev.signal();
            ev.signal();
            assertThat(poller.poll(Duration.ofSeconds(5))).isEqualTo(1);
            assertThat(poller.isReadable(0)).isTrue();
            assertThat(ev.drain()).isEqualTo(3);
            assertThat(poller.poll(Duration.ZERO)).as("drained: not readable any more").isZero();
        }
    }

    @Test
    void awaitConsumesAllPendingSignalsAtOnce() throws IOException {
        try (EventFd ev = EventFd.create()) {
            ev.signal();
            ev.signal();
            ev.signal();
            assertThat(EventFd.await(ev.fd(), Duration.ofSeconds(5))).isTrue();
            assertThat(ev.drain()).as("await drained all three").isZero();
            ev.signal();
            assertThat(ev.await(Duration.ofSeconds(5))).isTrue();
            assertThat(ev.drain()).isZero();
        }
    }

    /** A wait re-points its thread's own poller: each await watches the descriptor it was given, and only it. */
    @Test
    void successiveAwaitsOnOneThreadWatchOnlyTheirOwnDescriptor() throws Exception {
        try (EventFd a = EventFd.create(); EventFd b = EventFd.create()) {
            a.signal();
            assertThat(EventFd.await(a.fd(), Duration.ofSeconds(5))).isTrue();
            b.signal();
            assertThat(EventFd.await(a.fd(), Duration.ofMillis(50))).as("a: drained, and b's signal is b's").isFalse();
            assertThat(EventFd.await(b.fd(), Duration.ofSeconds(5))).isTrue();
            assertThat(b.drain()).as("await drained b").isZero();
            assertThat(Poller.forThisThread()).as("one poller per thread, made once").isSameAs(Poller.forThisThread());
            Poller[] other = new Poller[1];
            boolean[] otherSaw = new boolean[1];
            a.signal();
            Thread t = Thread.ofPlatform().start(() -> {
                other[0] = Poller.forThisThread();
                try {
                    otherSaw[0] = EventFd.await(a.fd(), Duration.ofSeconds(5));
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            t.join();
            assertThat(otherSaw[0]).as("another thread's await, on its own poller").isTrue();
            assertThat(other[0]).isNotSameAs(Poller.forThisThread());
            Poller.forThisThread().close();
            a.signal();
            assertThat(EventFd.await(a.fd(), Duration.ofSeconds(5))).as("close() leaves a thread's poller usable").isTrue();
        }
    }

    @Test
    void awaitTimesOutWhenNotSignalled() throws IOException {
        try (EventFd ev = EventFd.create()) {
            long start = System.nanoTime();
            boolean signalled = ev.await(Duration.ofMillis(100));
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(signalled).isFalse();
            assertThat(tookMillis).as("waited the timeout out").isGreaterThanOrEqualTo(80L);
        }
    }

    @Test
    void signalFromAnotherThreadWakesAwait() throws Exception {
        try (EventFd ev = EventFd.create()) {
            CountDownLatch go = new CountDownLatch(1);
            Thread signaller = Thread.ofPlatform().start(() -> {
                try {
                    if (go.await(10, TimeUnit.SECONDS)) {
                        ev.signal();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            go.countDown();
            assertThat(EventFd.await(ev.fd(), Duration.ofSeconds(30))).as("woken by the signal").isTrue();
            signaller.join();
            assertThat(ev.drain()).isZero();
        }
    }

    @Test
    void signalAfterCloseIsANoOp() throws IOException {
        EventFd ev = EventFd.create();
        ev.close();
        ev.signal();
        assertThat(ev.drain()).isZero();
        assertThat(ev.isClosed()).isTrue();
        assertThat(ev.toString()).isEqualTo("EventFd[" + ev.fd() + ", closed]");
    }

    @Test
    void closeTwiceIsHarmless() throws IOException {
        EventFd ev = EventFd.create();
        assertThat(ev.isClosed()).isFalse();
        assertThat(ev.toString()).isEqualTo("EventFd[" + ev.fd() + "]");
        ev.close();
        ev.close();
        assertThat(ev.isClosed()).isTrue();
    }

    @Test
    void tenEventFdsHaveDistinctDescriptors() throws IOException {
        List<EventFd> all = new ArrayList<>();
        try {
            Set<Integer> fds = new HashSet<>();
            for (int i = 0; i < 10; i++) {
                EventFd ev = EventFd.create();
                all.add(ev);
                assertThat(ev.fd()).isGreaterThan(2);
                fds.add(ev.fd());
            }
            assertThat(fds).hasSize(10);
        } finally {
            all.forEach(EventFd::close);
        }
    }

    @Test
    void awaitOnAClosedDescriptorFailsInsteadOfHanging() throws IOException {
        EventFd ev = EventFd.create();
        int fd = ev.fd();
        ev.close();
        // thrown, not false: a descriptor that is not open is an error at once, not a wait for the timeout
        assertThatThrownBy(() -> EventFd.await(fd, Duration.ofSeconds(5)))
                .isInstanceOf(Errno.NativeIOException.class)
                .hasMessageContaining("poll(fd=" + fd + ")")
                .hasMessageContaining("EBADF")
                .hasMessageContaining("not open")
                .satisfies(e -> assertThat(((Errno.NativeIOException) e).errno()).isEqualTo(Errno.EBADF));
    }

    @Test
    void blockingEventFdSignalThenDrain() throws IOException {
        try (EventFd ev = EventFd.createBlocking()) {
            ev.signal();
            assertThat(ev.drain()).isEqualTo(1);
            ev.signal();
            ev.signal();
            assertThat(ev.drain()).isEqualTo(2);
        }
    }

    /** What the io_uring device engine does: an io_uring READ on a blocking eventfd waits for a signal. */
    @Test
    void blockingEventFdCanBeReadThroughIoUring() throws Exception {
        try (EventFd ev = EventFd.createBlocking();
             Ring ring = Ring.open(RingOptions.of(4));
             Arena arena = Arena.ofConfined()) {
            MemorySegment counter = arena.allocate(ValueLayout.JAVA_LONG);
            assertThat(ring.prepRead(ev.fd(), counter, 0, 7)).isNotNegative();
            assertThat(ring.submit()).isEqualTo(1);
            assertThat(ring.completionsReady()).as("nothing signalled yet").isZero();

            Thread signaller = Thread.ofPlatform().start(ev::signal);
            long[] got = new long[2];
            ring.submitAndWait(1);
            while (ring.reap((u, r, f, x) -> { got[0] = u; got[1] = r; }) == 0) {
                ring.submitAndWait(1);
            }
            signaller.join();
            assertThat(got).containsExactly(7, 8);
            assertThat(counter.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(1);
        }
    }
}
