package io.fdpblock.core;

import io.fdpblock.core.tools.Inspector;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.DeviceOptions;
import io.fdpblock.device.IoEngine;
import io.fdpblock.linux.DeviceInUseException;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import java.lang.foreign.Arena;

/** One store owns a device at a time, in this process or across processes. */
@Tag("host")
class DeviceOwnershipTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    static RawBlockCoreConfig config(Path file, IoEngine engine) {
        long meta = RawBlockCoreConfig.v2MetaBytesFor(4096, 16);
        return RawBlockCoreConfig.builder(file.toString(), 16 << 10).capacityBytes(meta + 16 * (16 << 10))
                .metaTotalBytes(meta).ioEngine(engine).metaEnablePeriodic(false).build();
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING"})
    void aSecondStoreOnTheSameFileInThisProcessFailsAtOnceSayingItIsInUse(IoEngine engine) throws Exception {
        Path file = dir.resolve("dev.img");
        try (RawBlockCore first = RawBlockCore.open(config(file, engine))) {
            first.put(List.of(PutRequest.of("m@0x00000000@01", Arena.ofAuto().allocate(4096, 4096))));
            assertThatThrownBy(() -> RawBlockCore.open(config(file, engine)))
                    .isInstanceOf(DeviceInUseException.class)
                    .hasMessageContaining(file.toString()).hasMessageContaining("is in use")
                    .hasMessageContaining("by this process").hasMessageContaining("close the other store first");
            // a plain device open for I/O is refused as well: one owner
            assertThatThrownBy(() -> BlockDevices.open(file, DeviceOptions.of(engine)))
                    .isInstanceOf(DeviceInUseException.class);
            assertThat(first.keyCount()).isEqualTo(1);
        }
        // closed: the next owner gets it at once, with what the first one stored
        try (RawBlockCore second = RawBlockCore.open(config(file, engine))) {
            assertThat(second.keyCount()).isEqualTo(1);
        }
    }

    @Test
    void readOnlyInspectionIsNotOwnership() throws Exception {
        Path file = dir.resolve("dev.img");
        try (RawBlockCore owner = RawBlockCore.open(config(file, IoEngine.IO_URING));
             BlockDevice ro = BlockDevices.openReadOnly(file)) {
            assertThat(Inspector.inspect(ro, 4096, 1 << 20, false).containers()).hasSize(2);
            assertThat(owner.keyCount()).isZero();
        }
    }

    /** Holds a store open in this JVM until its standard input closes (run by the test below). */
    public static final class Holder {
        public static void main(String[] args) throws Exception {
            try (RawBlockCore core = RawBlockCore.open(config(Path.of(args[0]), IoEngine.IO_URING))) {
                System.out.println("OPEN " + core.keyCount());
                System.out.flush();
                while (System.in.read() >= 0) {
                    // hold until the parent closes our stdin
                }
            }
        }
    }

    @Test
    void aStoreOpenInAnotherProcessMakesTheOpenFailAtOnce() throws Exception {
        Path file = dir.resolve("shared.img");
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-cp",
                System.getProperty("java.class.path"), Holder.class.getName(), file.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            assertThat(out.readLine()).as("the child opened the store").isEqualTo("OPEN 0");
            assertThatThrownBy(() -> RawBlockCore.open(config(file, IoEngine.IO_URING)))
                    .isInstanceOf(DeviceInUseException.class).hasMessageContaining("another store has it open")
                    .hasMessageContaining("by process " + child.pid());
        } finally {
            child.getOutputStream().close();
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
        assertThat(child.exitValue()).isZero();
        try (RawBlockCore mine = RawBlockCore.open(config(file, IoEngine.IO_URING))) {
            assertThat(mine.keyCount()).isZero();
        }
    }
}
