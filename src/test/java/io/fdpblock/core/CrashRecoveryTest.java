package io.fdpblock.core;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.AnnotatedElementContext;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.io.TempDirFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import java.util.Arrays;

/**
 * Kills a JVM that is storing keys into a {@link RawBlockCore} with SIGKILL at a random moment, then
 * recovers the device in this JVM and checks it against what the child reported (see {@link CrashChild}):
 *
 * <ul>
 * <li>every recovered key loads, with exactly the bytes the child stored for it;</li>
 * <li>every key of the last checkpoint the child reported, and never deleted, is there (unless the
 * recovered store says slot-header verification dropped keys: then at most that many may be missing);</li>
 * <li>no key deleted before that checkpoint comes back, and the recovered checkpoint is not older;</li>
 * <li>the recovered store takes new keys until full without overwriting any recovered one.</li>
 * </ul>
 */
@Tag("host")
class CrashRecoveryTest {
    /** A temp dir on a disk-backed file system ({@code /var/tmp}), where O_DIRECT works (tmpfs has none). */
    static final class DiskTempDir implements TempDirFactory {
        @Override
        public Path createTempDirectory(AnnotatedElementContext element, ExtensionContext context) throws IOException {
            Path varTmp = Path.of("/var/tmp");
            Path parent = Files.isDirectory(varTmp) && Files.isWritable(varTmp)
                    ? varTmp : Path.of(System.getProperty("java.io.tmpdir"));
            return Files.createTempDirectory(parent, "fdpblock-crash-");
        }
    }

    private static final long FIRST_CHECKPOINT_TIMEOUT_MS = 60_000;
    private static final long MAX_EXTRA_DELAY_MS = 1_500;

    @TempDir(factory = DiskTempDir.class)
    Path dir;

    @ParameterizedTest(name = "kill point seed {0}")
    @ValueSource(longs = {1, 2, 3, 4, 5})
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void recoversWhatTheLastReportedCheckpointHeldAfterSigkill(long seed) throws Exception {
        long extraDelayMs = new SplittableRandom(seed * 7919).nextLong(MAX_EXTRA_DELAY_MS + 1);
        Path out = dir.resolve("child.out");
        Path err = dir.resolve("child.err");
        String java = ProcessHandle.current().info().command().orElseThrow(
                () -> new IllegalStateException("cannot tell which java binary runs this JVM"));
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), CrashChild.class.getName(), dir.toString(),
                Long.toString(seed))
                .redirectOutput(out.toFile())
                .redirectError(err.toFile());
        long t0 = System.nanoTime();
        long ranMs;
        Process child = pb.start();
        try {
            Path checkpointFile = dir.resolve(CrashChild.CHECKPOINT_FILE);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FIRST_CHECKPOINT_TIMEOUT_MS);
            while (!Files.exists(checkpointFile)) {
                if (!child.isAlive()) {
                    fail("the child exited (code " + child.exitValue() + ") before reporting a checkpoint; stderr:\n"
                            + read(err) + "\nstdout:\n" + read(out));
                }
                if (System.nanoTime() > deadline) {
                    fail("the child reported no checkpoint within " + FIRST_CHECKPOINT_TIMEOUT_MS + " ms; stderr:\n"
                            + read(err) + "\nstdout:\n" + read(out));
                }
                Thread.sleep(10);
            }
            Thread.sleep(extraDelayMs);
            if (!child.isAlive()) {
                fail("the child exited (code " + child.exitValue() + ") before it was killed; stderr:\n" + read(err));
            }
            child.destroyForcibly(); // SIGKILL on Linux
            if (!child.waitFor(30, TimeUnit.SECONDS)) {
                fail("the child did not die within 30 s of SIGKILL");
            }
            ranMs = (System.nanoTime() - t0) / 1_000_000;
        } finally {
            if (child.isAlive()) {
                child.destroyForcibly();
                child.waitFor(30, TimeUnit.SECONDS);
            }
        }
        assertThat(child.exitValue()).as("exit code of the killed child (128 + SIGKILL)").isEqualTo(137);

        Reported reported = Reported.read(dir);
        Set<String> deletedEver = new HashSet<>(reported.deleteLog);
        Set<String> deletedBefore = new HashSet<>(reported.deleteLog.subList(0, (int) reported.deletesBefore));
        Set<String> required = new LinkedHashSet<>(reported.keys);
        required.removeAll(deletedEver);

        RawBlockCoreConfig config = CrashChild.config(dir).toBuilder().metaVerifyOnLoad(true).build();
        try (RawBlockCore core = RawBlockCore.open(config)) {
            Map<String, Object> status = core.status();
            long recoveredSeq = ((Number) status.get("checkpoint_seq")).longValue();
            int verifyDropped = ((Number) status.get("verify_dropped_keys")).intValue();
            Map<String, Integer> recovered = core.keySizes();
            assertThat(status.get("recovered_keys")).as("recovered_keys; %s", status.get("recovery"))
                    .isEqualTo(recovered.size());
            assertThat(recoveredSeq).as("recovered checkpoint seq vs the last reported one; %s", status.get("recovery"))
                    .isGreaterThanOrEqualTo(reported.seq);

            // (a) every recovered key holds exactly the bytes the child stored for it
            List<String> wrongSize = new ArrayList<>();
            List<String> misses = new ArrayList<>();
            List<String> wrongBytes = new ArrayList<>();
            verifyAll(core, recovered, wrongSize, misses, wrongBytes);
            long crcMismatches = ((Number) core.status().get("crc_mismatches")).longValue();
            assertThat(wrongSize).as("recovered keys whose size is not what the child stored").isEmpty();
            assertThat(wrongBytes).as("recovered keys that load with bytes the child never stored for them").isEmpty();
            // A miss is legal only as a detected (CRC) mismatch of a key the child deleted after the checkpoint:
            // its slot may have been reused by a write the kill tore. A never-deleted key must always load.
            assertThat(misses).as("recovered keys that do not load although never deleted; status %s", core.status())
                    .allMatch(deletedEver::contains);
            assertThat((long) misses.size()).as("load misses not explained by detected CRC mismatches")
                    .isLessThanOrEqualTo(crcMismatches);

            // (b) the last reported checkpoint's keys (not deleted since) are all back
            List<String> missing = required.stream().filter(k -> !recovered.containsKey(k)).toList();
            assertThat(missing.size())
                    .as("keys of reported checkpoint %d missing after recovery (verify dropped %d): %s; recovery: %s",
                            reported.seq, verifyDropped, first(missing), status.get("recovery"))
                    .isLessThanOrEqualTo(verifyDropped);

            // (c) nothing deleted before the reported checkpoint comes back
            List<String> resurrected = recovered.keySet().stream().filter(deletedBefore::contains).toList();
            assertThat(resurrected).as("keys deleted before checkpoint %d that came back", reported.seq).isEmpty();

            // (d) the rebuilt slot allocator hands out only free slots: fill the device, recheck everything
            int added = fill(core, seed);
            Map<String, Integer> afterFill = core.keySizes();
            List<String> wrongSize2 = new ArrayList<>();
            List<String> misses2 = new ArrayList<>();
            List<String> wrongBytes2 = new ArrayList<>();
            verifyAll(core, afterFill, wrongSize2, misses2, wrongBytes2);
            assertThat(wrongSize2).as("sizes wrong after filling the recovered store").isEmpty();
            assertThat(wrongBytes2).as("bytes wrong after filling the recovered store").isEmpty();
            assertThat(misses2).as("keys that stopped loading after filling the recovered store")
                    .allMatch(misses::contains);
            assertThat(core.freeSlots()).as("free slots after filling").isZero();

            System.out.printf("crash run seed %d: killed %d ms after start (%d ms after first checkpoint report);"
                            + " reported seq %d (batch %d, %d keys, %d required), recovered seq %d with %d keys"
                            + " (verify dropped %d, missing %d, load misses %d, crc mismatches %d,"
                            + " deleted after checkpoint and back %d); %d new keys filled the device%n",
                    seed, ranMs, extraDelayMs, reported.seq, reported.batch, reported.keys.size(), required.size(),
                    recoveredSeq, recovered.size(), verifyDropped, missing.size(), misses.size(), crcMismatches,
                    recovered.keySet().stream().filter(deletedEver::contains).count(), added);
        }
    }

    /** Loads every key in {@code sizes} and sorts the ones that are not exactly what was stored. */
    private static void verifyAll(RawBlockCore core, Map<String, Integer> sizes, List<String> wrongSize,
            List<String> misses, List<String> wrongBytes) throws IOException {
        List<String> keys = new ArrayList<>(sizes.keySet());
        int batch = 32;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment bufs = arena.allocate((long) batch * CrashChild.MAX_PAYLOAD, 4096);
            for (int from = 0; from < keys.size(); from += batch) {
                int to = Math.min(keys.size(), from + batch);
                List<LoadRequest> loads = new ArrayList<>(to - from);
                for (int i = from; i < to; i++) {
                    MemorySegment dest = bufs.asSlice((long) (i - from) * CrashChild.MAX_PAYLOAD, CrashChild.MAX_PAYLOAD);
                    dest.fill((byte) 0x5A);
                    loads.add(new LoadRequest(keys.get(i), dest));
                }
                boolean[] ok = core.load(loads);
                for (int i = from; i < to; i++) {
                    String key = keys.get(i);
                    byte[] expected = CrashChild.expectedPayload(key);
                    if (sizes.get(key) != expected.length) {
                        wrongSize.add(key + " (" + sizes.get(key) + " bytes, stored " + expected.length + ")");
                        continue;
                    }
                    if (!ok[i - from]) {
                        misses.add(key);
                        continue;
                    }
                    byte[] got = loads.get(i - from).destination().asSlice(0, expected.length)
                            .toArray(ValueLayout.JAVA_BYTE);
                    if (!Arrays.equals(got, expected)) {
                        wrongBytes.add(key);
                    }
                }
            }
        }
    }

    /** Puts new keys until the device is full. @return how many were stored */
    private static int fill(RawBlockCore core, long seed) throws IOException {
        int added = 0;
        long n = 0;
        while (core.freeSlots() > 0) {
            int want = Math.min(16, core.freeSlots());
            try (Arena arena = Arena.ofShared()) {
                List<PutRequest> puts = new ArrayList<>(want);
                for (int i = 0; i < want; i++) {
                    String k = CrashChild.key("parent", seed, n++);
                    puts.add(PutRequest.of(k, CrashChild.payloadSegment(k, arena)));
                }
                boolean[] ok = core.put(puts);
                for (int i = 0; i < ok.length; i++) {
                    assertThat(ok[i]).as("put of new key %s into the recovered store", puts.get(i).key()).isTrue();
                    added++;
                }
            }
        }
        return added;
    }

    /** The last checkpoint the child reported, and its delete log. */
    private record Reported(long seq, long batch, long deletesBefore, List<String> keys, List<String> deleteLog) {
        static Reported read(Path dir) throws IOException {
            List<String> lines = Files.readAllLines(dir.resolve(CrashChild.CHECKPOINT_FILE), StandardCharsets.UTF_8);
            long seq = header(lines, 0, "seq");
            long batch = header(lines, 1, "batch");
            long deletes = header(lines, 2, "deletes");
            long count = header(lines, 3, "keys");
            List<String> keys = lines.subList(4, lines.size());
            assertThat(keys).as("keys listed in the checkpoint report").hasSize((int) count);
            Path logFile = dir.resolve(CrashChild.DELETE_LOG);
            List<String> log = new ArrayList<>();
            if (Files.exists(logFile)) {
                String text = Files.readString(logFile, StandardCharsets.UTF_8);
                int end = text.lastIndexOf('\n'); // a torn last line was never followed by its delete
                if (end >= 0) {
                    log.addAll(List.of(text.substring(0, end).split("\n")));
                }
            }
            assertThat((long) log.size()).as("delete log lines vs deletes reported before the checkpoint")
                    .isGreaterThanOrEqualTo(deletes);
            return new Reported(seq, batch, deletes, keys, log);
        }

        private static long header(List<String> lines, int at, String name) {
            assertThat(lines.size()).as("checkpoint report lines").isGreaterThan(at);
            String line = lines.get(at);
            assertThat(line).as("checkpoint report line %d", at).startsWith(name + " ");
            return Long.parseLong(line.substring(name.length() + 1));
        }
    }

    private static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "(none)";
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    private static List<String> first(List<String> keys) {
        return keys.subList(0, Math.min(5, keys.size()));
    }
}
