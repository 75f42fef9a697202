package io.fdpblock.device;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("unit")
class AlignedBufferPoolTest {
    @Test
    void buffersAreAlignedDistinctAndReturned() {
        try (AlignedBufferPool pool = new AlignedBufferPool(8192, 4, 4096)) {
            Set<Long> addresses = new HashSet<>();
            MemorySegment[] got = new MemorySegment[4];
            for (int i = 0; i < 4; i++) {
                got[i] = pool.acquire();
                assertThat(got[i].address() % 4096).isZero();
                assertThat(got[i].byteSize()).isEqualTo(8192);
                assertThat(pool.contains(got[i])).isTrue();
                addresses.add(got[i].address());
            }
            assertThat(addresses).hasSize(4);
            assertThat(pool.tryAcquire()).isNull();
            assertThatThrownBy(pool::acquire).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("all 4 buffers of 8192 bytes are in use");
            pool.release(got[2]);
            assertThat(pool.available()).isEqualTo(1);
            assertThat(pool.acquire().address()).isEqualTo(got[2].address());
            pool.release(got[2]);
            assertThatThrownBy(() -> pool.release(got[2])).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("released twice");
        }
    }

    @Test
    void badGeometryIsRejected() {
        assertThatThrownBy(() -> new AlignedBufferPool(4096, 1, 3000)).hasMessageContaining("power of two");
        assertThatThrownBy(() -> new AlignedBufferPool(5000, 1, 4096)).hasMessageContaining("multiple of the alignment");
        try (AlignedBufferPool pool = new AlignedBufferPool(4096, 2, 4096);
             AlignedBufferPool other = new AlignedBufferPool(4096, 1, 4096)) {
            assertThatThrownBy(() -> pool.release(other.acquire())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("does not belong");
        }
    }
}
