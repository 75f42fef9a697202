package io.fdpblock.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.fdpblock.core.Inspector;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code fdpblock inspect DEVICE}: what a store left on a device, read-only. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Decode a store's metadata containers on a device or file (read-only): layout, seq, key count,"
                + " usage by cache salt, and slot-header checks.")
public final class InspectCommand implements Callable<Integer> {
    @Parameters(paramLabel = "DEVICE", description = "File, block device or /dev/ngXnY holding a raw_block store")
    Path device;

    @Option(names = "--block-align", defaultValue = "4096", description = "The store's block_align (default 4096)")
    int blockAlign;

    @Option(names = "--meta-total-bytes", defaultValue = "268435456",
            description = "The store's meta_total_bytes, to find container 1 when container 0 is unreadable")
    long metaTotalBytes;

    @Option(names = "--no-verify", description = "Skip reading every entry's slot header")
    boolean noVerify;

    @Option(names = "--json", description = "Print JSON")
    boolean json;

    @Override
    public Integer call() throws Exception {
        Inspector.Report r;
        try (BlockDevice d = BlockDevices.openReadOnly(device)) {
            r = Inspector.inspect(d, blockAlign, metaTotalBytes, !noVerify);
        }
        if (json) {
            System.out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(r));
            return r.badSlots().isEmpty() && r.winner() != null ? 0 : 1;
        }
        System.out.println(device);
        for (Inspector.Container c : r.containers()) {
            System.out.printf("  container %d @ %d: %s%n", c.index(), c.offset(), c.valid()
                    ? "seq " + c.seq() + ", " + c.payloadBytes() + " bytes of JSON" + (r.winner() == c.index() ? "  <- newest valid" : "")
                    : c.problem());
        }
        if (r.winner() == null) {
            System.out.println("  no valid checkpoint: a store opening this device starts empty");
            return 1;
        }
        System.out.println("  layout: " + r.layout());
        System.out.printf("  keys: %d, payload bytes: %d%n", r.keys(), r.payloadBytes());
        for (Map.Entry<String, long[]> e : r.bySalt().entrySet()) {
            System.out.printf("    cache salt %-20s %8d keys %14d bytes%n", e.getKey().isEmpty() ? "(none)" : e.getKey(),
                    e.getValue()[0], e.getValue()[1]);
        }
        if (!noVerify) {
            System.out.printf("  slot headers: %d checked, %d disagree%n", r.slotsChecked(), r.badSlots().size());
            r.badSlots().stream().limit(20).forEach(b -> System.out.printf("    %s @ %d: %s%n", b.key(), b.offset(),
                    b.problem()));
        }
        return r.badSlots().isEmpty() ? 0 : 1;
    }
}
