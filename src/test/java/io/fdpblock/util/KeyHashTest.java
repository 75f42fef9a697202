package io.fdpblock.util;

import com.dynatrace.hash4j.hashing.HashValue128;
import com.dynatrace.hash4j.hashing.Hashing;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/** A key's hash is its identity on a fdpblock_v2 device: it must equal XXH3-128 of its chars, always. */
@Tag("unit")
class KeyHashTest {

    private static HashValue128 ofChars(String key) {
        return Hashing.xxh3_128().hashCharsTo128Bits(key);
    }

    /** Values pinned as stores written so far hold them (XXH3-128; the empty key's is XXH3's reference value). */
    @Test
    void pinnedValuesOfTheOnDeviceIdentity() {
        assertThat(KeyHash.of("")).isEqualTo(new HashValue128(0x99aa06d3014798d8L, 0x6001c324468d497fL));
        assertThat(KeyHash.of("a")).isEqualTo(new HashValue128(0xfe6c33c14011b578L, 0x0d78baac08237ddbL));
        assertThat(KeyHash.of("fdpblock-bench%2Fmodel@0x00000000@6664706c626c6f636b0000000000000001"))
                .isEqualTo(new HashValue128(0x28b01fdeedaa26ccL, 0x6c5b6527bf150eabL));
        assertThat(KeyHash.of("모델@0x00000001@00ff")).isEqualTo(new HashValue128(0x67ea3f19b99c6402L, 0xd4855f5070d47c8dL));
        assertThat(KeyHash.of("x".repeat(600))).isEqualTo(new HashValue128(0x1f0436ede386cfc1L, 0x203fdacf95f51eb9L));
    }

    /**
     * Every length from 0 to past the scratch buffer covers each XXH3 size class (0, 1-3, 4-8, 9-16,
     * 17-128, 129-240 bytes, longer) and the char-path fallback; Latin-1, any UTF-16 unit (lone
     * surrogates included) and surrogate pairs.
     */
    @Test
    void equalsTheCharPathForEveryLengthAndAnyChars() {
        SplittableRandom r = new SplittableRandom(7);
        for (int len = 0; len <= KeyHash.SCRATCH_CHARS + 40; len++) {
            for (int kind = 0; kind < 3; kind++) {
                StringBuilder sb = new StringBuilder(len);
                while (sb.length() < len) {
                    switch (kind) {
                        case 0 -> sb.append((char) r.nextInt(0x20, 0x100));
                        case 1 -> sb.append((char) r.nextInt(0x10000));
                        default -> {
                            if (sb.length() + 2 <= len) {
                                sb.appendCodePoint(r.nextInt(0x10000, 0x110000));
                            } else {
                                sb.append('z');
                            }
                        }
                    }
                }
                String key = sb.toString();
                assertThat(KeyHash.of(key)).as("length %d, kind %d", len, kind).isEqualTo(ofChars(key));
            }
        }
    }

    /** A short key after a long one: the scratch buffer holds stale bytes past the key, which must not count. */
    @Test
    void staleScratchBytesDoNotLeakIntoTheNextHash() {
        KeyHash.of("y".repeat(KeyHash.SCRATCH_CHARS));
        assertThat(KeyHash.of("ab")).isEqualTo(ofChars("ab"));
    }

    /** Each thread has its own scratch buffer: hashing from many threads at once gives each key its value. */
    @Test
    void threadsHashingAtOnceGetTheirOwnKeysValues() throws Exception {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            keys.add("model@0x00000000@" + Integer.toHexString(i * 7919) + "x".repeat(i % 300));
        }
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int offset = t;
                results.add(pool.submit(() -> {
                    int mismatches = 0;
                    for (int round = 0; round < 20; round++) {
                        for (int i = 0; i < keys.size(); i++) {
                            String key = keys.get((i + offset * 251) % keys.size());
                            if (!KeyHash.of(key).equals(ofChars(key))) {
                                mismatches++;
                            }
                        }
                    }
                    return mismatches;
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
