package io.fdpblock.core;

import io.fdpblock.l2.KeyCodec;
import io.fdpblock.device.IoEngine;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The victim of {@link CrashRecoveryTest}: a separate JVM that stores keys into a file-backed
 * {@link RawBlockCore} (io_uring, O_DIRECT, periodic checkpoints every second) without pause until it
 * is killed with SIGKILL.
 *
 * <p>Usage: {@code CrashChild <dir> <seed>}. Side files in {@code dir}, all written so that a SIGKILL at
 * any instant leaves them consistent:
 * <ul>
 * <li>{@value #CHECKPOINT_FILE}: replaced atomically (temp file + rename) after every successful
 * {@link RawBlockCore#checkpointNow()}: {@code seq <n>}, {@code batch <n>}, {@code deletes <n>} (lines of
 * the delete log written before this checkpoint), {@code keys <n>}, then the committed keys, one per
 * line; exactly the key set of the checkpoint with that seq.</li>
 * <li>{@value #DELETE_LOG}: append-only, one key per line, each line written (one write(2)) <em>before</em>
 * the key is deleted, so every delete that happened is listed.</li>
 * </ul>
 * A payload is a pure function of its key ({@link #expectedPayload}), so the parent recomputes it.
 */
public final class CrashChild {
    static final long CAPACITY_BYTES = 64L << 20;
    static final long SLOT_BYTES = 64L << 10;
    static final long META_TOTAL_BYTES = 2L << 20;
    /** Payload bytes a slot holds: slot minus the default 4 KiB header. */
    static final int MAX_PAYLOAD = (int) (SLOT_BYTES - RawBlockCoreConfig.DEFAULT_HEADER_BYTES);
    static final String DEVICE_FILE = "dev.img";
    static final String CHECKPOINT_FILE = "checkpoint.txt";
    static final String DELETE_LOG = "deleted.log";
    /** Keys checkpointed explicitly every this many batches (besides the periodic thread's). */
    static final int CHECKPOINT_EVERY_BATCHES = 5;
    /** Live keys above this are trimmed (the device has 992 slots). */
    static final int MAX_LIVE_KEYS = 400;
    /** Halts by itself after this long, should the parent never kill it. */
    static final long MAX_RUN_NANOS = TimeUnit.SECONDS.toNanos(180);

    private CrashChild() {}

    static RawBlockCoreConfig config(Path dir) {
        return RawBlockCoreConfig.builder(dir.resolve(DEVICE_FILE).toString(), SLOT_BYTES)
                .capacityBytes(CAPACITY_BYTES)
                .metaTotalBytes(META_TOTAL_BYTES)
                // checkpoints reported to the parent are v1's; fdpblock_v2's crash safety is PowerLossTest's
                .metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1)
                .ioEngine(IoEngine.IO_URING)
                .useOdirect(true)
                .metaEnablePeriodic(true)
                .metaCheckpointIntervalSec(1)
                .metaVerifyOnLoad(true)
                .build();
    }

    /** The encoded key of the n-th key a writer with this prefix stores. */
    static String key(String prefix, long seed, long n) {
        byte[] hash = ByteBuffer.allocate(16).putLong(seed).putLong(n).array();
        return KeyCodec.encode("crash-test/" + prefix, (int) seed, hash, n % 3 == 0 ? "salt" + (n % 7) : "", 0);
    }

    private static SplittableRandom payloadRandom(String key) {
        long h = 1125899906842597L;
        for (int i = 0; i < key.length(); i++) {
            h = 31 * h + key.charAt(i);
        }
        return new SplittableRandom(h);
    }

    /** The bytes stored for {@code key}: 1..{@link #MAX_PAYLOAD} of them, derived from the key alone. */
    static byte[] expectedPayload(String key) {
        SplittableRandom r = payloadRandom(key);
        byte[] b = new byte[1 + r.nextInt(MAX_PAYLOAD)];
        r.nextBytes(b);
        return b;
    }

    /** The payload in a 4 KiB-aligned native segment of exactly its length (zero-copy when aligned). */
    static MemorySegment payloadSegment(String key, Arena arena) {
        byte[] b = expectedPayload(key);
        MemorySegment seg = arena.allocate(b.length, 4096);
        MemorySegment.copy(b, 0, seg, ValueLayout.JAVA_BYTE, 0, b.length);
        return seg;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: CrashChild <dir> <seed>");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        long seed = Long.parseLong(args[1]);
        startWatchdog();
        try {
            run(dir, seed);
        } catch (Throwable t) {
            System.err.println("CrashChild failed:");
            t.printStackTrace();
            System.err.flush();
            System.exit(1);
        }
    }

    /**
     * Never outlives the test: halts this JVM once its parent is gone (e.g. the test JVM was killed before
     * its finally block ran) or after {@link #MAX_RUN_NANOS}, whatever the main thread is doing.
     */
    private static void startWatchdog() {
        Optional<ProcessHandle> parent = ProcessHandle.current().parent();
        long t0 = System.nanoTime();
        Thread.ofPlatform().daemon().name("crash-child-watchdog").start(() -> {
            while (true) {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
                boolean orphaned = parent.isEmpty() || !parent.get().isAlive();
                if (orphaned || System.nanoTime() - t0 > MAX_RUN_NANOS) {
                    System.err.println("CrashChild: " + (orphaned ? "parent gone" : "ran too long") + ", halting");
                    Runtime.getRuntime().halt(3);
                }
            }
        });
    }

    private static void run(Path dir, long seed) throws IOException {
        SplittableRandom rnd = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + 1);
        List<String> live = new ArrayList<>();
        Set<String> liveSet = new HashSet<>();
        long deletes = 0;
        long next = 0;
        try (RawBlockCore core = RawBlockCore.open(config(dir));
                FileChannel deleteLog = FileChannel.open(dir.resolve(DELETE_LOG), StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            System.out.println("OPEN " + core.status().get("recovery"));
            for (long batch = 1; ; batch++) {
                // put a few new keys
                int n = 1 + rnd.nextInt(6);
                List<String> keys = new ArrayList<>(n);
                boolean[] ok;
                try (Arena arena = Arena.ofShared()) {
                    List<PutRequest> puts = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        String k = key("child", seed, next++);
                        keys.add(k);
                        puts.add(PutRequest.of(k, payloadSegment(k, arena)));
                    }
                    ok = core.put(puts);
                }
                for (int i = 0; i < n; i++) {
                    if (!ok[i]) {
                        throw new IllegalStateException("put of " + keys.get(i) + " failed; status " + core.status());
                    }
                    live.add(keys.get(i));
                    liveSet.add(keys.get(i));
                }

                // delete some (so freed slots are reused by the next puts), always when too many are live
                int del = rnd.nextInt(3) == 0 ? 1 + rnd.nextInt(3) : 0;
                if (live.size() > MAX_LIVE_KEYS) {
                    del += live.size() - MAX_LIVE_KEYS + rnd.nextInt(8);
                }
                List<String> victims = new ArrayList<>(del);
                StringBuilder lines = new StringBuilder();
                for (int i = 0; i < del && !live.isEmpty(); i++) {
                    int at = rnd.nextInt(live.size());
                    String k = live.get(at);
                    live.set(at, live.getLast());
                    live.removeLast();
                    liveSet.remove(k);
                    victims.add(k);
                    lines.append(k).append('\n');
                }
                if (!victims.isEmpty()) {
                    ByteBuffer buf = ByteBuffer.wrap(lines.toString().getBytes(StandardCharsets.UTF_8));
                    while (buf.hasRemaining()) {
                        deleteLog.write(buf); // logged before the delete happens
                    }
                    deletes += victims.size();
                    boolean[] gone = core.delete(victims, false);
                    for (int i = 0; i < gone.length; i++) {
                        if (!gone[i]) {
                            throw new IllegalStateException("delete of " + victims.get(i) + " failed");
                        }
                    }
                }

                if (batch % CHECKPOINT_EVERY_BATCHES == 0) {
                    core.checkpointNow();
                    // Nothing changes the index between checkpointNow and here (this thread is its only
                    // writer), so the key set is that of the checkpoint whose seq status reports.
                    Map<String, Object> status = core.status();
                    long seq = ((Number) status.get("checkpoint_seq")).longValue();
                    Map<String, Integer> committed = core.keySizes();
                    if (!committed.keySet().equals(liveSet)) {
                        throw new IllegalStateException("the store holds " + committed.size() + " keys, expected "
                                + liveSet.size());
                    }
                    if (((Number) status.get("checkpoint_failures")).longValue() != 0) {
                        throw new IllegalStateException("checkpoint failures: " + status);
                    }
                    StringBuilder sb = new StringBuilder(64 + committed.size() * 80);
                    sb.append("seq ").append(seq).append('\n');
                    sb.append("batch ").append(batch).append('\n');
                    sb.append("deletes ").append(deletes).append('\n');
                    sb.append("keys ").append(committed.size()).append('\n');
                    for (String k : committed.keySet()) {
                        sb.append(k).append('\n');
                    }
                    Path tmp = dir.resolve(CHECKPOINT_FILE + ".tmp");
                    Files.writeString(tmp, sb);
                    Files.move(tmp, dir.resolve(CHECKPOINT_FILE), StandardCopyOption.ATOMIC_MOVE,
                            StandardCopyOption.REPLACE_EXISTING);
                    System.out.println("CHECKPOINT " + seq + " batch " + batch + " keys " + committed.size());
                }
            }
        }
    }
}
