package io.fdpblock.devicetier;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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

    /** The NVMe generic character device under test ({@code /dev/ngXnY}), or the test is skipped. */
    static Path device() {
        String d = System.getenv("FDPBLOCK_NVME_DEVICE");
        assumeTrue(d != null && !d.isBlank(),
                "FDPBLOCK_NVME_DEVICE is not set: no NVMe device to test (the emulated FDP guest of the device"
                        + " tier sets it; for a real FDP SSD set it to its /dev/ngXnY)");
        return Path.of(d);
    }

    /** The namespace's block device name ({@code nvmeXnY}): FDPBLOCK_NVME_BLOCK, else derived from ngXnY. */
    static String blockName(Path device) {
        String b = System.getenv("FDPBLOCK_NVME_BLOCK");
        if (b != null && !b.isBlank()) {
            return Path.of(b).getFileName().toString();
        }
        String name = device.getFileName().toString();
        return name.startsWith("ng") ? "nvme" + name.substring(2) : name;
    }

    @Test
    void theNamedDeviceIsACharacterDeviceThisProcessCanOpen() throws IOException {
        Path dev = device();
        assertThat(dev).as("FDPBLOCK_NVME_DEVICE").exists();
        int mode = (Integer) Files.getAttribute(dev, "unix:mode");
        assertThat(mode & S_IFMT).as("file type of %s (octal mode %o)", dev, mode).isEqualTo(S_IFCHR);
        assertThat(Files.isReadable(dev) && Files.isWritable(dev)).as("%s readable and writable", dev).isTrue();
    }

    @Test
    void theNamespaceReportsItsMaximumTransferSize() throws IOException {
        Path sysfs = Path.of("/sys/block", blockName(device()), "queue", "max_hw_sectors_kb");
        String kb = Files.readString(sysfs).strip();
        assertThat(Integer.parseInt(kb)).as("%s", sysfs).isPositive();
    }
}
