package io.fdpblock.core.v1;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.fuzz.Fuzzing;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.zip.CRC32;

/**
 * A checkpoint container as recovery reads it from the meta area: the header in its own block
 * ({@link ContainerFormat#readContainerHeader}, {@code plausible}), the payload's CRC-32, then the payload
 * through the same checks as {@link CheckpointPayloadFuzzTest}.
 *
 * <p>Input: the 32 header bytes, then the payload area (zero-padded to the header's length, as the device
 * returns whole blocks; the header block's other bytes are never read). The payload is decoded whatever
 * its CRC: a CRC guards against torn writes, not against a hostile or buggy writer, and decoding it anyway
 * lets the fuzzer reach the JSON without forging a CRC. Nothing may escape the header and CRC steps.
 */
public class CheckpointContainerFuzzTest {
    static final int BLOCK_ALIGN = 512;
    /** The container's payload area (containerBytes - blockAlign): 1 MiB keeps each run cheap. */
    static final long ROOM = 1 << 20;

    @FuzzTest
    void container(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        byte[] block = Fuzzing.padded(input, 0, BLOCK_ALIGN);
        ContainerFormat.ContainerHeader h = ContainerFormat.readContainerHeader(MemorySegment.ofArray(block));
        boolean magic = Arrays.equals(block, 0, 8, ContainerFormat.CONTAINER_MAGIC, 0, 8);
        if (h.magicOk() != magic || h.version() != (int) Fuzzing.u32(block, 8) || h.seq() != Fuzzing.u64(block, 12)
                || h.payloadLength() != Fuzzing.u64(block, 20) || h.crc32() != (int) Fuzzing.u32(block, 28)) {
            throw Fuzzing.wrong("container header", h, Arrays.toString(Arrays.copyOf(block, 32)));
        }
        // fdpblock's seal: only a seal whose magic and CRC32C check out may vouch for bytes 12..31
        if (h.sealMatches() && (h.seal() == null || !h.seal().intact() || h.seal().seq() != h.seq())) {
            throw Fuzzing.wrong("seal", h.seal(), "intact, with the header's seq " + h.seq());
        }
        if (h.blank() != Arrays.equals(block, 0, 64, new byte[64], 0, 64)) {
            throw Fuzzing.wrong("blank header", h.blank(), "bytes 0..63 all zero");
        }
        // the trailer as a damaged container's payload would be read: nothing escapes, and an intact one
        // has its zero word and magic
        ContainerFormat.Trailer t = ContainerFormat.readTrailer(MemorySegment.ofArray(block));
        if (t != null && (Fuzzing.u32(block, 0) != 0
                || !Arrays.equals(block, 4, 12, ContainerFormat.TRAILER_MAGIC, 0, 8))) {
            throw Fuzzing.wrong("trailer", t, "zero word and FDBCKP01");
        }
        if (!h.plausible(ROOM)) {
            return; // recovery reads no payload for it
        }
        // What recovery relies on before it allocates and reads the payload.
        if (!magic || h.version() != RawBlockCoreConfig.META_VERSION || h.payloadLength() <= 0
                || h.payloadLength() > ROOM) {
            throw Fuzzing.wrong("plausible header", h, "magic, version 1 and a length in 1.." + ROOM);
        }
        byte[] payload = Fuzzing.padded(input, ContainerFormat.CONTAINER_HEADER_BYTES, (int) h.payloadLength());
        // The writer's CRC (ContainerFormat.crc32 over a segment) and the reader's (CRC32 over the bytes) agree.
        CRC32 reader = new CRC32();
        reader.update(payload);
        if (ContainerFormat.crc32(MemorySegment.ofArray(payload)) != (int) reader.getValue()) {
            throw Fuzzing.wrong("payload CRC", ContainerFormat.crc32(MemorySegment.ofArray(payload)),
                    (int) reader.getValue());
        }
        CheckpointPayloadFuzzTest.check(payload);
    }
}
