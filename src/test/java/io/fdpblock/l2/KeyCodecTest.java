package io.fdpblock.l2;

import io.fdpblock.core.SlotIdentity;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import org.assertj.core.api.Assertions;

@Tag("unit")
class KeyCodecTest {
    private static final byte[] HASH = {0, 0, 3, 0x15};

    @Test
    void groupZeroKeysAreLmcacheKeys() {
        assertThat(KeyCodec.encode("org/model", 7, HASH, "", 0)).isEqualTo("org%2Fmodel@0x00000007@00000315");
        assertThat(KeyCodec.encode("org/model", 7, HASH, "tenant", 0)).isEqualTo("org%2Fmodel@0x00000007@00000315@tenant");
        assertThat(KeyCodec.encode("a b:c~d_e.f-g", 0x01020304, new byte[] {(byte) 0xAB}, "", 0))
                .isEqualTo("a%20b%3Ac~d_e.f-g@0x01020304@ab");
        assertThat(KeyCodec.encode("modèle", -1, new byte[0], null, 0)).isEqualTo("mod%C3%A8le@0xffffffff@");
    }

    @Test
    void slotIdentityIsBlake2bWithAnEightByteDigestReadLittleEndian() {
        // Test vectors computed with Python: int.from_bytes(blake2b(k.encode(), digest_size=8).digest(), "little")
        assertThat(SlotIdentity.of("org%2Fmodel@0x00000007@00000315")).isEqualTo(0xd7969063f32639faL);
        assertThat(SlotIdentity.of("org%2Fmodel@0x00000007@0@00000315")).isEqualTo(0x755612764f4e1cc0L);
        assertThat(SlotIdentity.of("m@0x00000000@1@00000001")).isEqualTo(0x9f7b44bcfbebef20L);
    }

    @Test
    void keysThatDifferOnlyByGroupDoNotCollide() {
        String g0 = KeyCodec.encode("m", 1, HASH, "s", 0);
        String g1 = KeyCodec.encode("m", 1, HASH, "s", 1);
        String g2 = KeyCodec.encode("m", 1, HASH, "s", 2);
        assertThat(g0).isNotEqualTo(g1).isNotEqualTo(g2);
        assertThat(g1).isNotEqualTo(g2).isEqualTo("m@0x00000001@00000315@s/g1");
        // a salt can never produce the group suffix: '/' is not allowed in salts
        assertThat(KeyCodec.encode("m", 1, HASH, "", 5)).isNotEqualTo(KeyCodec.encode("m", 1, HASH, "g5", 0));
        assertThat(SlotIdentity.of(g0)).isNotEqualTo(SlotIdentity.of(g1));
    }

    @Test
    void decodeUndoesEncode() {
        String k = KeyCodec.encode("org/modèle 1", 0x0a0b0c0d, new byte[] {1, (byte) 0xFF}, "rag:app1", 3);
        KeyCodec.Parts p = KeyCodec.decode(k);
        assertThat(p.modelName()).isEqualTo("org/modèle 1");
        assertThat(p.kvRank()).isEqualTo(0x0a0b0c0d);
        assertThat(p.chunkHash()).containsExactly(1, (byte) 0xFF);
        assertThat(p.cacheSalt()).isEqualTo("rag:app1");
        assertThat(p.objectGroupId()).isEqualTo(3);
        assertThat(KeyCodec.decode("m@0x00000001@ab").cacheSalt()).isEmpty();
        Assertions.assertThatThrownBy(() -> KeyCodec.decode("nonsense"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("nonsense");
    }
}
