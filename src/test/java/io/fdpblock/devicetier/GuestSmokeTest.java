package io.fdpblock.devicetier;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The device tier's own smoke test: proves that the guest sees the NVMe namespace the tier promises.
 * Runs wherever {@code FDPBLOCK_NVME_DEVICE} names an NVMe generic character device (the emulated FDP
 * guest sets it, and so does a user running the hardware tier on a real FDP SSD); skips itself
 * everywhere else, like every {@code device} test.
 */
@Tag("device")
class GuestSmokeTest {
    private static final int S_IFMT = 0170000;
    private static final int S_IFCHR = 0020000;

    @Test
    void theNamedDeviceIsACharacterDeviceThisProcessCanOpen() throws IOException {
        Path dev = DeviceGuest.device();
        assertThat(dev).as("FDPBLOCK_NVME_DEVICE").exists();
        int mode = (Integer) Files.getAttribute(dev, "unix:mode");
        assertThat(mode & S_IFMT).as("file type of %s (octal mode %o)", dev, mode).isEqualTo(S_IFCHR);
        assertThat(Files.isReadable(dev) && Files.isWritable(dev)).as("%s readable and writable", dev).isTrue();
    }

    @Test
    void theNamespaceReportsItsMaximumTransferSize() throws IOException {
        Path sysfs = Path.of("/sys/block", DeviceGuest.blockName(DeviceGuest.device()), "queue", "max_hw_sectors_kb");
        String kb = Files.readString(sysfs).strip();
        assertThat(Integer.parseInt(kb)).as("%s", sysfs).isPositive();
    }
}
