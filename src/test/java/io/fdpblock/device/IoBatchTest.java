package io.fdpblock.device;

import io.fdpblock.nvme.PlacementId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Tag("unit")
class IoBatchTest {
    @Test
    void placementIdsOutsideTheRangeAreRejectedBeforeAnyIo() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            IoBatch b = new IoBatch(1);
            assertThatThrownBy(() -> b.write(0, buf, PlacementId.of(-1))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("placement id -1 is outside 0..65535");
            assertThatThrownBy(() -> b.write(0, buf, PlacementId.of(65536))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("65536");
            assertThat(b.size()).isZero();
            int i = b.write(0, buf, PlacementId.of(65535));
            int j = b.write(4096, buf);
            int k = b.write(8192, buf, PlacementId.of(0));
            assertThat(b.placementId(i).value()).isEqualTo(65535);
            assertThat(b.placementId(j)).isEqualTo(PlacementId.NONE);
            assertThat(b.placementId(k).value()).as("id 0 is a real id, not 'none'").isZero();
            assertThat(b.placementId(k).isNone()).isFalse();
        }
    }

    @Test
    void growsAndResets() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            IoBatch b = new IoBatch(1);
            for (int i = 0; i < 100; i++) {
                assertThat(b.read(i * 4096L, buf)).isEqualTo(i);
            }
            assertThat(b.size()).isEqualTo(100);
            assertThat(b.isRead(99)).isTrue();
            b.reset();
            assertThat(b.size()).isZero();
            assertThatThrownBy(() -> b.offset(0)).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void failureNamesTheOperationAndErrno() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            IoBatch b = new IoBatch(1);
            b.devicePath = "/dev/test";
            b.write(8192, buf, PlacementId.of(7));
            b.complete(0, -22);
            assertThat(b.failed(0)).isTrue();
            assertThat(b.failure(0)).hasMessageContaining("write(/dev/test, offset=8192, length=4096, placement id=7)")
                    .hasMessageContaining("EINVAL (22");
            assertThatThrownBy(b::throwIfFailed).hasMessageContaining("EINVAL");
        }
    }
}
