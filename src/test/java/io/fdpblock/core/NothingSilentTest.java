package io.fdpblock.core;

import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoEngine;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What the store does where it used to do something silently: a refused open that had created its
 * device file, a put with one cache salt too many, a placement id on a store without FDP, a config
 * with text after its object, a load into a buffer the I/O thread cannot write.
 */
@Tag("host")
class NothingSilentTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private RawBlockCoreConfig.Builder config(Path file) {
        return RawBlockCoreConfig.builder(file.toString(), 64 << 10).capacityBytes(32L << 20).metaTotalBytes(2L << 20)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false);
    }

    @Test
    void aRefusedOpenRemovesTheDeviceFileItCreatedButNeverOneItFound() throws Exception {
        Path made = dir.resolve("new.img");
        // a file cannot carry placement ids: refused after the file was created
        assertThatThrownBy(() -> RawBlockCore.open(config(made).fdpEnabled(true).build()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fdp_enabled = true");
        assertThat(made).as("the file this open created, fallocated to capacity_bytes").doesNotExist();

        Path found = BlockDevices.createFile(dir.resolve("found.img"), 32L << 20);
        Files.write(found, new byte[] {42}, java.nio.file.StandardOpenOption.WRITE);
        assertThatThrownBy(() -> RawBlockCore.open(config(found).fdpEnabled(true).build()))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(found).as("a file the open found").exists().hasSize(32L << 20);
        assertThat(Files.readAllBytes(found)[0]).isEqualTo((byte) 42);
    }
}
