package io.fdpblock.cli;

import io.fdpblock.bench.Bench;
import io.fdpblock.bench.PipelinedIo;
import io.fdpblock.device.SubmitPolicy;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code fdpblock bench}: ours vs fio side by side on the same file (or NVMe namespace), see {@link Bench}.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Our io_uring (and uring_cmd) engine and the RawBlock adapter side by side with fio: 4 KiB"
                + " random read/write at QD 1 and 32, 1 MiB sequential write/read at QD 16, 4 KiB random read at QD 128"
                + " over 2 rings (fio: 2 jobs), adapter store/load of"
                + " 1 MiB chunks vs fio's 1 MiB sequential bandwidth, adapter lookup-and-lock latency of 1,000 keys.",
                "Each case runs --rounds times, ours then fio, on the same file with the same parameters (O_DIRECT,"
                        + " registered buffers and files). Prints medians and ours/fio ratios; writes"
                        + " bench-results.json and bench-results.png into --out.",
                "fio missing: `make bench` installs it (apt-get install -y fio); without it only our side runs."},
        sortOptions = false)
public final class BenchCommand implements Callable<Integer> {
    @Option(names = "--file", description = "Bench file (created when missing; an existing one is used, first --size"
            + " bytes, and its contents are overwritten). Default: a new file in a temp dir that supports O_DIRECT,"
            + " removed afterwards")
    Path file;

    @Option(names = "--size", defaultValue = "2147483648", description = "Bytes of the file (or namespace) to use"
            + " (default ${DEFAULT-VALUE} = 2 GiB)")
    long size;

    @Option(names = "--device", description = "NVMe generic char device /dev/ngXnY for the uring_cmd cases (its first"
            + " --size bytes are OVERWRITTEN); without it those cases are skipped")
    Path device;

    @Option(names = "--seconds", defaultValue = "5", description = "Measured seconds per side per round (default"
            + " ${DEFAULT-VALUE})")
    int seconds;

    @Option(names = "--ramp", defaultValue = "1", description = "Unmeasured seconds before each measured window, both"
            + " sides (fio --ramp_time; default ${DEFAULT-VALUE})")
    int ramp;

    @Option(names = "--rounds", defaultValue = "3", description = "Rounds per case, each ours then fio (default"
            + " ${DEFAULT-VALUE})")
    int rounds;

    @Option(names = "--out", defaultValue = "target/bench", description = "Directory for bench-results.json,"
            + " bench-results.png and fio's JSON (default ${DEFAULT-VALUE})")
    Path out;

    @Option(names = "--fio", description = "fio executable (default: fio on the PATH)")
    String fio;

    @Option(names = "--cases", split = ",", description = "Only these case ids or id prefixes, comma-separated, e.g."
            + " randread,adapter (ids: randread-4k-qd1, randread-4k-qd32, randwrite-4k-qd1, randwrite-4k-qd32,"
            + " seqwrite-1m-qd16, seqread-1m-qd16, randread-4k-2rings-qd128, nvme-<the first six>,"
            + " adapter-store-1m-qd16, adapter-load-1m-qd16, adapter-lookup-1000)")
    List<String> cases;

    @Option(names = "--no-prewrite", negatable = false, description = "Do not write the whole file once before the"
            + " cases (reads of unwritten blocks are unfair)")
    boolean noPrewrite;

    @Option(names = "--adapter-keys-per-task", defaultValue = "4", description = "Chunks per adapter store/load task;"
            + " 16 chunks are in flight in all (default ${DEFAULT-VALUE})")
    int adapterKeysPerTask;

    @Option(names = "--lookup-iterations", defaultValue = "2000", description = "Lookup-and-lock tasks of 1,000 keys"
            + " timed per round (default ${DEFAULT-VALUE})")
    int lookupIterations;

    @Option(names = "--pipeline", defaultValue = "auto", description = "How our raw cases keep their depth: auto"
            + " (execute at QD1, callback above), execute (blocking calls, run by the calling thread on a ring of its"
            + " own; QD1), callback (the completion callback submits the next operation, straight into the ring on"
            + " the reactor's thread, like fio's single-threaded loop) or handoff (completions hand the slot back to"
            + " the submitting thread, which submits the next one: the pattern of `fdpblock run`). Default"
            + " ${DEFAULT-VALUE}")
    String pipeline;

    @Option(names = "--submit-policy", defaultValue = "adaptive", description = "When our rings hand prepared SQEs"
            + " to the kernel: adaptive (the library's default: at once while the device has few I/Os queued, in"
            + " groups of up to 1/8 of its depth above that), immediate (one io_uring_enter per SQE) or per_cycle (all"
            + " of a reactor cycle in one call). Default ${DEFAULT-VALUE}")
    String submitPolicy;

    @Override
    public Integer call() throws Exception {
        boolean temp = file == null;
        Path dir = temp ? io.fdpblock.device.BlockDevices.directIoTempDir("fdpblock-bench-") : null;
        Path f = temp ? dir.resolve("fdpblock-bench.img") : file;
        try {
            Bench bench = new Bench(new Bench.Options(f, size, device, seconds, ramp, rounds, out, fio, cases,
                    !noPrewrite, adapterKeysPerTask, lookupIterations, PipelinedIo.Mode.parse(pipeline),
                    SubmitPolicy.parse(submitPolicy)), System.out);
            return bench.run();
        } finally {
            if (temp) {
                Files.deleteIfExists(f);
                Files.deleteIfExists(dir);
            }
        }
    }
}
