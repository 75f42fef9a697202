package io.fdpblock.l2;

import io.fdpblock.testing.KeyHashes;
import io.fdpblock.util.KeyHash;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hash an ObjectKey keeps is the store's identity of its encoded form (fdpblock_v2 records it on the
 * device): its values never change, it is computed once per key, and every thread sees the same.
 */
@Tag("unit")
class ObjectKeyHashTest {

    private static byte[] bytes(int n, int first, int step) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (first + i * step);
        }
        return b;
    }

    private static void assertHash(ObjectKey k, long high, long low) {
        assertThat(k.encodedHashHigh()).as("high bits of %s", k.encoded()).isEqualTo(high);
        assertThat(k.encodedHashLow()).as("low bits of %s", k.encoded()).isEqualTo(low);
    }

    /**
     * Values computed with the store's key hash before keys kept their own (XXH3-128 of the encoded
     * key's chars): a salt, a group, non-ASCII, an empty chunk hash, and a key past the scratch buffer.
     */
    @Test
    void pinnedValuesOfTheOnDeviceIdentity() {
        ObjectKey plain = ObjectKey.of("meta-llama/Llama-3.1-8B", 0, bytes(16, 3, 17));
        assertThat(plain.encoded()).isEqualTo("meta-llama%2FLlama-3.1-8B@0x00000000@031425364758697a8b9cadbecfe0f102");
        assertHash(plain, 0x9e9bd78088e2e783L, 0xfeeaf3bba4688629L);
        ObjectKey salted = ObjectKey.of("meta-llama/Llama-3.1-8B", 0x04030201, bytes(32, 255, -1)).withCacheSalt("tenant-a");
        assertHash(salted, 0xc48ac14328cdb94bL, 0x7b20f22309108fdcL);
        ObjectKey grouped = ObjectKey.of("모델", 1, new byte[] {0, (byte) 0xff}).withObjectGroupId(7);
        assertThat(grouped.encoded()).isEqualTo("%EB%AA%A8%EB%8D%B8@0x00000001@00ff/g7");
        assertHash(grouped, 0xeb7d8e58a37b8f51L, 0xa9a7f2784ffa1abcL);
        assertHash(ObjectKey.of("m", 0, new byte[0]), 0x4ec9b2b5551f150dL, 0xdadce91efbd38bf9L);
        ObjectKey longKey = ObjectKey.of("long/".repeat(110), 2, bytes(16, 3, 17));
        assertThat(longKey.encoded()).hasSizeGreaterThan(512);
        assertHash(longKey, 0x485327a062966956L, 0x327a3d8d3c3a6c53L);
    }

    @Test
    void equalKeysHaveTheHashOfTheirEncodedForm() {
        ObjectKey a = ObjectKey.of("m", 1, new byte[] {1, 2}).withCacheSalt("s");
        ObjectKey b = ObjectKey.fromEncoded(a.encoded());
        assertThat(b.encodedHashHigh()).isEqualTo(a.encodedHashHigh())
                .isEqualTo(KeyHash.of(a.encoded()).getMostSignificantBits());
        assertThat(b.encodedHashLow()).isEqualTo(a.encodedHashLow())
                .isEqualTo(KeyHash.of(a.encoded()).getLeastSignificantBits());
        assertThat(a.withObjectGroupId(1).encodedHashHigh()).isNotEqualTo(a.encodedHashHigh());
    }

    @Test
    void aKeyIsHashedOnceHoweverOftenItIsAsked() {
        ObjectKey k = ObjectKey.of("m", 0, new byte[] {42});
        long before = KeyHashes.computed();
        for (int i = 0; i < 5; i++) {
            k.encodedHashHigh();
            k.encodedHashLow();
        }
        assertThat(KeyHashes.computed() - before).isEqualTo(1);
    }

    /** Threads that ask a fresh key at once all get its value: the hash is published as one object. */
    @Test
    void threadsAskingAFreshKeyAtOnceAllGetItsValue() throws Exception {
        int threads = 4;
        int keys = 2_000;
        List<ObjectKey> shared = new ArrayList<>(keys);
        for (int i = 0; i < keys; i++) {
            shared.add(ObjectKey.of("model", i, bytes(16, i, 7)));
        }
        long[] high = new long[keys];
        long[] low = new long[keys];
        for (int i = 0; i < keys; i++) {
            ObjectKey twin = ObjectKey.fromEncoded(shared.get(i).encoded()); // the same key, hashed apart
            high[i] = twin.encodedHashHigh();
            low[i] = twin.encodedHashLow();
        }
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                results.add(pool.submit(() -> {
                    start.await();
                    int wrong = 0;
                    for (int i = 0; i < keys; i++) {
                        ObjectKey k = shared.get(i);
                        if (k.encodedHashLow() != low[i] || k.encodedHashHigh() != high[i]) {
                            wrong++;
                        }
                    }
                    return wrong;
                }));
            }
            for (Future<Integer> f : results) {
                assertThat(f.get()).isZero();
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
