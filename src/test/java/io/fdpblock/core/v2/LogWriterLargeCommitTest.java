package io.fdpblock.core.v2;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.v2.LogReader;
import io.fdpblock.core.v2.V2Layout;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.nvme.PlacementId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A group commit larger than 4 MiB (sustained puts at ~30,000 keys/s with 1 s between commits) is
 * written as one chunk of up to {@link LogFormat#maxChunkBody}; replay must read it back. It read the log
 * through a 4 MiB window and stopped at such a chunk, so a reopen lost every put after the snapshot
 * (found by the scale benchmark: 234,537 of 2,000,000 keys gone).
 */
@Tag("unit")
class LogWriterLargeCommitTest {
    @Test
    void replayReadsAChunkLargerThanFourMiB() throws IOException {
        // 150,000 slots: snapshot areas of ~6.4 MB, a log of ~51 MB, so chunks of up to ~6.4 MB
        V2Layout layout = V2Layout.create(4096, 4096, 8192, RawBlockCoreConfig.v2MetaBytesFor(4096, 150_000)
                + 150_000L * 8192, 0, 1 << 20, 42);
        assertThat(LogFormat.maxChunkBody(layout)).as("chunks may exceed 4 MiB").isGreaterThan(5L << 20);
        int records = 36_000; // ~5.3 MB of put records: one group commit, one chunk
        try (BlockDevice device = BlockDevices.memory(layout.metaTotalBytes(), 4096)) {
            LogWriter log = new LogWriter(device, layout, 0, 0, 0, 3_600_000, PlacementId.NONE, () -> { });
            log.start("large-commit");
            for (int i = 0; i < records; i++) {
                byte[] key = String.format("Qwen%%2FQwen2.5-7B-Instruct@0x00000000@%064x@tenant-%02d", i, i % 8)
                        .getBytes(StandardCharsets.UTF_8);
                log.appendPut(i, ~i, i, 512, i * 31, 0, 0, key);
            }
            log.commitNow();
            assertThat(log.commits()).as("one group commit").isEqualTo(1);
            long written = log.bytesWritten();
            assertThat(written).as("one chunk of more than 4 MiB").isGreaterThan(4L << 20)
                    .isLessThanOrEqualTo(LogFormat.maxChunkBytes(layout));
            log.stop(10_000);
            log.release();

            List<Long> slots = new ArrayList<>();
            long end = LogReader.replay(device, layout, 0, new LogFormat.Visitor() {
                @Override
                public void put(long h1, long h2, int slot, int size, int crc, int group, int saltId, String key) {
                    slots.add((long) slot);
                }

                @Override
                public void delete(long h1, long h2, int slot) {
                }

                @Override
                public void salt(int id, String salt) {
                }
            });
            assertThat(slots).as("every record replayed").hasSize(records);
            assertThat(slots.get(records - 1)).isEqualTo(records - 1);
            assertThat(end).as("the replay ends after the chunk").isEqualTo(written);
        }
    }
}
