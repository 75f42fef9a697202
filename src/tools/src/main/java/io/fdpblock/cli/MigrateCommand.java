package io.fdpblock.cli;

import io.fdpblock.core.tools.Migration;
import io.fdpblock.core.tools.MigrationRefusedException;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.StoreLayout;
import io.fdpblock.device.IoEngine;
import io.fdpblock.tools.util.Sizes;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code fdpblock migrate --device PATH --to FORMAT}: converts a store in place between lmcache_v1 and
 * fdpblock_v2 ({@link Migration}). The layout comes from the store itself; the options give what it
 * does not record.
 */
@Command(name = "migrate", mixinStandardHelpOptions = true,
        description = "Convert a store in place between the metadata formats lmcache_v1 and fdpblock_v2: every key"
                + " keeps its slot and bytes, only the metadata area is rewritten (its size, where the data starts,"
                + " never changes). Crash-safe: stopped at any point, the device opens in one of the two formats with"
                + " every key, and running migrate again finishes. Refused, with nothing changed, when a store has the"
                + " device open, it already has the target format, it is unreadable or damaged, or the target cannot"
                + " hold its keys in that metadata area.",
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:migrated", "2:bad arguments, the store already has the target format, options that differ"
                + " from the store's layout, or one it needs is missing (nothing changed)", "3:refused (device in use, no store, unreadable,"
                + " damaged, target too small; nothing changed), or an I/O error part way (the message says which"
                + " format the device opens in)"})
public final class MigrateCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--device", required = true, paramLabel = "PATH",
            description = "File, block device or /dev/ngXnY holding the store")
    Path device;

    @Option(names = "--to", required = true, paramLabel = "FORMAT", description = "fdpblock_v2 or lmcache_v1")
    String to;

    @Option(names = "--engine", defaultValue = "io_uring", description = "io_uring (default), posix, or uring_cmd"
            + " (NVMe generic device)")
    String engine;

    @Option(names = "--block-align", description = "The store's block_align (default: 4096, or what its superblock"
            + " records); needed only when it is not 4096 and container 0 or superblock A is unreadable")
    Integer blockAlign;

    @Option(names = "--header-bytes", description = "The store's header_bytes, if its checkpoint does not record it")
    Integer headerBytes;

    @Option(names = "--slot-bytes", description = "The store's slot_bytes, if its checkpoint does not record it")
    Long slotBytes;

    @Option(names = "--meta-total-bytes", description = "The store's meta_total_bytes: needed for an lmcache_v1 store"
            + " whose container 0 is unreadable (it records where container 1 is)")
    Long metaTotalBytes;

    @Option(names = "--capacity-bytes", description = "The store's capacity_bytes, if its checkpoint does not record it")
    Long capacityBytes;

    @Option(names = "--json", description = "Print the result as JSON")
    boolean json;

    @Override
    public Integer call() throws Exception {
        RawBlockCoreConfig.MetaFormat target;
        try {
            target = RawBlockCoreConfig.MetaFormat.parse(to);
        } catch (IllegalArgumentException e) {
            throw Cli.bad(spec, "--to " + to + " is not a format: use fdpblock_v2 or lmcache_v1");
        }
        IoEngine e = Cli.engine(spec, engine);
        if (e == IoEngine.MEMORY) {
            throw Cli.bad(spec, "--engine memory has no device to migrate: use io_uring (default), posix or uring_cmd");
        }
        if (Files.isDirectory(device)) {
            throw Cli.bad(spec, "--device " + device + " is a directory: name the store's file or device");
        }
        if (!Files.exists(device)) {
            throw Cli.bad(spec, "--device " + device + " does not exist: name the file or device that holds the store");
        }
        String what = Cli.notFileOrDevice(device);
        if (what != null) {
            throw Cli.bad(spec, "--device " + device + " is " + what + ", not a file or a device: name the file or"
                    + " device that holds the store");
        }
        int align = blockAlign == null ? RawBlockCoreConfig.DEFAULT_BLOCK_ALIGN : Cli.blockAlign(spec, blockAlign);
        if (headerBytes != null && (headerBytes < align || headerBytes % align != 0)) {
            throw Cli.bad(spec, "--header-bytes " + headerBytes + " is not a usable size: it must be a positive multiple"
                    + " of the block alignment (" + align + ")");
        }
        int header = headerBytes == null ? RawBlockCoreConfig.DEFAULT_HEADER_BYTES : headerBytes;
        if (slotBytes != null && (slotBytes <= header || slotBytes % align != 0)) {
            throw Cli.bad(spec, "--slot-bytes " + slotBytes + " is not a usable size: it must be a multiple of the block"
                    + " alignment (" + align + ") larger than the slot header (" + header + ")");
        }
        if (metaTotalBytes != null && (metaTotalBytes < 4L * align || metaTotalBytes % align != 0)) {
            throw Cli.bad(spec, "--meta-total-bytes " + metaTotalBytes + " is not a usable size: it must be a multiple"
                    + " of the block alignment (" + align + ") and at least " + 4L * align);
        }
        if (capacityBytes != null && capacityBytes <= 0) {
            throw Cli.bad(spec, "--capacity-bytes " + capacityBytes + " is out of range: it must be at least 1 (the"
                    + " store's capacity_bytes)");
        }
        Migration.Options options = Migration.Options.to(target).withEngine(e).withLayout(new StoreLayout.Given(
                blockAlign, headerBytes, slotBytes, metaTotalBytes, capacityBytes));
        Migration.Result r;
        try {
            r = Migration.migrate(device, options);
        } catch (MigrationRefusedException ex) {
            if (ex.reason() == MigrationRefusedException.Reason.SAME_FORMAT
                    || ex.reason() == MigrationRefusedException.Reason.LAYOUT_MISMATCH
                    || ex.reason() == MigrationRefusedException.Reason.NEEDS_OPTION) {
                throw Cli.bad(spec, ex.getMessage()); // what was asked does not fit the store: exit 2
            }
            throw ex; // the device's state: exit 3
        }
        print(System.out, r);
        return 0;
    }

    private void print(PrintStream out, Migration.Result r) throws IOException {
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("device", r.device());
            m.put("from", r.from().configName());
            m.put("to", r.to().configName());
            m.put("keys", r.keys());
            m.put("payload_bytes", r.payloadBytes());
            m.put("meta_total_bytes", r.metaTotalBytes());
            m.put("old_metadata", r.oldMetadata());
            m.put("old_metadata_bytes", r.oldMetadataBytes());
            m.put("new_metadata", r.newMetadata());
            m.put("new_metadata_bytes", r.newMetadataBytes());
            m.put("bytes_written", r.bytesWritten());
            m.put("slot_headers_completed", r.slotHeadersCompleted());
            m.put("object_meta_dropped", r.objectMetaDropped());
            m.put("steps", r.steps());
            out.println(Json.indented(m));
            return;
        }
        out.printf("migrated %s from %s to %s: %d keys (%s of payload), each in the slot it had%n", r.device(),
                r.from().configName(), r.to().configName(), r.keys(), Sizes.human(r.payloadBytes()));
        out.printf("  old metadata, %d bytes in use: %s%n", r.oldMetadataBytes(), r.oldMetadata());
        out.printf("  new metadata, %d bytes written: %s%n", r.newMetadataBytes(), r.newMetadata());
        out.printf("  metadata area: %d bytes (%s), unchanged: the data still starts at offset %d%n", r.metaTotalBytes(),
                Sizes.human(r.metaTotalBytes()), r.metaTotalBytes());
        if (r.to() == RawBlockCoreConfig.MetaFormat.LMCACHE_V1
                && r.metaTotalBytes() != RawBlockCoreConfig.DEFAULT_META_TOTAL_BYTES) {
            out.printf("  open it with \"meta_total_bytes\": %d in the configuration (lmcache_v1 finds its second"
                    + " container there; the default is %d)%n", r.metaTotalBytes(),
                    RawBlockCoreConfig.DEFAULT_META_TOTAL_BYTES);
        }
        if (r.slotHeadersCompleted() > 0) {
            out.printf("  slot headers completed: %d written by LMCache now carry fdpblock's key and CRC32C (the bytes"
                    + " LMCache reads are unchanged)%n", r.slotHeadersCompleted());
        }
        if (r.objectMetaDropped() > 0) {
            out.printf("  object metadata dropped: %d entries had shape/dtype/fmt/cached_positions, which fdpblock_v2"
                    + " does not keep%n", r.objectMetaDropped());
        }
        out.printf("  written: %d bytes in these steps:%n", r.bytesWritten());
        for (String s : r.steps()) {
            out.println("    " + s);
        }
    }
}
