package io.fdpblock.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fdpblock.devicetier.DeviceGuest;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The exclusive open of the namespace's block device: a brief kernel claim without a flock (what udev's
 * partition rescan makes after every close of a disk opened for writing, met by a store reopened right
 * after close) is waited for; another store's hold is refused at once, naming the holder; a claim that
 * lasts longer than the bound is refused.
 */
@Tag("device")
class ExclusiveBlockOpenNvmeDeviceTest {
    private Path block;

    @BeforeEach
    void namespaceBlockDevice() {
        block = Path.of("/dev", DeviceGuest.blockName(DeviceGuest.device()));
    }

    @Test
    void aBriefExclusiveClaimWithoutAFlockIsWaitedFor() throws Exception {
        AtomicBoolean released = new AtomicBoolean();
        NativeFile claim = NativeFile.open(block, false, false, false, true);
        CompletableFuture<Void> release = CompletableFuture.runAsync(() -> {
            released.set(true);
            claim.close();
        }, CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS));
        try (NativeFile f = NativeFile.openExclusive(block, true)) {
            assertThat(released).as("opened only once the claim was let go").isTrue();
            assertThat(f.kind()).isEqualTo(NativeFile.Kind.BLOCK_DEVICE);
        } finally {
            release.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aStoreHoldingTheDeviceMakesASecondExclusiveOpenFailNamingIt() throws Exception {
        try (NativeFile first = NativeFile.openExclusive(block, true)) {
            assertThatThrownBy(() -> NativeFile.openExclusive(block, true).close())
                    .isInstanceOf(DeviceInUseException.class)
                    .hasMessageContaining(block.toString())
                    .hasMessageContaining("another store has it open")
                    .hasMessageContaining("by this process");
        }
        NativeFile.openExclusive(block, true).close(); // let go at close
    }

    @Test
    void aClaimThatLastsBeyondTheBoundIsRefused() throws Exception {
        try (NativeFile claim = NativeFile.open(block, false, false, false, true)) {
            assertThatThrownBy(() -> NativeFile.openExclusive(block, true).close())
                    .isInstanceOf(DeviceInUseException.class)
                    .hasMessageContaining(block.toString())
                    .hasMessageContaining("O_EXCL")
                    .hasMessageContaining("still after 5 s");
        }
    }
}
