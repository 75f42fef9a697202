package io.fdpblock.cache;

import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.controller.Fixtures;
import io.fdpblock.l2.MockL2Adapter;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.LoadRequest;
import io.fdpblock.testing.DiskTempDirFactory;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.MemoryObj;
import io.fdpblock.l2.ObjectKey;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.fdpblock.controller.Fixtures.CHUNK;
import static io.fdpblock.controller.Fixtures.LAYOUT;
import static io.fdpblock.controller.Fixtures.key;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class L1ManagerTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    @Test
    void writeThenReadLocksAreCountedAndDeleteReturnsTheChunk() {
        try (L1Manager l1 = new L1Manager(CHUNK, 4)) {
            List<ObjectKey> ks = keys(0, 2);
            List<MemoryObj> objs = l1.reserveWrite(ks, LAYOUT, false);
            assertThat(objs).doesNotContainNull();
            assertThat(l1.freeChunks()).isEqualTo(2);
            assertThat(l1.isWriteLocked(ks.get(0))).isTrue();
            assertThat(l1.isReady(ks.get(0))).isFalse();
            assertThat(l1.reserveRead(ks)).containsOnlyNulls(); // not ready while write-locked
            assertThat(l1.delete(ks)).isEmpty(); // write-locked keys are refused

            assertThat(l1.finishWrite(ks)).isEqualTo(2);
            assertThat(l1.isWriteLocked(ks.get(0))).isFalse();
            assertThat(l1.reserveRead(ks)).containsExactlyElementsOf(objs);
            l1.reserveRead(ks.subList(0, 1));
            assertThat(l1.readLockCount(ks.get(0))).isEqualTo(2);
            assertThat(l1.readLockCount(ks.get(1))).isEqualTo(1);
            assertThat(l1.totalReadLocks()).isEqualTo(3);
            assertThat(l1.readLockedObjects(ks)).containsExactlyElementsOf(objs);

            assertThat(l1.delete(ks)).isEmpty(); // read-locked keys are refused
            l1.finishRead(ks);
            assertThat(l1.delete(ks)).containsExactly(ks.get(1));
            assertThat(l1.isReadLocked(ks.get(0))).isTrue();
            l1.finishRead(ks);
            l1.finishRead(ks); // underflow and absent keys: no-ops
            assertThat(l1.readLockCount(ks.get(0))).isZero();
            assertThatThrownBy(() -> l1.readLockedObjects(ks)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("not read-locked");
            assertThat(l1.delete(ks)).containsExactly(ks.get(0));
            assertThat(l1.freeChunks()).isEqualTo(4);
            assertThat(l1.size()).isZero();
        }
    }

    @Test
    void chunksAreAlignedSlicesOfOneRegion() {
        try (L1Manager l1 = new L1Manager(1000, 8)) {
            List<MemoryObj> objs = l1.reserveWrite(keys(0, 8), List.of(1000L, 1L, 500L, 1000L, 7L, 8L, 9L, 10L), false);
            MemorySegment region = l1.region();
            assertThat(region.address() % L1Manager.ALIGNMENT).isZero();
            for (MemoryObj o : objs) {
                assertThat(o.segment().address() % L1Manager.ALIGNMENT).isZero();
                assertThat(o.segment().address()).isBetween(region.address(), region.address() + region.byteSize() - 1);
            }
            assertThat(objs.get(0).size()).isEqualTo(1000);
            assertThat(objs.get(1).size()).isEqualTo(1);
            assertThatThrownBy(() -> l1.reserveWrite(List.of(key(99)), List.of(1001L), false))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not fit");
        }
    }

    @Test
    void reserveFailsCleanlyWhenThePoolIsExhaustedAndSaysWhichKeysSucceeded() {
        try (L1Manager l1 = new L1Manager(CHUNK, 4)) {
            List<ObjectKey> ks = keys(0, 6);
            List<MemoryObj> objs = l1.reserveWrite(ks, LAYOUT, false);
            assertThat(objs.subList(0, 4)).doesNotContainNull();
            assertThat(objs.subList(4, 6)).containsOnlyNulls();
            assertThat(l1.freeChunks()).isZero();
            assertThat(l1.contains(ks.get(4))).isFalse();
            l1.finishWrite(ks);
            // non-temporary objects are not evicted before allowEviction
            assertThat(l1.reserveWrite(List.of(key(50)), LAYOUT, true)).containsOnlyNulls();
            assertThat(l1.evictions()).isZero();
            assertThat(l1.refusedStores()).isEqualTo(2);
            assertThat(l1.refusedPrefetches()).isEqualTo(1);
            assertThat(l1.delete(pick(ks, 0))).hasSize(1);
            assertThat(l1.reserveWrite(List.of(key(50)), LAYOUT, false)).doesNotContainNull();
        }
    }

    @Test
    void onlyReadyUnlockedTemporaryObjectsAreEvictedOldestFirst() {
        try (L1Manager l1 = new L1Manager(CHUNK, 4)) {
            ObjectKey tempOld = key(1);
            ObjectKey tempLocked = key(2);
            ObjectKey tempWriting = key(3);
            ObjectKey durable = key(4);
            l1.reserveWrite(List.of(tempOld, tempLocked), LAYOUT, true);
            l1.finishWrite(List.of(tempOld, tempLocked));
            l1.reserveRead(List.of(tempLocked));
            l1.reserveWrite(List.of(tempWriting), LAYOUT, true);
            l1.reserveWrite(List.of(durable), LAYOUT, false);
            l1.finishWrite(List.of(durable));

            assertThat(l1.reserveWrite(List.of(key(10)), LAYOUT, false)).doesNotContainNull();
            assertThat(l1.contains(tempOld)).isFalse();
            assertThat(l1.evictions()).isEqualTo(1);
            assertThat(l1.reserveWrite(List.of(key(11)), LAYOUT, false)).containsOnlyNulls();
            assertThat(l1.contains(tempLocked)).isTrue();
            assertThat(l1.contains(tempWriting)).isTrue();
            assertThat(l1.contains(durable)).isTrue();

            l1.finishRead(List.of(tempLocked)); // unlocked now: evictable
            assertThat(l1.reserveWrite(List.of(key(11)), LAYOUT, false)).doesNotContainNull();
            assertThat(l1.contains(tempLocked)).isFalse();
        }
    }

    @Test
    void storedObjectsAreEvictableOnceAllowedAndUnlockedInTheOrderTheyBecameSo() {
        try (L1Manager l1 = new L1Manager(CHUNK, 2)) {
            ObjectKey a = key(1);
            ObjectKey b = key(2);
            l1.reserveWrite(List.of(a, b), LAYOUT, false);
            l1.finishWrite(List.of(a, b));
            assertThat(l1.isEvictionAllowed(a)).isFalse();
            assertThat(l1.reserveWrite(List.of(key(3)), LAYOUT, false)).containsOnlyNulls();

            l1.reserveRead(List.of(b));
            assertThat(l1.allowEviction(List.of(b, a, key(99)))).isEqualTo(2); // absent keys are skipped
            assertThat(l1.isEvictionAllowed(a)).isTrue();
            // b was allowed first but is read-locked: a goes
            assertThat(l1.reserveWrite(List.of(key(3)), LAYOUT, false)).doesNotContainNull();
            assertThat(l1.contains(a)).isFalse();
            l1.finishWrite(List.of(key(3)));
            assertThat(l1.reserveWrite(List.of(key(4)), LAYOUT, false)).containsOnlyNulls(); // b locked, 3 not allowed
            l1.finishRead(List.of(b));
            assertThat(l1.reserveWrite(List.of(key(4)), LAYOUT, false)).doesNotContainNull();
            assertThat(l1.contains(b)).isFalse();
            assertThat(l1.contains(key(3))).isTrue();
            assertThat(l1.evictions()).isEqualTo(2);
            assertThat(l1.refusedStores()).isEqualTo(2);
            assertThat(l1.allowEviction(List.of(b))).isZero();
        }
    }

    @Test
    void existingAndRepeatedKeysAreNotReservedAgain() {
        try (L1Manager l1 = new L1Manager(CHUNK, 8)) {
            ObjectKey a = key(1);
            l1.reserveWrite(List.of(a), LAYOUT, false);
            List<MemoryObj> objs = l1.reserveWrite(List.of(a, key(2), key(2)), LAYOUT, false);
            assertThat(objs.get(0)).isNull();
            assertThat(objs.get(1)).isNotNull();
            assertThat(objs.get(2)).isNull();
            assertThat(l1.size()).isEqualTo(2);
        }
    }

    @Test
    void listenerRunsInsideTheLockForNonTemporaryObjectsOnly() {
        try (L1Manager l1 = new L1Manager(CHUNK, 8)) {
            List<ObjectKey> heard = new ArrayList<>();
            List<Boolean> insideLock = new ArrayList<>();
            l1.addListener(ks -> {
                heard.addAll(ks);
                insideLock.add(l1.lockHeldByCurrentThread());
            });
            l1.reserveWrite(keys(0, 2), LAYOUT, false);
            l1.reserveWrite(keys(2, 4), LAYOUT, true);
            l1.finishWrite(keys(0, 4));
            assertThat(heard).containsExactlyElementsOf(keys(0, 2));
            assertThat(insideLock).containsExactly(true);

            heard.clear();
            l1.reserveWrite(keys(4, 6), LAYOUT, false);
            l1.finishWrite(keys(0, 4)); // not write-locked any more: skipped, nothing announced
            assertThat(heard).isEmpty();
            assertThat(l1.finishWriteAndReserveRead(keys(4, 6))).doesNotContainNull();
            assertThat(heard).containsExactlyElementsOf(keys(4, 6));
        }
    }

    @Test
    void finishWriteAndReserveReadLeavesNoEvictionWindow() {
        try (L1Manager l1 = new L1Manager(CHUNK, 2)) {
            List<ObjectKey> ks = keys(0, 2);
            l1.reserveWrite(ks, LAYOUT, true);
            List<MemoryObj> objs = l1.finishWriteAndReserveRead(List.of(ks.get(0), key(77)));
            assertThat(objs.get(0)).isNotNull();
            assertThat(objs.get(1)).isNull(); // not write-locked: skipped
            assertThat(l1.isWriteLocked(ks.get(0))).isFalse();
            assertThat(l1.readLockCount(ks.get(0))).isEqualTo(1);
            // the pool is full and the temporary object is read-locked: nothing can be evicted
            assertThat(l1.reserveWrite(List.of(key(9)), LAYOUT, false)).containsOnlyNulls();
            assertThat(l1.contains(ks.get(0))).isTrue();
        }
    }

    @Test
    void prefixHitsCountOnlyLeadingReadyKeys() {
        try (L1Manager l1 = new L1Manager(CHUNK, 8)) {
            List<ObjectKey> ks = keys(0, 5);
            l1.reserveWrite(pick(ks, 0, 1, 2, 4), LAYOUT, false);
            l1.finishWrite(pick(ks, 0, 1, 4));
            assertThat(l1.prefixHits(ks)).isEqualTo(2); // 2 is still write-locked, 3 is absent
            assertThat(l1.prefixHits(pick(ks, 3, 0))).isZero();
            assertThat(l1.totalReadLocks()).isZero();
            assertThat(l1.reservePrefixRead(ks)).isEqualTo(2);
            assertThat(l1.readLockCount(ks.get(0))).isEqualTo(1);
            assertThat(l1.readLockCount(ks.get(1))).isEqualTo(1);
            assertThat(l1.readLockCount(ks.get(4))).isZero();
        }
    }

    @Test
    void thePoolIsOfferedToEachAdapterAndARawBlockAdapterOnIoUringRegistersIt() throws Exception {
        try (RawBlockL2Adapter rawBlock = (RawBlockL2Adapter) Fixtures.open(Fixtures.Kind.RAW_BLOCK, dir, "l1-reg");
             MockL2Adapter mock = new MockL2Adapter();
             L1Manager l1 = new L1Manager(CHUNK, 4)) {
            assertThat(l1.registerWith(mock)).as("the mock has no use for memory registration").isFalse();
            assertThat(l1.registerWith(rawBlock)).isTrue();
            List<ObjectKey> ks = keys(0, 2);
            List<MemoryObj> objs = l1.reserveWrite(ks, LAYOUT, false);
            objs.get(0).segment().fill((byte) 0x5a);
            String key = ks.get(0).encoded();
            assertThat(rawBlock.core().put(List.of(PutRequest.of(key, objs.get(0).segment())))).containsExactly(true);
            assertThat(rawBlock.core().load(List.of(new LoadRequest(key, objs.get(1).segment())))).containsExactly(true);
            assertThat(objs.get(1).segment().mismatch(objs.get(0).segment())).isEqualTo(-1);
            l1.unregisterAll();
            assertThat(l1.registerWith(rawBlock)).isTrue(); // close() unregisters it again
        }
    }

    @Test
    void closedManagerRefusesReservationsAndIgnoresReleases() {
        L1Manager l1 = new L1Manager(CHUNK, 2);
        l1.reserveWrite(keys(0, 1), LAYOUT, false);
        l1.close();
        l1.close();
        assertThatThrownBy(() -> l1.reserveWrite(keys(1, 2), LAYOUT, false)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThatThrownBy(() -> l1.reserveRead(keys(0, 1))).isInstanceOf(IllegalStateException.class);
        assertThat(l1.finishWrite(keys(0, 1))).isZero();
        assertThat(l1.finishRead(keys(0, 1))).isZero();
        assertThat(l1.delete(keys(0, 1))).isEmpty();
    }
}
