package io.fdpblock.cli;

import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static io.fdpblock.cli.CliRunner.refusal;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * `fdpblock run`'s options for the adapter wrappers, qos and fault_inject: bad values refused naming the
 * value and the limit, and short runs through each (and both) verified, their report lines consistent with
 * the rest of the report.
 */
@Tag("host")
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RunWrapperOptionsTest {
    private static final Pattern PREFIX_HITS = Pattern.compile("prefix hits   L1 [\\d.]+ %, L2 ([\\d.]+) %");
    private static final Pattern FAULTS = Pattern.compile("fault inject  rate ([\\d.]+), seed (-?\\d+): (\\d+) keys"
            + " failed at load on purpose, in (\\d+) of the (\\d+) loads L2 did; each one a miss, computed and stored"
            + " again; (\\d+) of (\\d+) requests answered");

    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    static Stream<Arguments> refused() {
        return Stream.of(
                refusal("--qos-weights 'rag:app1=0': qos: sched_weight of cache salt 'rag:app1' 0 must be in [1, 10000]",
                        "run", "--qos-weights", "rag:app1=0"),
                refusal("--qos-weights 'rag:app1=10001': qos: sched_weight of cache salt 'rag:app1' 10001 must be in"
                        + " [1, 10000]", "run", "--qos-weights", "rag:app1=10001"),
                refusal("--qos-weights 'rag:app1=heavy': weight 'heavy' is not a whole number: give one in 1..10000", "run",
                        "--qos-weights", "rag:app1=heavy"),
                refusal("--qos-weights 'rag:app1' must be SALT=WEIGHT", "run", "--qos-weights", "rag:app1"),
                refusal("--qos-weights 'rag:ap1=300': rag:ap1 is not a cache salt of this run (rag:app1, chat:app2,"
                        + " code:app3, \"\"): weight one of those, or add it to --salts", "run", "--qos-weights", "rag:ap1=300"),
                refusal("--qos-weights '=300': \"\" is not a cache salt of this run (rag:app1, chat:app2)", "run",
                        "--salts", "rag:app1,chat:app2", "--qos-weights", "=300"),
                refusal("x is not a cache salt of this run (chat:s, rag:d): weight one of those, or add it to --tenants",
                        "run", "--tenants", "chat:s=0.5/0.7/50,rag:d=0.5/0.6/0", "--qos-weights", "x=300"),
                refusal("--qos-weights gives cache salt rag:app1 two weights (300 and 200)", "run", "--qos-weights",
                        "rag:app1=300,rag:app1=200"),
                refusal("--qos-quantum-bytes 2199023255552: qos: quantum_bytes 2199023255552 must be in [1, 1099511627776]",
                        "run", "--qos-weights", "rag:app1=300", "--qos-quantum-bytes", "2T"),
                refusal("size '0' is not a positive number", "run", "--qos-weights", "rag:app1=300", "--qos-quantum-bytes",
                        "0"),
                refusal("--qos-quantum-bytes 262144 sets the qos wrapper, which --qos-weights turns on", "run",
                        "--qos-quantum-bytes", "256K"),
                refusal("--fault-inject-rate 1.5 is out of range: the share of the keys L2 finds that fail at load must be a"
                        + " number in 0..1", "run", "--fault-inject-rate", "1.5"),
                refusal("--fault-inject-rate -0.1 is out of range", "run", "--fault-inject-rate", "-0.1"),
                refusal("--fault-inject-rate NaN is out of range", "run", "--fault-inject-rate", "NaN"),
                refusal("--fault-inject-seed 7 chooses the keys of --fault-inject-rate, which is not given", "run",
                        "--fault-inject-seed", "7"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refused")
    void badValuesAreRefusedNamingTheValueAndTheLimit(String fragment, String[] args) {
        CliRunner.assertRefused(fragment, args);
    }

    private CliRunner.Outcome run(String name, String... extra) {
        // 16 KiB chunks: what 40 requests store fits L2, so no eviction (and no thread timing) decides what it holds
        List<String> args = new ArrayList<>(List.of("run", "--device", dir.resolve(name).toString(), "--size",
                "33554432", "--chunk-tokens", "16", "--kv-bytes-per-token", "1024", "--requests", "40", "--no-progress",
                "--settle"));
        args.addAll(List.of(extra));
        CliRunner.Outcome o = CliRunner.run(args.toArray(String[]::new));
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).as(o.all()).contains("requests      40 in").contains("locks         0 L2 locks held at the"
                + " end").contains("VERIFIED");
        return o;
    }

    private static Matcher find(Pattern p, String out) {
        Matcher m = p.matcher(out);
        assertThat(m.find()).as("%s in%n%s", p, out).isTrue();
        return m;
    }

    @Test
    void atRateOneEveryLoadL2DidFailsAndTheRunStillAnswersEveryRequestAndVerifies() {
        CliRunner.Outcome o = run("all.img", "--fault-inject-rate", "1.0", "--fault-inject-seed", "7");
        Matcher f = find(FAULTS, o.out());
        assertThat(f.group(1)).isEqualTo("1.0");
        assertThat(f.group(2)).isEqualTo("7");
        long dropped = Long.parseLong(f.group(3));
        long faultedLoads = Long.parseLong(f.group(4));
        long loads = Long.parseLong(f.group(5));
        assertThat(loads).as("the job repeats prefixes L1 no longer holds: L2 loads them").isPositive();
        assertThat(faultedLoads).as("every load fails").isEqualTo(loads);
        assertThat(dropped).isGreaterThanOrEqualTo(loads);
        assertThat(f.group(6)).isEqualTo("40");
        assertThat(f.group(7)).isEqualTo("40");
        assertThat(find(PREFIX_HITS, o.out()).group(1)).as("nothing reaches the job from L2").isEqualTo("0.0");
        assertThat(o.out()).contains("loaded        0 B from L2");
    }

    @Test
    void atRateZeroNothingFailsAndASeedFailsTheSameKeysInEveryRun() {
        Matcher none = find(FAULTS, run("none.img", "--fault-inject-rate", "0").out());
        assertThat(none.group(2)).as("the seed defaults to --seed").isEqualTo("42");
        assertThat(none.group(3)).isEqualTo("0");
        assertThat(none.group(4)).isEqualTo("0");
        assertThat(Long.parseLong(none.group(5))).isPositive();

        // --settle: the requests, what L1 holds and so what L2 is asked for are the same in both runs
        Matcher first = find(FAULTS, run("half-1.img", "--fault-inject-rate", "0.5", "--fault-inject-seed", "3").out());
        Matcher again = find(FAULTS, run("half-2.img", "--fault-inject-rate", "0.5", "--fault-inject-seed", "3").out());
        assertThat(Long.parseLong(first.group(3))).isPositive();
        assertThat(again.group(3)).as("keys failed").isEqualTo(first.group(3));
        assertThat(again.group(4)).as("loads failed").isEqualTo(first.group(4));
    }

    @Test
    void qosWeightsAppearPerSaltWithWhatEachActiveSaltWasAdmitted() {
        CliRunner.Outcome o = run("qos.img", "--qos-weights", "rag:app1=300,chat:app2=50", "--qos-quantum-bytes",
                "256K");
        assertThat(o.out()).contains("qos           admitted by cache salt (quantum 262144 bytes): rag:app1 weight 300: ");
        for (String salt : List.of("rag:app1 weight 300", "chat:app2 weight 50", "code:app3 weight 100")) {
            Matcher m = find(Pattern.compile(Pattern.quote(salt) + ": (\\d+) tasks, (\\d+) bytes, (\\d+) lookup keys"),
                    o.out());
            assertThat(Long.parseLong(m.group(1))).as(salt).isPositive();
            assertThat(Long.parseLong(m.group(2))).as(salt + ": every active salt stores").isPositive();
            assertThat(Long.parseLong(m.group(3))).as(salt).isPositive();
        }
    }

    @Test
    void bothWrappersTogetherStillVerify() {
        CliRunner.Outcome o = run("both.img", "--salts", ",rag:app1", "--qos-weights", "=200", "--fault-inject-rate",
                "1");
        Matcher f = find(FAULTS, o.out());
        assertThat(Long.parseLong(f.group(5))).isPositive();
        assertThat(f.group(4)).isEqualTo(f.group(5));
        assertThat(o.out()).containsPattern("admitted by cache salt \\(quantum 1048576 bytes\\): \"\" weight 200: [1-9]\\d*"
                + " tasks, [1-9]\\d* bytes, [1-9]\\d* lookup keys; rag:app1 weight 100: [1-9]");
        assertThat(find(PREFIX_HITS, o.out()).group(1)).isEqualTo("0.0");
    }
}
