package io.fdpblock.sim;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import java.nio.charset.StandardCharsets;
import org.assertj.core.api.Assertions;

/** The trace file: what the writer puts down from many threads, what the reader accepts and refuses. */
@Tag("unit")
class TraceFileTest {
    private static final long DEVICE = 1L << 40;

    @TempDir
    Path dir;

    /**
     * Four threads append 40,000 records each (about five writer buffers' worth) at once: every record is
     * in the file exactly once, each thread's in its order, and times never go backwards in file order.
     */
    @Test
    void recordsFromManyThreadsAllLandInOrderPerThread() throws Exception {
        Path f = dir.resolve("t.trace");
        int threads = 4;
        int each = 40_000;
        TraceWriter w = TraceWriter.create(f, DEVICE, 4096, 8L << 20, 8);
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                for (int i = 0; i < each; i++) {
                    long offset = ((long) id * each + i) * 4096;
                    switch (i % 10) {
                        case 9 -> w.deallocate(offset, 4096);
                        case 8 -> w.flush();
                        default -> w.write(offset, 4096L * (1 + i % 3), id + 1);
                    }
                }
            }));
        }
        go.countDown();
        for (Thread t : ts) {
            t.join();
        }
        assertThat(w.records()).isEqualTo((long) threads * each);
        w.close();
        w.close(); // idempotent
        assertThat(Files.size(f)).isEqualTo(TraceFormat.HEADER_BYTES + (long) threads * each * TraceFormat.RECORD_BYTES);

        try (TraceReader r = TraceReader.open(f)) {
            TraceFormat.Header h = r.header();
            assertThat(h.deviceBytes()).isEqualTo(DEVICE);
            assertThat(h.lbaBytes()).isEqualTo(4096);
            assertThat(h.reclaimUnitBytes()).isEqualTo(8L << 20);
            assertThat(h.placementIdCount()).isEqualTo(8);
            assertThat(h.startEpochNanos() / 1_000_000).isCloseTo(System.currentTimeMillis(),
                    Assertions.within(60_000L));
            long[] next = new long[threads];
            long lastTime = -1;
            int flushes = 0;
            Set<Long> seen = new HashSet<>();
            while (r.next()) {
                assertThat(r.timeNanos()).isGreaterThanOrEqualTo(lastTime);
                lastTime = r.timeNanos();
                if (r.op() == TraceFormat.OP_FLUSH) {
                    flushes++;
                    continue;
                }
                long n = r.offset() / 4096;
                int thread = (int) (n / each);
                int i = (int) (n % each);
                assertThat(seen.add(n)).isTrue();
                assertThat((long) i).as("thread %d's records in its order", thread).isGreaterThanOrEqualTo(next[thread]);
                next[thread] = i + 1;
                if (i % 10 == 9) {
                    assertThat(r.op()).isEqualTo(TraceFormat.OP_DEALLOCATE);
                    assertThat(r.length()).isEqualTo(4096);
                } else {
                    assertThat(r.op()).isEqualTo(TraceFormat.OP_WRITE);
                    assertThat(r.length()).isEqualTo(4096L * (1 + i % 3));
                    assertThat(r.placementId()).isEqualTo(thread + 1);
                }
            }
            assertThat(seen).hasSize(threads * each * 9 / 10);
            assertThat(flushes).isEqualTo(threads * each / 10);
            assertThat(r.trailingBytes()).isZero();
            assertThat(r.index()).isEqualTo((long) threads * each - 1);
        }
    }

    @Test
    void theLayoutIsTheDocumentedOne() throws Exception {
        Path f = dir.resolve("layout.trace");
        try (TraceWriter w = TraceWriter.create(f, 1L << 30, 4096, 8L << 20, 8)) {
            w.write(3 * 4096, 8192, 0x1234);
        }
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(f)).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(b.capacity()).isEqualTo(96);
        assertThat(new String(b.array(), 0, 8, StandardCharsets.US_ASCII)).isEqualTo("FDPBTRCE");
        assertThat(b.getShort(8)).isEqualTo((short) 1); // version
        assertThat(b.getShort(10)).isEqualTo((short) 64); // header bytes
        assertThat(b.getShort(12)).isEqualTo((short) 32); // record bytes
        assertThat(b.getShort(14)).isEqualTo((short) 8); // placement ids
        assertThat(b.getInt(16)).isEqualTo(4096);
        assertThat(b.getInt(20)).isZero();
        assertThat(b.getLong(24)).isEqualTo(1L << 30);
        assertThat(b.getLong(32)).isEqualTo(8L << 20);
        assertThat(b.getLong(40)).isPositive(); // start, epoch nanos
        for (int i = 48; i < 64; i++) {
            assertThat(b.get(i)).isZero();
        }
        assertThat(b.getLong(64)).isNotNegative(); // time
        assertThat(b.getLong(72)).isEqualTo(3 * 4096);
        assertThat(b.getLong(80)).isEqualTo(8192);
        assertThat(b.get(88)).isEqualTo((byte) TraceFormat.OP_WRITE);
        assertThat(b.get(89)).isZero();
        assertThat(b.getShort(90)).isEqualTo((short) 0x1234);
        assertThat(b.getInt(92)).isZero();
    }

    @Test
    void aTraceCutShortEndsAtItsLastWholeRecordAndSaysHowMuchWasLeft() throws Exception {
        Path f = dir.resolve("cut.trace");
        try (TraceWriter w = TraceWriter.create(f, 1L << 30, 4096, 0, 0)) {
            w.write(0, 4096, 0);
            w.write(4096, 4096, 0);
        }
        Files.write(f, new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, StandardOpenOption.APPEND);
        try (TraceReader r = TraceReader.open(f)) {
            assertThat(r.next()).isTrue();
            assertThat(r.next()).isTrue();
            assertThat(r.next()).isFalse();
            assertThat(r.trailingBytes()).isEqualTo(10);
        }
    }

    @Test
    void whatIsNotATraceIsRefusedByName() throws Exception {
        Path notTrace = dir.resolve("pom.xml");
        Files.writeString(notTrace, "<project>this is not a trace, but it is long enough to hold a header</project>");
        assertThatThrownBy(() -> TraceReader.open(notTrace)).isInstanceOf(IOException.class)
                .hasMessageContaining(notTrace.toString()).hasMessageContaining("not an fdpblock trace")
                .hasMessageContaining("<project");
        Path tiny = dir.resolve("tiny");
        Files.write(tiny, new byte[10]);
        assertThatThrownBy(() -> TraceReader.open(tiny)).hasMessageContaining("10 bytes, a header needs 64");
        assertThatThrownBy(() -> TraceReader.open(dir.resolve("missing.trace"))).isInstanceOf(IOException.class)
                .hasMessageContaining("missing.trace");

        Path newer = dir.resolve("v2.trace");
        try (TraceWriter w = TraceWriter.create(newer, 1L << 30, 4096, 0, 0)) {
            w.write(0, 4096, 0);
        }
        patch(newer, 8, (byte) 2);
        assertThatThrownBy(() -> TraceReader.open(newer)).hasMessageContaining("trace version 2")
                .hasMessageContaining("reads version 1");
    }

    @Test
    void aRecordThatIsNotValidIsRefusedNamingItsIndexAndFields() throws Exception {
        Path f = dir.resolve("bad.trace");
        try (TraceWriter w = TraceWriter.create(f, 1L << 20, 4096, 0, 0)) {
            w.write(0, 4096, 0);
            w.write(1L << 20, 4096, 0); // past the end of a 1 MiB device
            w.write(4096, 4096, 0);
        }
        try (TraceReader r = TraceReader.open(f)) {
            assertThat(r.next()).isTrue();
            assertThatThrownBy(r::next).isInstanceOf(IOException.class).hasMessageContaining("record 1")
                    .hasMessageContaining("offset 1048576").hasMessageContaining("1048576-byte device");
        }
        Path g = dir.resolve("kind.trace");
        try (TraceWriter w = TraceWriter.create(g, 1L << 20, 4096, 0, 0)) {
            w.write(0, 4096, 0);
        }
        patch(g, TraceFormat.HEADER_BYTES + 24, (byte) 7);
        try (TraceReader r = TraceReader.open(g)) {
            assertThatThrownBy(r::next).hasMessageContaining("record 0 has kind 7");
        }
    }

    @Test
    void aTraceThatCannotBeCreatedSaysWhere() {
        Path f = dir.resolve("no/such/dir/t.trace");
        assertThatThrownBy(() -> TraceWriter.create(f, 1L << 20, 4096, 0, 0)).isInstanceOf(IOException.class)
                .hasMessageContaining(f.toString());
        assertThatThrownBy(() -> TraceWriter.create(dir.resolve("x"), 1000, 4096, 0, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1000");
    }

    private static void patch(Path f, long at, byte value) throws IOException {
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[] {value}), at);
        }
    }
}
