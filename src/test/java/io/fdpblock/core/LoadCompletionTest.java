package io.fdpblock.core;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import java.io.UncheckedIOException;
import org.assertj.core.api.Assertions;

/**
 * A load whose completion cannot touch its destination on the io_uring reactor (here: a confined
 * arena's segment) must still answer, as a miss, and must not keep {@code close()} waiting. It used to
 * leave the caller waiting forever.
 */
@Tag("host")
class LoadCompletionTest {
    @TempDir(factory = CrashRecoveryTest.DiskTempDir.class)
    Path dir;

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aDestinationTheReactorCannotTouchIsRefusedAndNothingHangs() throws Exception {
        RawBlockCore core = RawBlockCore.open(CrashChild.config(dir).toBuilder().metaEnablePeriodic(false).build());
        try {
            String aligned = null;
            String unaligned = null;
            for (long n = 0; aligned == null || unaligned == null; n++) { // one zero-copy read, one bounced
                String k = CrashChild.key("completion", 9, n);
                boolean isAligned = CrashChild.expectedPayload(k).length % 4096 == 0;
                if (isAligned && aligned == null) {
                    aligned = k;
                } else if (!isAligned && unaligned == null) {
                    unaligned = k;
                }
                if (n > 1_000_000) { // 1 in 15 sizes is aligned: never reached
                    throw new IllegalStateException("no aligned payload size found");
                }
            }
            try (Arena shared = Arena.ofShared()) {
                boolean[] stored = core.put(List.of(PutRequest.of(aligned, CrashChild.payloadSegment(aligned, shared)),
                        PutRequest.of(unaligned, CrashChild.payloadSegment(unaligned, shared))));
                assertThat(stored).containsExactly(true, true);
            }

            try (Arena confined = Arena.ofConfined()) { // refused before any I/O, naming the key and the rule
                for (String k : List.of(aligned, unaligned)) {
                    Assertions.assertThatThrownBy(() -> new LoadRequest(k,
                            confined.allocate(CrashChild.MAX_PAYLOAD, 4096)))
                            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("load " + k)
                            .hasMessageContaining("confined to one thread");
                }
            }

            try (Arena shared = Arena.ofShared()) {
                for (String k : List.of(aligned, unaligned)) {
                    MemorySegment dest = shared.allocate(CrashChild.MAX_PAYLOAD, 4096);
                    assertThat(core.load(List.of(new LoadRequest(k, dest)))).containsExactly(true);
                    byte[] expected = CrashChild.expectedPayload(k);
                    assertThat(dest.asSlice(0, expected.length).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(expected);
                }
            }
            assertThat(core.status().get("crc_mismatches")).isEqualTo(0L);
        } finally {
            CompletableFuture<Void> closed = CompletableFuture.runAsync(() -> {
                try {
                    core.close();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            closed.get(30, TimeUnit.SECONDS); // close() waits for loads in flight: none may be left behind
        }
    }
}
