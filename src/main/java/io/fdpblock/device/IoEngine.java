package io.fdpblock.device;

import java.util.Arrays;
import java.util.stream.Collectors;

/** The I/O engines, by their configuration names. */
public enum IoEngine {
    /** pread/pwrite on the caller's thread. */
    POSIX("posix"),
    /** io_uring READ/WRITE (fixed buffers where registered) with O_DIRECT, one reactor thread per device. */
    IO_URING("io_uring"),
    /** io_uring NVMe passthru ({@code IORING_OP_URING_CMD}) on {@code /dev/ngXnY}. */
    URING_CMD("uring_cmd"),
    /** Memory only: for tests of the layers above. */
    MEMORY("memory");

    private final String configName;

    IoEngine(String configName) {
        this.configName = configName;
    }

    public String configName() {
        return configName;
    }

    /** @throws IllegalArgumentException naming the value and the known engines */
    public static IoEngine parse(String name) {
        for (IoEngine e : values()) {
            if (e.configName.equalsIgnoreCase(name)) {
                return e;
            }
        }
        throw new IllegalArgumentException("unknown io_engine '" + name + "': use one of "
                + Arrays.stream(values()).map(IoEngine::configName).collect(Collectors.joining(", ")));
    }

    @Override
    public String toString() {
        return configName;
    }
}
