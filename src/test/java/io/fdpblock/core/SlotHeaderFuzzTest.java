package io.fdpblock.core;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.fuzz.Fuzzing;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Slot headers as recovery and {@code inspect} read them from the device ({@link OnDiskFormat#readSlotHeader}).
 * Input: the first bytes of a header block; the rest of the block is zeros (the smallest header_bytes,
 * 512, since header_bytes is a multiple of block_align >= 512). Nothing may escape: every block of bytes
 * is some header, valid or not.
 */
public class SlotHeaderFuzzTest {
    static final int HEADER_BYTES = 512;

    @FuzzTest
    void slotHeader(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        byte[] raw = Fuzzing.padded(input, 0, HEADER_BYTES);
        OnDiskFormat.SlotHeader h = OnDiskFormat.readSlotHeader(MemorySegment.ofArray(raw));
        boolean magic = Arrays.equals(raw, 0, 8, OnDiskFormat.SLOT_MAGIC, 0, 8);
        if (h.magicOk() != magic) {
            throw Fuzzing.wrong("magic", h.magicOk(), magic);
        }
        if (h.identity() != Fuzzing.u64(raw, 8)) {
            throw Fuzzing.wrong("identity", h.identity(), Fuzzing.u64(raw, 8));
        }
        if (h.payloadLength() != Fuzzing.u64(raw, 16)) {
            throw Fuzzing.wrong("payload length", h.payloadLength(), Fuzzing.u64(raw, 16));
        }
        boolean marker = Fuzzing.u32(raw, 28) == Integer.toUnsignedLong(OnDiskFormat.PAYLOAD_CRC_MARKER);
        if (h.hasCrc() != marker || h.crc32c() != (int) Fuzzing.u32(raw, 24)) {
            throw Fuzzing.wrong("payload CRC", h.hasCrc() + "/" + h.crc32c(), marker + "/" + (int) Fuzzing.u32(raw, 24));
        }
        int keyLen = (int) (Fuzzing.u32(raw, 32) & 0xFFFF);
        boolean keyFits = keyLen > 0 && 34 + keyLen <= HEADER_BYTES;
        if ((h.key() != null) != keyFits) {
            throw Fuzzing.wrong("key present", h.key() != null, keyFits);
        }
        // What the writer makes of these fields reads back as the same fields.
        MemorySegment again = MemorySegment.ofArray(new byte[HEADER_BYTES]);
        byte[] key = h.key() == null ? null : h.key().getBytes(StandardCharsets.UTF_8);
        OnDiskFormat.writeSlotHeader(again, h.identity(), h.payloadLength(), h.crc32c(), key);
        OnDiskFormat.SlotHeader back = OnDiskFormat.readSlotHeader(again);
        String keyBack = key == null || 34 + key.length > HEADER_BYTES ? null : h.key();
        if (!back.equals(new OnDiskFormat.SlotHeader(true, h.identity(), h.payloadLength(), true, h.crc32c(), keyBack))) {
            throw Fuzzing.wrong("write then read", back, h);
        }
    }
}
