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
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.fdpblock.cli.CliRunner.refusal;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * `fdpblock run`'s options for the controllers' load deadline, retention and tenant quotas: refused with a
 * message naming the value when they do not fit together, and a short run with them verified.
 */
@Tag("host")
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RunControllerOptionsTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    static Stream<Arguments> refused() {
        return Stream.of(
                refusal("--load-deadline-ms -1 must be >= 0", "run", "--load-deadline-ms", "-1"),
                refusal("--retention-ttl-ms -5 must be >= 0", "run", "--retention-ttl-ms", "-5"),
                refusal("--retention-ttl-ms 1000 needs --retention-budget", "run", "--retention-ttl-ms", "1000"),
                refusal("--retention-budget 0.3 retains nothing without --retention-ttl-ms", "run", "--retention-budget",
                        "0.3"),
                refusal("--retention-budget 0.9 must be below --evict-at 0.85", "run", "--retention-ttl-ms", "1000",
                        "--retention-budget", "0.9"),
                refusal("--retention-budget 1.5 is out of range", "run", "--retention-ttl-ms", "1000", "--retention-budget",
                        "1.5"),
                refusal("not reclaim_unit", "run", "--fdp", "--emulate-fdp", "8M", "--eviction", "reclaim_unit",
                        "--retention-ttl-ms", "1000", "--retention-budget", "0.3"),
                refusal("--tenant-quota applies to --eviction tenant_quota", "run", "--tenant-quota", "rag:app1=8M"),
                refusal("--eviction tenant_quota evicts every tenant without a quota", "run", "--eviction", "tenant_quota"),
                refusal("--tenant-quota 'rag' must be SALT=BYTES", "run", "--eviction", "tenant_quota", "--tenant-quota",
                        "rag"),
                refusal("--tenant-quota 'x=abc': size 'abc' is not a positive number", "run", "--eviction", "tenant_quota",
                        "--tenant-quota", "x=abc"),
                refusal("--tenant-quota 'a@b=1M'", "run", "--eviction", "tenant_quota", "--tenant-quota", "a@b=1M"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refused")
    void optionsThatDoNotFitAreRefusedNamingTheValue(String fragment, String[] args) {
        CliRunner.assertRefused(fragment, args);
    }

    @Test
    void aRunWithADeadlineAndRetentionIsVerifiedAndSaysWhatTheyDid() {
        CliRunner.Outcome o = CliRunner.run("run", "--device", dir.resolve("r.img").toString(), "--size", "67108864",
                "--requests", "40", "--no-progress", "--load-deadline-ms", "60000", "--retention-ttl-ms", "600000",
                "--retention-budget", "0.3");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).containsPattern("deadline      \\d+ prefetches answered at the 60000 ms load deadline")
                .containsPattern("retention     \\d+ chunks shielded for 600000 ms").contains("VERIFIED");
    }

    @Test
    void aRunWithTenantQuotasIsVerifiedAndShowsEachTenantsUse() {
        CliRunner.Outcome o = CliRunner.run("run", "--device", dir.resolve("q.img").toString(), "--size", "67108864",
                "--requests", "40", "--no-progress", "--eviction", "tenant_quota", "--tenant-quota",
                "rag:app1=8M,chat:app2=8M,code:app3=8M");
        assertThat(o.code()).as(o.all()).isZero();
        assertThat(o.out()).contains("quotas        {rag:app1=8388608, chat:app2=8388608, code:app3=8388608} bytes")
                .contains("VERIFIED");
    }
}
