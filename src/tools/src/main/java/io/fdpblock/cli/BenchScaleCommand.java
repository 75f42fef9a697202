package io.fdpblock.cli;

import io.fdpblock.bench.ScaleBench;
import io.fdpblock.core.RawBlockCoreConfig.MetaFormat;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code fdpblock bench-scale}: the scale benchmark of the store ({@link ScaleBench}). A command of its own
 * rather than a case of {@code fdpblock bench}: none of that command's options (fio, rounds, seconds,
 * the file size) mean anything here, and this one's (entries, formats, where the device file goes) mean
 * nothing there.
 */
@Command(name = "bench-scale", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"The store at scale: fills a store with --entries entries (LMCache-style keys of 112"
                + " characters, the smallest slot the device allows) through RawBlockCore on io_uring, for each"
                + " metadata format, and reports index memory per entry (heap after a full GC + the off-heap index),"
                + " metadata bytes written per put (counted at the device), put latency p50/p99/p99.9/max with and"
                + " without a metadata snapshot running, and the time to reopen; then the scale targets, met or"
                + " missed. Writes the figures as JSON (--json).",
                "The device is a file in --dir with its blocks reserved, behind a loop device by default (512-byte"
                        + " blocks: 1 KiB slots, so 10M entries take 12.5 GiB with the metadata area; needs root),"
                        + " removed afterwards; or --device, a block device whose first bytes are OVERWRITTEN. Not run"
                        + " by make test or CI."})
public final class BenchScaleCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--entries", defaultValue = "10000000", description = "Entries to store (fdpblock_v2; default"
            + " ${DEFAULT-VALUE})")
    long entries;

    @Option(names = "--v1-entries", description = "Entries of the lmcache_v1 run (default: --entries, at most "
            + "2000000: v1 rewrites its whole index as one JSON document every checkpoint)")
    Long v1Entries;

    @Option(names = "--meta-format", defaultValue = "both", description = "fdpblock_v2, lmcache_v1 or both (default"
            + " ${DEFAULT-VALUE})")
    String metaFormat;

    @Option(names = "--dir", description = "Directory for the device file (default: a new temp dir under"
            + " /var/tmp; the file, and the temp dir, are removed afterwards)")
    Path dir;

    @Option(names = "--no-loop", negatable = false, description = "Use the device file as it is, not through a loop"
            + " device: its file system's block size (4 KiB on ext4) then makes slots of 8 KiB")
    boolean noLoop;

    @Option(names = "--device", description = "Run on this block device instead of a file: its first bytes (the"
            + " metadata and N slots) are OVERWRITTEN")
    Path device;

    @Option(names = "--json", defaultValue = "target/bench/scale-results.json", description = "Where the figures go"
            + " (default ${DEFAULT-VALUE})")
    Path json;

    @Option(names = "--keys-per-put", defaultValue = "8", description = "Keys per put call (default ${DEFAULT-VALUE})")
    int keysPerPut;

    @Option(names = "--puts-in-flight", defaultValue = "8", description = "Put calls in flight (default"
            + " ${DEFAULT-VALUE})")
    int putsInFlight;

    @Option(names = "--meta-sync-interval-ms", defaultValue = "1000", description = "fdpblock_v2's"
            + " meta_sync_interval_ms (default ${DEFAULT-VALUE}; 0 = a put is acknowledged once its record is durable)")
    int metaSyncIntervalMs;

    @Option(names = "--checkpoint-interval-sec", defaultValue = "60", description = "lmcache_v1's"
            + " meta_checkpoint_interval_sec (default ${DEFAULT-VALUE}, the store's and LMCache's)")
    int checkpointIntervalSec;

    @Option(names = "--keep-data-slots", defaultValue = "0", description = "Keep the bytes of only the last this"
            + " many slots in the device file: older slots are punched out of it behind the fill (they read as zeros"
            + " then), for runs larger than the disk (100M entries of 1 KiB are 100 GB). Index, metadata and reopen"
            + " are measured as on a full device; the sampled loads after the reopen are taken among the kept slots."
            + " 0 (default): keep all")
    long keepDataSlots;

    @Option(names = "--no-progress", negatable = false, description = "No progress bar")
    boolean noProgress;

    @Override
    public Integer call() throws Exception {
        Cli.longIn(spec, "--entries", entries, 1, ScaleBench.MAX_ENTRIES, "entries");
        long v1 = v1Entries != null ? Cli.longIn(spec, "--v1-entries", v1Entries, 1, ScaleBench.MAX_ENTRIES, "entries")
                : Math.min(entries, ScaleBench.DEFAULT_V1_MAX_ENTRIES);
        List<MetaFormat> formats = formats(metaFormat);
        Cli.intIn(spec, "--keys-per-put", keysPerPut, 1, 1024, "keys per put call");
        Cli.intIn(spec, "--puts-in-flight", putsInFlight, 1, 256, "put calls in flight");
        Cli.intIn(spec, "--meta-sync-interval-ms", metaSyncIntervalMs, 0, Integer.MAX_VALUE, "the sync interval");
        if (keepDataSlots != 0) {
            Cli.longIn(spec, "--keep-data-slots", keepDataSlots, ScaleBench.MIN_KEPT_DATA_SLOTS, ScaleBench.MAX_ENTRIES,
                    "slots kept (0 keeps all)");
            if (device != null) {
                throw Cli.bad(spec, "--keep-data-slots punches slots out of a device file: it does not go with --device "
                        + device + "; leave one out");
            }
        }
        Cli.intIn(spec, "--checkpoint-interval-sec", checkpointIntervalSec, 1, Integer.MAX_VALUE,
                "the checkpoint interval");
        if (device != null && (dir != null || noLoop)) {
            throw Cli.bad(spec, "--device " + device + " and " + (dir != null ? "--dir" : "--no-loop") + " exclude each"
                    + " other: give a block device, or a directory for a device file");
        }
        if (Files.exists(json) && Files.isDirectory(json)) {
            throw Cli.bad(spec, "--json " + json + " is a directory: name a file");
        }
        ScaleBench.Backing backing;
        if (device != null) {
            if (!Files.exists(device)) {
                throw Cli.bad(spec, "--device " + device + " does not exist: name a block device, or leave --device out"
                        + " to use a file");
            }
            if (Files.isRegularFile(device) || Files.isDirectory(device)) {
                throw Cli.bad(spec, "--device " + device + " is not a block device: for a file, give its directory"
                        + " with --dir");
            }
            backing = ScaleBench.Backing.DEVICE;
        } else {
            if (dir != null) {
                Cli.writableDirectory(spec, "--dir", dir);
            }
            if (!noLoop && !ScaleBench.loopAvailable()) {
                throw Cli.bad(spec, "a loop device (512-byte blocks, 1 KiB slots) needs root and losetup, and this is"
                        + " user " + System.getProperty("user.name") + ": run as root, give --no-loop (the file's own 4"
                        + " KiB blocks: 8 KiB slots, 8x the bytes written), or --device");
            }
            backing = noLoop ? ScaleBench.Backing.FILE : ScaleBench.Backing.LOOP;
        }
        // the arguments as given to fdpblock (the subcommand's name included)
        String command = "fdpblock " + String.join(" ", spec.commandLine().getParseResult().originalArgs());
        try (Scratch scratch = new Scratch("fdpblock-scale-", System.err, null, dir != null ? dir : Path.of("/var/tmp"))) {
            Path work = device == null ? scratch.dir() : null;
            ScaleBench.Options o = new ScaleBench.Options(entries, v1, formats, backing, work, device, json, keysPerPut,
                    putsInFlight, metaSyncIntervalMs, checkpointIntervalSec, keepDataSlots, !noProgress, command);
            if (work != null) {
                Cli.fitsFreeSpace(spec, "--entries", ScaleBench.bytesNeeded(o), work);
            }
            ScaleBench.Report r = new ScaleBench(o, System.out).run();
            return r.results().stream().allMatch(ScaleBench.FormatResult::ok) ? 0 : 1;
        }
    }

    private List<MetaFormat> formats(String s) {
        return switch (s.toLowerCase(Locale.ROOT)) {
            case "both" -> List.of(MetaFormat.FDPBLOCK_V2, MetaFormat.LMCACHE_V1);
            case "fdpblock_v2" -> List.of(MetaFormat.FDPBLOCK_V2);
            case "lmcache_v1" -> List.of(MetaFormat.LMCACHE_V1);
            default -> throw Cli.bad(spec, "--meta-format " + s + " is not a format: use fdpblock_v2, lmcache_v1 or"
                    + " both");
        };
    }
}
