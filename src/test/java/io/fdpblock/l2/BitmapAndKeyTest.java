package io.fdpblock.l2;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("unit")
class BitmapAndKeyTest {
    @Test
    void bitmapOperations() {
        Bitmap b = Bitmap.parse("11010");
        assertThat(b.size()).isEqualTo(5);
        assertThat(b.cardinality()).isEqualTo(3);
        assertThat(b.leadingOnes()).isEqualTo(2);
        assertThat(b.indices()).containsExactly(0, 1, 3);
        assertThat(b.not().toString()).isEqualTo("00101");
        assertThat(b.and(Bitmap.parse("01011")).toString()).isEqualTo("01010");
        assertThat(b.or(Bitmap.parse("00001")).toString()).isEqualTo("11011");
        Bitmap full = new Bitmap(130);
        for (int i = 0; i < 130; i++) {
            full.set(i);
        }
        assertThat(full.leadingOnes()).isEqualTo(130);
        full.clear(64);
        assertThat(full.leadingOnes()).isEqualTo(64);
        assertThat(new Bitmap(0).leadingOnes()).isZero();
        assertThat(new Bitmap(70).not().cardinality()).isEqualTo(70);
        assertThatThrownBy(() -> b.get(5)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> b.and(new Bitmap(4))).hasMessageContaining("sizes 5 and 4");
        assertThat(Bitmap.parse("101")).isEqualTo(Bitmap.of(new boolean[] {true, false, true}));
    }

    @Test
    void objectKeysAreValuesAndValidated() {
        ObjectKey a = ObjectKey.of("m", 1, new byte[] {1, 2}).withCacheSalt("s");
        ObjectKey b = ObjectKey.of("m", 1, new byte[] {1, 2}).withCacheSalt("s");
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(a).isNotEqualTo(a.withObjectGroupId(1));
        assertThat(a.encoded()).isNotEqualTo(a.withObjectGroupId(1).encoded());
        assertThat(ObjectKey.fromEncoded(a.withObjectGroupId(4).encoded())).isEqualTo(a.withObjectGroupId(4));
        assertThatThrownBy(() -> ObjectKey.of("a@b", 0, new byte[0])).hasMessageContaining("without '@'");
        assertThatThrownBy(() -> a.withCacheSalt("x/y")).hasMessageContaining("'/'");
        assertThatThrownBy(() -> a.withCacheSalt("x\0")).hasMessageContaining("NUL");
        assertThatThrownBy(() -> a.withCacheSalt("s".repeat(129))).hasMessageContaining("129 chars exceeds 128");
        assertThatThrownBy(() -> a.withObjectGroupId(-1)).hasMessageContaining(">= 0");
    }
}
