package io.fdpblock.core;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.fuzz.Fuzzing;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;

/**
 * The raw_block configuration JSON a user writes ({@link RawBlockCoreConfig#fromJson(String)}). Input: the
 * JSON text (UTF-8). Documented: IllegalArgumentException naming the key or value. A configuration that
 * is accepted must hold what the store's arithmetic relies on, computed here without overflow, and build
 * again from its {@code toBuilder()}.
 */
public class RawBlockCoreConfigFuzzTest {
    @FuzzTest
    void configJson(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        RawBlockCoreConfig c;
        try {
            c = RawBlockCoreConfig.fromJson(new String(input, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            Fuzzing.requireMessage(e);
            return;
        }
        int align = c.blockAlign();
        if (align < 512 || Integer.bitCount(align) != 1 || c.headerBytes() % align != 0
                || c.slotBytes() % align != 0 || c.metaTotalBytes() % align != 0) {
            throw Fuzzing.wrong("alignment", c, "block_align a power of two >= 512 dividing every size");
        }
        if (c.maxPayloadBytes() <= 0 || c.maxPayloadBytes() > Integer.MAX_VALUE) {
            throw Fuzzing.wrong("payload per slot", c.maxPayloadBytes(), "1.." + Integer.MAX_VALUE);
        }
        if (c.containerBytes() <= align) {
            throw Fuzzing.wrong("container", c.containerBytes(), "more than one block");
        }
        BigInteger needed = BigInteger.valueOf(c.metaTotalBytes()).add(BigInteger.valueOf(c.slotBytes()));
        // fdpblock_v2 without meta_total_bytes sizes its metadata at open, which refuses a capacity too small
        boolean metaKnown = c.metaTotalBytesSet() || c.metaFormat() == RawBlockCoreConfig.MetaFormat.LMCACHE_V1;
        if (metaKnown && c.capacityBytes() != 0 && BigInteger.valueOf(c.capacityBytes()).compareTo(needed) < 0) {
            throw Fuzzing.wrong("capacity_bytes", c.capacityBytes(), "0 or at least meta_total_bytes + slot_bytes = "
                    + needed);
        }
        if (c.devicePath() == null || c.devicePath().isBlank() || c.ioEngine() == null) {
            throw Fuzzing.wrong("required fields", c, "a device path and an engine");
        }
        RawBlockCoreConfig copy = c.toBuilder().build();
        if (!copy.toString().equals(c.toString()) || !copy.devicePaths().equals(c.devicePaths())) {
            throw Fuzzing.wrong("toBuilder().build()", copy, c);
        }
    }
}
