package io.fdpblock.adapter;

import io.fdpblock.l2.ObjectKey;
import io.fdpblock.util.KeyHash;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The adapter's batch of keys: each key's hash in the store's form, the thread's arrays reused from one
 * call to the next, and a batch opened while another is still open never writing over it.
 */
@Tag("unit")
class HashedKeyBatchTest {
    private static List<ObjectKey> keys(String salt, int n) {
        List<ObjectKey> keys = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            keys.add(ObjectKey.of("org/model", 0, new byte[] {(byte) i, 7}).withCacheSalt(salt));
        }
        return keys;
    }

    private static void assertHashesOf(HashedKeyBatch batch, List<ObjectKey> keys) {
        assertThat(batch.size()).isEqualTo(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            String text = keys.get(i).encoded();
            assertThat(batch.text(i)).isEqualTo(text);
            assertThat(batch.h1(i)).as("h1 of key %d", i).isEqualTo(KeyHash.of(text).getMostSignificantBits());
            assertThat(batch.h2(i)).as("h2 of key %d", i).isEqualTo(KeyHash.of(text).getLeastSignificantBits());
        }
    }

    @Test
    void carriesEachKeysHashAsTheStoreComputesIt() {
        List<ObjectKey> keys = keys("a", 5);
        try (HashedKeyBatch batch = HashedKeyBatch.of(keys, true)) {
            assertThat(batch.carriesHashes()).isTrue();
            assertHashesOf(batch, keys);
        }
    }

    @Test
    void aLaterCallOnTheThreadReusesItsBatchWithTheNewKeys() {
        HashedKeyBatch first;
        try (HashedKeyBatch batch = HashedKeyBatch.of(keys("a", 40), true)) {
            first = batch;
        }
        List<ObjectKey> fewer = keys("b", 3);
        try (HashedKeyBatch batch = HashedKeyBatch.of(fewer, true)) {
            assertThat(batch).isSameAs(first);
            assertHashesOf(batch, fewer); // size 3, though its arrays hold 40
        }
        List<ObjectKey> more = keys("c", 100);
        try (HashedKeyBatch batch = HashedKeyBatch.of(more, true)) {
            assertHashesOf(batch, more); // arrays grown
        }
    }

    @Test
    void aBatchOpenedWhileAnotherIsOpenLeavesThatOneIntact() {
        List<ObjectKey> outer = keys("outer", 8);
        List<ObjectKey> inner = keys("inner", 8);
        try (HashedKeyBatch a = HashedKeyBatch.of(outer, true)) {
            try (HashedKeyBatch b = HashedKeyBatch.of(inner, true)) {
                assertThat(b).isNotSameAs(a);
                assertHashesOf(b, inner);
            }
            assertHashesOf(a, outer);
        }
    }

    @Test
    void eachThreadHasItsOwn() throws Exception {
        HashedKeyBatch[] other = new HashedKeyBatch[1];
        Thread t = Thread.ofPlatform().start(() -> {
            try (HashedKeyBatch b = HashedKeyBatch.of(keys("t", 2), true)) {
                other[0] = b;
            }
        });
        t.join();
        try (HashedKeyBatch mine = HashedKeyBatch.of(keys("m", 2), true)) {
            assertThat(mine).isNotSameAs(other[0]);
        }
    }

    @Test
    void withoutHashesItNeitherCarriesNorComputesThem() {
        List<ObjectKey> keys = keys("v1", 4);
        try (HashedKeyBatch batch = HashedKeyBatch.of(keys, false)) {
            assertThat(batch.carriesHashes()).isFalse();
            assertThat(batch.text(3)).isEqualTo(keys.get(3).encoded());
        }
    }

    @Test
    void aClosedBatchNoLongerHoldsTheCallersKeys() {
        HashedKeyBatch batch = HashedKeyBatch.of(keys("x", 2), true);
        batch.close();
        assertThatThrownBy(batch::size).isInstanceOf(NullPointerException.class);
    }
}
