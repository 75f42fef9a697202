package io.fdpblock.adapter;

import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.Bitmap;
import io.fdpblock.l2.L2DeleteResult;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.testing.KeyHashes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static io.fdpblock.l2.L2AdapterContractTest.awaitLoad;
import static io.fdpblock.l2.L2AdapterContractTest.awaitLookup;
import static io.fdpblock.l2.L2AdapterContractTest.awaitStore;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A key is hashed once for its whole lookup, load and unlock: the ObjectKey keeps its hash and the
 * adapter hands it to the store, which computes none again. Counted by {@link KeyHashes#computed()}.
 */
@Tag("host")
class KeyHashedOnceTest {
    private static final long SLOT = 16 << 10;
    private static final int KEYS = 24;
    private static final int PAYLOAD = 4096;

    private final Arena arena = Arena.ofShared();
    private BlockDevice device;

    @AfterEach
    void tearDown() {
        if (device != null) {
            device.close();
        }
        arena.close();
    }

    private RawBlockL2Adapter open(RawBlockCoreConfig.MetaFormat format) throws Exception {
        int slots = 2 * KEYS;
        long meta = format == RawBlockCoreConfig.MetaFormat.LMCACHE_V1 ? RawBlockCoreConfig.v1MetaBytesFor(4096, slots)
                : RawBlockCoreConfig.v2MetaBytesFor(4096, slots);
        long capacity = meta + slots * SLOT;
        device = BlockDevices.memory(capacity, 4096);
        return RawBlockL2Adapter.open(RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(capacity)
                .metaTotalBytes(meta).metaFormat(format).ioEngine(IoEngine.MEMORY).metaEnablePeriodic(false)
                .build(), device);
    }

    private static List<ObjectKey> keys() {
        List<ObjectKey> keys = new ArrayList<>(KEYS);
        for (int i = 0; i < KEYS; i++) {
            keys.add(ObjectKey.of("org/model", 0, new byte[] {(byte) i, 7}).withCacheSalt(i % 2 == 0 ? "" : "t1"));
        }
        return keys;
    }

    /** The same keys as a later request names them: equal, new instances that have computed nothing yet. */
    private static List<ObjectKey> sameKeysAgain(List<ObjectKey> keys) {
        List<ObjectKey> again = new ArrayList<>(keys.size());
        for (ObjectKey k : keys) {
            again.add(ObjectKey.fromEncoded(k.encoded()));
        }
        return again;
    }

    private void store(RawBlockL2Adapter a, List<ObjectKey> keys) throws Exception {
        List<MemoryObj> objs = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            MemorySegment s = arena.allocate(PAYLOAD, 4096);
            s.fill((byte) (i + 1));
            objs.add(MemoryObj.of(s));
        }
        assertThat(awaitStore(a, a.submitStoreTask(keys, objs)).success()).isTrue();
    }

    /** Looks the keys up (locking them), loads them, checks the bytes, unlocks them. */
    private void lookupLoadUnlock(RawBlockL2Adapter a, List<ObjectKey> keys) throws Exception {
        Bitmap hits = awaitLookup(a, a.submitLookupAndLockTask(keys));
        assertThat(hits.cardinality()).isEqualTo(keys.size());
        List<MemoryObj> into = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            into.add(MemoryObj.of(arena.allocate(PAYLOAD, 4096)));
        }
        assertThat(awaitLoad(a, a.submitLoadTask(keys, into)).cardinality()).isEqualTo(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            assertThat(into.get(i).segment().get(ValueLayout.JAVA_BYTE, PAYLOAD - 1)).isEqualTo((byte) (i + 1));
        }
        a.submitUnlock(keys);
    }

    @Test
    void fdpblockV2HashesEachKeyOnceForItsLookupLoadAndUnlockAndNeverAgain() throws Exception {
        try (RawBlockL2Adapter a = open(RawBlockCoreConfig.MetaFormat.FDPBLOCK_V2)) {
            List<ObjectKey> stored = keys();
            long before = KeyHashes.computed();
            store(a, stored);
            assertThat(KeyHashes.computed() - before).as("a put hashes each key once: the key, not the store")
                    .isEqualTo(KEYS);

            List<ObjectKey> asked = sameKeysAgain(stored);
            before = KeyHashes.computed();
            lookupLoadUnlock(a, asked);
            assertThat(KeyHashes.computed() - before).as("lookup, load and unlock hash each key once between them")
                    .isEqualTo(KEYS);
            for (ObjectKey k : stored) {
                assertThat(a.core().lockCount(k.encoded())).as("unlocked: %s", k).isZero();
            }

            before = KeyHashes.computed();
            lookupLoadUnlock(a, asked);
            a.groupsOf(asked);
            store(a, asked); // already stored: each is found by the hash it carries
            assertThat(a.deleteReporting(asked, false)).containsOnly(L2DeleteResult.REMOVED);
            assertThat(KeyHashes.computed() - before).as("keys that hold their hash are not hashed again").isZero();
        }
    }

    @Test
    void lmcacheV1HashesNoKeyAtAll() throws Exception {
        try (RawBlockL2Adapter a = open(RawBlockCoreConfig.MetaFormat.LMCACHE_V1)) {
            List<ObjectKey> stored = keys();
            long before = KeyHashes.computed();
            store(a, stored);
            lookupLoadUnlock(a, sameKeysAgain(stored));
            a.groupsOf(stored);
            assertThat(a.deleteReporting(stored, false)).containsOnly(L2DeleteResult.REMOVED);
            assertThat(KeyHashes.computed() - before).as("its index and checkpoints keep the keys themselves")
                    .isZero();
        }
    }
}
