package io.fdpblock.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The kernel's pool of hugetlb pages, which fio's buffers take with {@code --mem=shmhuge}: how many are
 * free and, when this process runs as root, a reservation of the ones missing ({@code nr_hugepages}
 * raised), given back when the bench ends, fails or is interrupted ({@link #close}, also from a shutdown
 * hook). Without root, or when the kernel cannot make the pages, it says why in words.
 *
 * <p>The pool's figures are in flux for a moment after a job on huge pages exits: its pages come back a
 * little later (io_uring unpins registered buffers after the process is gone), and free pages may be
 * dissolved meanwhile, which lowers {@code nr_hugepages} by itself. Measured in a bench run on this VM: 2 of
 * 10 free and {@code nr_hugepages} read as 1 right after fio, 10 of 10 a moment later. So a shortfall is
 * waited out before anything is raised, and a raise that falls short is tried once more.
 */
final class HugetlbPool implements AutoCloseable {
    static final Path MEMINFO = Path.of("/proc/meminfo");
    static final Path NR_HUGEPAGES = Path.of("/proc/sys/vm/nr_hugepages");
    private static final long DEFAULT_PAGE_BYTES = 2L << 20;
    /** How long the pool is watched for pages to come back, before and after a raise. */
    static final Duration SETTLE = Duration.ofSeconds(3);
    private static final int RAISES = 2;

    private final Path meminfo;
    private final Path nrHugepages;
    private final boolean root;
    private final Duration settle;
    /** {@code nr_hugepages} before this pool first raised it; -1 while it never did. */
    private long original = -1;
    private long raisedTo = -1;
    private String lastRefusal;
    private Thread hook;

    /**
     * @param meminfo {@code /proc/meminfo} (or a file shaped like it)
     * @param nrHugepages {@code /proc/sys/vm/nr_hugepages} (or a stand-in)
     * @param root whether this process may raise {@code nr_hugepages}
     * @param settle how long a shortfall is watched for pages coming back, before and after a raise
     */
    HugetlbPool(Path meminfo, Path nrHugepages, boolean root, Duration settle) {
        this.meminfo = meminfo;
        this.nrHugepages = nrHugepages;
        this.root = root;
        this.settle = settle;
    }

    /** The system's pool, root when this process's effective uid is 0. */
    static HugetlbPool system() {
        return new HugetlbPool(MEMINFO, NR_HUGEPAGES, effectiveUidIsRoot(), SETTLE);
    }

    private static boolean effectiveUidIsRoot() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (l.startsWith("Uid:")) { // real, effective, saved, file system
                    return l.substring(4).trim().split("\\s+")[1].equals("0");
                }
            }
        } catch (IOException | RuntimeException e) {
            return false;
        }
        return false;
    }

    /**
     * Pages free for a new mapping ({@code HugePages_Free} less {@code HugePages_Rsvd}), their size, and the
     * pages of the pool taken or reserved by mappings ({@code HugePages_Total} less the free ones).
     */
    record Pages(long free, long pageBytes, long taken) {}

    /** {@link Pages} from the meminfo file (none free, 2 MiB, none taken when unreadable). */
    Pages pages() {
        long total = 0;
        long free = 0;
        long reserved = 0;
        long size = DEFAULT_PAGE_BYTES;
        try {
            for (String l : Files.readAllLines(meminfo)) {
                if (l.startsWith("HugePages_Total:")) {
                    total = Long.parseLong(l.replaceAll("[^0-9]", ""));
                } else if (l.startsWith("HugePages_Free:")) {
                    free = Long.parseLong(l.replaceAll("[^0-9]", ""));
                } else if (l.startsWith("HugePages_Rsvd:")) {
                    reserved = Long.parseLong(l.replaceAll("[^0-9]", ""));
                } else if (l.startsWith("Hugepagesize:")) {
                    size = Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            return new Pages(0, size, 0);
        }
        long usable = Math.max(0, free - reserved);
        return new Pages(usable, size, Math.max(0, total - usable));
    }

    /**
     * The pool's pages once {@code needed} are free, or once {@link #settle} has passed; at once when no page
     * is taken (none can come back).
     */
    private Pages awaitFree(long needed) {
        long deadline = System.nanoTime() + settle.toNanos();
        Pages p = pages();
        while (p.free() < needed && p.taken() > 0 && System.nanoTime() < deadline) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return p;
            }
            p = pages();
        }
        return p;
    }

    /**
     * Makes at least {@code needed} pages free: raises {@code nr_hugepages} by the pages missing when this
     * process is root (the first raise registers the shutdown hook that gives them back).
     *
     * @return null when {@code needed} pages are free, else why they are not and what to do
     */
    synchronized String ensureFree(long needed) {
        Pages p = awaitFree(needed);
        if (p.free() >= needed) {
            return null;
        }
        String shortBy = needed + " hugetlb pages of " + (p.pageBytes() >> 10) + " KiB needed, " + p.free() + " free";
        long nr;
        try {
            nr = Long.parseLong(Files.readString(nrHugepages).trim());
        } catch (IOException | NumberFormatException e) {
            return refused(shortBy + ", and " + nrHugepages + " cannot be read (" + e.getMessage() + ")");
        }
        long want = nr + needed - p.free();
        if (!root) {
            return refused(shortBy + "; the bench reserves them when it runs as root; else as root: echo " + want
                    + " > " + nrHugepages);
        }
        long from = nr;
        for (int raise = 1; ; raise++) {
            try {
                Files.writeString(nrHugepages, want + "\n");
            } catch (IOException e) {
                return refused(shortBy + ", and writing " + want + " to " + nrHugepages + " failed (" + e
                        + "; a container may mount /proc/sys read-only): reserve them on the host");
            }
            if (original < 0) {
                original = from;
                hook = new Thread(this::close, "fdpblock-bench-hugetlb-give-back");
                Runtime.getRuntime().addShutdownHook(hook);
            }
            raisedTo = want;
            Pages after = awaitFree(needed);
            if (after.free() >= needed) {
                lastRefusal = null;
                return null;
            }
            if (raise == RAISES) {
                return refused(shortBy + "; nr_hugepages raised from " + from + " to " + want + ", but the kernel made"
                        + " only " + after.free() + " free (too little free memory, or too fragmented): free some"
                        + " memory, or reserve them at boot (hugepages=" + want + " on the kernel command line)");
            }
            try { // what the kernel made of the first raise, and the pages still missing
                nr = Long.parseLong(Files.readString(nrHugepages).trim());
            } catch (IOException | NumberFormatException e) {
                return refused(shortBy + ", and " + nrHugepages + " cannot be read (" + e.getMessage() + ")");
            }
            want = nr + needed - after.free();
        }
    }

    private String refused(String why) {
        lastRefusal = why;
        return why;
    }

    /** What this pool did, for the results' JSON. */
    synchronized Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("root", root);
        Pages p = pages();
        m.put("page_bytes", p.pageBytes());
        m.put("free_now", p.free());
        if (original >= 0) {
            m.put("nr_hugepages_before", original);
            m.put("nr_hugepages_raised_to", raisedTo);
            m.put("given_back", "at the end of the run: nr_hugepages set back to " + original);
        }
        if (lastRefusal != null) {
            m.put("not_reserved", lastRefusal);
        }
        return m;
    }

    /** A line saying what this pool reserved, or null when it reserved nothing. */
    synchronized String reservation() {
        return original < 0 ? null : "hugetlb pages: nr_hugepages raised from " + original + " to " + raisedTo
                + " for fio's buffers (--mem=shmhuge), set back at the end";
    }

    /** Gives the pages reserved back ({@code nr_hugepages} as it was); nothing when none were. Idempotent. */
    @Override
    public synchronized void close() {
        if (original < 0) {
            return;
        }
        try {
            Files.writeString(nrHugepages, original + "\n");
        } catch (IOException e) {
            System.err.println("fdpblock bench: could not set " + nrHugepages + " back to " + original + " (" + e
                    + "): set it by hand (echo " + original + " > " + nrHugepages + ")");
        }
        original = -1;
        raisedTo = -1;
        if (hook != null && Thread.currentThread() != hook) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is shutting down already: the hook finds nothing left to do
            }
        }
        hook = null;
    }
}
