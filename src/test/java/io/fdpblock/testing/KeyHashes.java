package io.fdpblock.testing;

import io.fdpblock.util.KeyHash;

import static org.assertj.core.api.Assertions.assertThat;

/** The key hashes this JVM computed, for the tests that check a key is hashed once. */
public final class KeyHashes {
    private KeyHashes() {}

    /**
     * How many {@link KeyHash} computed so far; compare two readings.
     *
     * @throws AssertionError when the JVM does not count (it counts only with the system property the pom's
     *         surefire configuration sets)
     */
    public static long computed() {
        long n = KeyHash.computedCount();
        assertThat(n).as("KeyHash counts only with -D%s=true, which the pom's surefire configuration sets",
                KeyHash.COUNT_PROPERTY).isNotNegative();
        return n;
    }
}
