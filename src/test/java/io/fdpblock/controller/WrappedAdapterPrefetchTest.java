package io.fdpblock.controller;

import io.fdpblock.cache.L1Manager;
import io.fdpblock.controller.Fixtures.Kind;
import io.fdpblock.controller.PrefetchController.Step;
import io.fdpblock.l2.FaultInjectL2Adapter;
import io.fdpblock.l2.ForwardingL2Adapter;
import io.fdpblock.l2.L2Adapter;
import io.fdpblock.l2.ObjectKey;
import io.fdpblock.l2.QosL2Adapter;
import io.fdpblock.l2.QosScheduler;
import io.fdpblock.testing.DiskTempDirFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static io.fdpblock.controller.Fixtures.CHUNK;
import static io.fdpblock.controller.Fixtures.LAYOUT;
import static io.fdpblock.controller.Fixtures.WAIT;
import static io.fdpblock.controller.Fixtures.keys;
import static io.fdpblock.controller.Fixtures.pick;
import static io.fdpblock.controller.Fixtures.putDirect;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The prefetch controller's lock table (docs/contract.md section 4) through the adapter wrappers: a
 * load fault_inject fails and the QoS wrapper's admission leave it as it is, every lock released.
 */
@Tag("host")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class WrappedAdapterPrefetchTest {
    @TempDir(factory = DiskTempDirFactory.class)
    Path dir;

    private final Closer closer = new Closer();
    private L1Manager l1;

    @AfterEach
    void closeAll() throws Exception {
        closer.close();
    }

    /** {@link Fixtures#state} with the L2 locks of the adapter the wrapper wraps. */
    private String state(ForwardingL2Adapter a, List<ObjectKey> keys) {
        return Fixtures.state(l1, List.of(a.inner()), keys);
    }

    private Map<Step, String> prefetch(ForwardingL2Adapter a, List<ObjectKey> ks, int expected) throws Exception {
        l1 = closer.add(new L1Manager(CHUNK, 16));
        Map<Step, String> states = new ConcurrentHashMap<>();
        PrefetchController pc = closer.add(new PrefetchController(l1, List.of(a), Policies.PREFETCH.create("default"), 8));
        pc.setStepHook((step, id, keys, active) -> states.put(step, state(a, keys)));
        pc.start();
        assertThat(pc.awaitPrefetchResult(pc.submitPrefetchRequest(ks, LAYOUT), WAIT)).isEqualTo(expected);
        return states;
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aKeyFaultInjectFailsAtLoadEndsThePrefixAndEveryLockIsReleased(Kind kind) throws Exception {
        List<ObjectKey> ks = keys(0, 4);
        FaultInjectL2Adapter a = closer.add(FaultInjectL2Adapter.builder().dropChunkHashes(ks.get(1).chunkHash())
                .wrap(Fixtures.open(kind, dir, "a")));
        putDirect(a, ks);
        Map<Step, String> states = prefetch(a, ks, 1);
        assertThat(states.get(Step.LOOKUP)).isEqualTo("L1=---- L2[0]=1111"); // found at lookup
        assertThat(states.get(Step.LOADING)).isEqualTo("L1=WWWW L2[0]=1111");
        // key 1 failed: dropped from L1; keys 2, 3 loaded past the prefix are ready and unlocked; L2 all unlocked
        assertThat(states.get(Step.AFTER_LOAD)).isEqualTo("L1=1-UU L2[0]=0000");
        assertThat(state(a, ks)).isEqualTo("L1=1-UU L2[0]=0000");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void throughQosAdmissionTheLockTableHoldsAtEveryStep(Kind kind) throws Exception {
        QosL2Adapter a = closer.add(QosL2Adapter.wrap(Fixtures.open(kind, dir, "a"),
                QosScheduler.builder().maxInflightTasks(1).build()));
        List<ObjectKey> ks = keys(0, 5);
        putDirect(a, pick(ks, 0, 1, 3)); // key 2 missing: 3 is a hit past the gap
        Map<Step, String> states = prefetch(a, ks, 2);
        assertThat(states).containsOnlyKeys(Step.LOOKUP, Step.AFTER_PLAN, Step.LOADING, Step.ADMITTED, Step.AFTER_LOAD);
        assertThat(states.get(Step.LOOKUP)).isEqualTo("L1=----- L2[0]=11010");
        assertThat(states.get(Step.AFTER_PLAN)).isEqualTo("L1=WW--- L2[0]=11000");
        assertThat(states.get(Step.LOADING)).isEqualTo("L1=WW--- L2[0]=11000");
        assertThat(states.get(Step.ADMITTED)).isEqualTo("L1=11--- L2[0]=00000");
        assertThat(states.get(Step.AFTER_LOAD)).isEqualTo("L1=11--- L2[0]=00000");
        assertThat(state(a, ks)).isEqualTo("L1=11--- L2[0]=00000");
    }
}
