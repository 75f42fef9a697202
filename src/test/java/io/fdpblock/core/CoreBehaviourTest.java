package io.fdpblock.core;

import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import org.assertj.core.api.Assertions;

/** Periodic checkpoints, the core opening its own device, and many threads at once. */
@Tag("host")
class CoreBehaviourTest {
    @TempDir
    Path dir;

    @Test
    void thePeriodicThreadCheckpointsWithoutBeingAsked() throws Exception {
        try (CoreFixture f = new CoreFixture(IoEngine.IO_URING, dir, 8, RawBlockCoreConfig.MetaFormat.LMCACHE_V1)) {
            RawBlockCore core = f.open(f.config().metaEnablePeriodic(true).metaCheckpointIntervalSec(1).build());
            // a new store commits its empty first checkpoint (seq 1) at open
            assertThat(core.status()).containsEntry("checkpoints_written", 1L).containsEntry("checkpoint_seq", 1L);
            core.put(List.of(PutRequest.of(CoreFixture.key(1), f.payload(CoreFixture.key(1), 100))));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while ((Long) core.status().get("checkpoints_written") == 1 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(core.status()).containsEntry("checkpoints_written", 2L).containsEntry("dirty", false)
                    .containsEntry("checkpoint_seq", 2L);
        }
    }

    @Test
    void openCreatesTheFileAndWarnsWhenTheMetaAreaIsTooSmallForAFullIndex() throws Exception {
        Path file = dir.resolve("new.img");
        RawBlockCoreConfig c = RawBlockCoreConfig.builder(file.toString(), 64 << 10).capacityBytes(64L << 20)
                .metaTotalBytes(64 << 10).metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build();
        try (RawBlockCore core = RawBlockCore.open(c)) {
            assertThat(Files.size(file)).isEqualTo(64L << 20);
            assertThat(core.status()).containsEntry("meta_area_fits_full_index", false)
                    .containsEntry("io_engine", "io_uring").containsEntry("max_slots", 1023);
        }
        RawBlockCoreConfig missing = RawBlockCoreConfig.builder(dir.resolve("none.img").toString(), 64 << 10).build();
        Assertions.assertThatThrownBy(() -> RawBlockCore.open(missing))
                .hasMessageContaining("does not exist").hasMessageContaining("capacity_bytes");
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"MEMORY", "IO_URING"})
    void manyThreadsPutLoadAndDeleteWithoutLosingOrMixingBytes(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 1024)) {
            RawBlockCore core = f.open();
            int threads = 8;
            int perThread = 120;
            Map<String, Integer> live = new ConcurrentHashMap<>();
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    futures.add(pool.submit(() -> {
                        for (int i = 0; i < perThread; i++) {
                            String k = KeyCodec.encode("m", thread, new byte[] {(byte) i, (byte) (i >> 8)}, "", 0);
                            int size = 1 + (i * 977 + thread * 131) % 60000;
                            assertThat(core.put(List.of(PutRequest.of(k, f.payload(k, size))))).containsExactly(true);
                            MemorySegment dest = f.buffer(64 << 10);
                            assertThat(core.load(List.of(new LoadRequest(k, dest)))).containsExactly(true);
                            assertThat(dest.asSlice(0, size).mismatch(f.payload(k, size))).isEqualTo(-1);
                            if (i % 3 == 0) {
                                assertThat(core.delete(List.of(k), false)).containsExactly(true);
                            } else {
                                live.put(k, size);
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> fu : futures) {
                    fu.get(120, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(core.keyCount()).isEqualTo(live.size());
            core.checkpointNow(); // fdpblock_v2 reuses a slot once its delete is durable
            assertThat(core.freeSlots()).isEqualTo(core.maxSlots() - live.size());
            core.close();
            RawBlockCore again = f.open();
            assertThat(again.keySizes()).isEqualTo(live);
        }
    }
}
