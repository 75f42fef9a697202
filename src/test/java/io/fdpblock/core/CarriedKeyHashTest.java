package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.nvme.PlacementId;
import io.fdpblock.testing.KeyHashes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A fdpblock_v2 store takes a key's hash when the caller hands it over, at every step of a put, a
 * lookup, a load, an unlock and a delete, and computes none itself. Shown with hashes that are not
 * the keys' own (a caller's bug in real use): a step that hashed the text instead would miss.
 */
@Tag("unit")
class CarriedKeyHashTest {
    private static final long SLOT = 16 << 10;
    private static final int KEYS = 8;

    private final Arena arena = Arena.ofShared();
    private BlockDevice device;

    @AfterEach
    void close() {
        if (device != null) {
            device.close();
        }
        arena.close();
    }

    private RawBlockCore open() throws Exception {
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, 2 * KEYS);
        long capacity = meta + 2 * KEYS * SLOT;
        device = BlockDevices.memory(capacity, 4096);
        return RawBlockCore.open(RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(capacity).metaTotalBytes(meta)
                .metaEnablePeriodic(false).ioEngine(IoEngine.MEMORY).build(), device);
    }

    private static String text(int i) {
        return "m@0x00000000@0" + i;
    }

    /** Key {@code i} with a hash of its own that is not its text's. */
    private static StoreKey carried(int i) {
        return new StoreKey(text(i), 0x5eed0000L + i, ~(long) i);
    }

    /** The keys with those hashes, as a batch that carries them. */
    private static KeyBatch batch() {
        return new KeyBatch() {
            @Override
            public int size() {
                return KEYS;
            }

            @Override
            public String text(int i) {
                return CarriedKeyHashTest.text(i);
            }

            @Override
            public boolean carriesHashes() {
                return true;
            }

            @Override
            public long h1(int i) {
                return carried(i).h1();
            }

            @Override
            public long h2(int i) {
                return carried(i).h2();
            }
        };
    }

    private static List<String> texts() {
        List<String> l = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            l.add(text(i));
        }
        return l;
    }

    @Test
    void everyStepTakesTheHashHandedOverAndComputesNone() throws Exception {
        try (RawBlockCore core = open()) {
            assertThat(core.keyedByHash()).isTrue();
            long before = KeyHashes.computed();
            List<PutRequest> puts = new ArrayList<>();
            for (int i = 0; i < KEYS; i++) {
                puts.add(new PutRequest(carried(i), arena.allocate(4096, 4096).fill((byte) (i + 1)), null,
                        PlacementId.NONE));
            }
            assertThat(core.put(puts)).containsOnly(true);
            assertThat(core.exists(batch(), true)).containsOnly(true);
            List<LoadRequest> loads = new ArrayList<>();
            for (int i = 0; i < KEYS; i++) {
                loads.add(new LoadRequest(carried(i), arena.allocate(4096, 4096)));
            }
            assertThat(core.load(loads)).containsOnly(true);
            for (int i = 0; i < KEYS; i++) {
                assertThat(loads.get(i).destination().get(ValueLayout.JAVA_BYTE, 4095)).isEqualTo((byte) (i + 1));
            }
            assertThat(core.slotGroups().groupsOf(batch())).containsOnly(-1); // found, in no group
            assertThat(core.deleteWithOutcome(batch(), false)).as("locked by the lookup")
                    .containsOnly(DeleteOutcome.LOCKED);
            core.unlock(batch());
            assertThat(KeyHashes.computed() - before).isZero();

            assertThat(core.exists(texts(), false)).as("the keys' own hashes find nothing").containsOnly(false);
            assertThat(core.deleteWithOutcome(batch(), false)).containsOnly(DeleteOutcome.REMOVED);
            assertThat(core.exists(batch(), false)).containsOnly(false);
        }
    }

    @Test
    void keysWithoutTheirHashAreHashedOncePerStep() throws Exception {
        try (RawBlockCore core = open()) {
            MemorySegment payload = arena.allocate(4096, 4096).fill((byte) 9);
            long before = KeyHashes.computed();
            assertThat(core.put(List.of(PutRequest.of(text(0), payload)))).containsOnly(true);
            assertThat(core.exists(List.of(text(0)), true)).containsOnly(true);
            assertThat(core.load(List.of(new LoadRequest(text(0), arena.allocate(4096, 4096))))).containsOnly(true);
            core.unlock(List.of(text(0)));
            assertThat(KeyHashes.computed() - before).as("put, lookup, load, unlock: one each").isEqualTo(4);
        }
    }
}
