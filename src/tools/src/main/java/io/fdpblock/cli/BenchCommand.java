package io.fdpblock.cli;

import io.fdpblock.bench.Bench;
import io.fdpblock.bench.PipelinedIo;
import io.fdpblock.device.SubmitPolicy;
import io.fdpblock.nvme.WriteStreams;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
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
                "Each case runs --rounds times (ours then the fio it is judged against, that fio first every second round), on the same file with the same parameters (O_DIRECT,"
                        + " registered buffers and files). Prints medians and ours/fio ratios; writes"
                        + " bench-results.json and bench-results.png into --out.",
                "Like for like: our buffers are on huge pages, so every 1 MiB case is judged against fio run again with"
                        + " its buffers on huge pages (--mem=shmhuge), plain fio beside it; the adapter's stores, whose"
                        + " log commits flush, against that fio beside a job flushing as often, and its loads under"
                        + " verify_payload \"always\", which check every payload's CRC32C, against that fio checking"
                        + " the CRC32C of every block it reads (--verify=crc32c, on a file it wrote beside --file and"
                        + " removes). Run as root, the bench"
                        + " reserves the hugetlb pages that takes (/proc/sys/vm/nr_hugepages) and sets it back at the"
                        + " end; otherwise the case's note says why it could not.",
                "The adapter's store and load cases report their CPU per chunk beyond fio's CPU per I/O and beyond"
                        + " the CRC32C of the bytes they checksum, the CRC32C measured alone beside every round; the"
                        + " lookup, its CPU against hashing the same keys once.",
                "Placement cases (both devices of an FDP namespace, Linux >= 6.16): the same write job as plain io_uring"
                        + " on /dev/nvmeXnY, with a write stream, and as NVMe passthru with the same placement id on"
                        + " /dev/ngXnY: what placement through the block layer costs (ours only: no fio sets write streams).",
                "fio missing: `make bench` installs it (apt-get install -y fio); without it only our side runs."},
        sortOptions = false)
public final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--file", description = "Bench file (created when missing; an existing one is used, first --size"
            + " bytes, and its contents are overwritten). Default: a new file in a temp dir that supports O_DIRECT,"
            + " removed afterwards")
    Path file;

    @Option(names = "--size", defaultValue = "2147483648", description = "Bytes of the file (or namespace) to use"
            + " (default ${DEFAULT-VALUE} = 2 GiB)")
    long size;

    @Option(names = "--device", description = "NVMe generic char device /dev/ngXnY for the uring_cmd cases, and the"
            + " same namespace's block device /dev/nvmeXnY for the placement cases (write streams, Linux >= 6.16): give"
            + " one (the other is derived from its name) or both, e.g. --device /dev/ng0n1 --device /dev/nvme0n1. Their"
            + " first --size bytes are OVERWRITTEN; without it those cases are skipped")
    List<Path> devices;

    @Option(names = "--seconds", defaultValue = "5", description = "Measured seconds per side per round (default"
            + " ${DEFAULT-VALUE})")
    int seconds;

    @Option(names = "--ramp", defaultValue = "1", description = "Unmeasured seconds before each measured window, both"
            + " sides (fio --ramp_time; default ${DEFAULT-VALUE})")
    int ramp;

    @Option(names = "--rounds", defaultValue = "3", description = "Rounds per case, each ours then the fio judged, that fio first in even rounds (default"
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
            + " placement-randwrite-4k-qd1, placement-randwrite-4k-qd32, placement-seqwrite-1m-qd16,"
            + " adapter-store-1m-qd16, adapter-store-1m-qd16-headroom, adapter-store-1m-qd16-evict-rounds,"
            + " adapter-load-1m-qd16,"
            + " adapter-load-1m-qd16-verify-recovery, adapter-lookup-1000)")
    List<String> cases;

    @Option(names = "--no-prewrite", negatable = false, description = "Do not write the whole file once before the"
            + " cases (reads of unwritten blocks are unfair)")
    boolean noPrewrite;

    @Option(names = "--adapter-keys-per-task", defaultValue = "4", description = "Chunks per adapter store/load task;"
            + " 16 chunks are in flight in all (default ${DEFAULT-VALUE})")
    int adapterKeysPerTask;

    @Option(names = "--adapter-buffers", defaultValue = "16777216", description = "Bytes of chunk buffers the adapter"
            + " cases' tasks take in turn (the ones free longest): by default one 1 MiB buffer per chunk in flight,"
            + " as fio's job has one per I/O; more, e.g. 268435456, measures a service's larger pool, whose memory no"
            + " cache holds (default ${DEFAULT-VALUE})")
    long adapterBuffers;

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
        PipelinedIo.Mode m;
        SubmitPolicy policy;
        try {
            m = PipelinedIo.Mode.parse(pipeline);
        } catch (IllegalArgumentException e) {
            throw Cli.bad(spec, e.getMessage());
        }
        try {
            policy = SubmitPolicy.parse(submitPolicy);
        } catch (IllegalArgumentException e) {
            throw Cli.bad(spec, "--submit-policy " + submitPolicy + ": " + e.getMessage());
        }
        for (Path d : devices == null ? List.<Path>of() : devices) {
            if (!Files.exists(d)) {
                throw Cli.bad(spec, "--device " + d + " does not exist: name an NVMe generic device /dev/ngXnY (or its"
                        + " block device /dev/nvmeXnY), or leave --device out to skip the NVMe cases");
            }
        }
        Path[] nodes;
        try {
            nodes = namespaceNodes(devices);
        } catch (IllegalArgumentException e) {
            throw Cli.bad(spec, e.getMessage());
        }
        // Every option is checked before anything is created (the record checks sizes, times, counts).
        new Bench.Options(Path.of("-"), size, nodes[0], nodes[1], seconds, ramp, rounds, out, fio, cases, !noPrewrite,
                adapterKeysPerTask, lookupIterations, m, policy, adapterBuffers);
        if (file != null) {
            Cli.creatable(spec, "--file", file);
            if (!Files.exists(file)) {
                Cli.fitsFreeSpace(spec, "--size", size, file.toAbsolutePath().getParent());
            }
        }
        if (Files.exists(out) && !Files.isDirectory(out)) {
            throw Cli.bad(spec, "--out " + out + " is not a directory: name a directory (created when missing)");
        }
        try {
            Files.createDirectories(out);
        } catch (IOException e) {
            throw Cli.bad(spec, "--out " + out + " cannot be created (" + Cli.describe(e) + "): name a directory you"
                    + " may write");
        }
        try (Scratch scratch = new Scratch("fdpblock-bench-", System.err)) {
            Path f = file;
            if (f == null) {
                Path dir = scratch.dir();
                Cli.fitsFreeSpace(spec, "--size", size, dir); // the prewrite fills the whole file
                f = dir.resolve("fdpblock-bench.img");
            }
            if (!Files.exists(f)) {
                Cli.createDeviceFile(spec, "--size", f, size);
            }
            Bench bench = new Bench(new Bench.Options(f, size, nodes[0], nodes[1], seconds, ramp, rounds, out, fio,
                    cases, !noPrewrite, adapterKeysPerTask, lookupIterations, m, policy, adapterBuffers), System.out);
            return bench.run();
        }
    }

    /**
     * The generic device and the block device of one namespace from {@code --device} given once or twice:
     * a block device (or a name nvmeXnY) is the block device, anything else the generic device; a missing
     * one is derived from the other's name (null when it cannot be).
     */
    static Path[] namespaceNodes(List<Path> given) {
        Path generic = null;
        Path block = null;
        for (Path p : given == null ? List.<Path>of() : given) {
            boolean isBlock = !Files.isRegularFile(p)
                    && (isBlockDevice(p) || p.getFileName().toString().matches("nvme\\d+n\\d+"));
            if (isBlock) {
                if (block != null) {
                    throw new IllegalArgumentException("--device " + p + ": a block device was given already (" + block
                            + "); give one generic device /dev/ngXnY and one block device /dev/nvmeXnY");
                }
                block = p;
            } else {
                if (generic != null) {
                    throw new IllegalArgumentException("--device " + p + ": a generic device was given already ("
                            + generic + "); give one generic device /dev/ngXnY and one block device /dev/nvmeXnY");
                }
                generic = p;
            }
        }
        if (generic == null && block != null) {
            generic = WriteStreams.counterpart(block);
        }
        if (block == null && generic != null) {
            block = WriteStreams.counterpart(generic);
        }
        return new Path[] {generic, block};
    }

    private static boolean isBlockDevice(Path p) {
        try {
            return ((Integer) Files.getAttribute(p, "unix:mode") & 0170000) == 0060000;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
