package io.fdpblock.l2;

import io.fdpblock.adapter.RawBlockL2Adapter;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The shared contract (docs/contract.md section 2), run against both wrappers over the mock and over the
 * real raw-block adapter (a file-backed store).
 */
@Tag("host")
class WrapperContractTest {
    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final int SLOT_BYTES = 16 << 10;

    /** A raw-block adapter over a new file in {@code dir}: the same store the raw-block contract test uses. */
    static RawBlockL2Adapter rawBlock(Path dir) throws Exception {
        return RawBlockL2Adapter.open(RawBlockCoreConfig.builder(dir.resolve("raw-" + SEQ.incrementAndGet() + ".img")
                        .toString(), SLOT_BYTES).capacityBytes(RawBlockCoreConfig.v2MetaBytesFor(4096, 2048) + 2048L * SLOT_BYTES)
                .ioEngine(IoEngine.IO_URING).metaEnablePeriodic(false).build());
    }

    static void breakInner(L2Adapter wrapper) throws Exception {
        L2Adapter inner = ((ForwardingL2Adapter) wrapper).inner();
        if (inner instanceof MockL2Adapter m) {
            m.breakInternals();
        } else {
            ((RawBlockL2Adapter) inner).core().close(); // the store goes away under the adapter
        }
    }

    static int innerLockCount(L2Adapter wrapper, ObjectKey key) {
        L2Adapter inner = ((ForwardingL2Adapter) wrapper).inner();
        return inner instanceof MockL2Adapter m ? m.lockCount(key)
                : ((RawBlockL2Adapter) inner).core().lockCount(key.encoded());
    }

    /** The adapters a wrapper is tested over. */
    enum Inner {
        MOCK,
        /** completions later, from another thread */
        MOCK_WITH_BANDWIDTH,
        RAW_BLOCK
    }

    /** The contract through a wrapper over an {@link Inner}; lock counts and broken internals are the inner one's. */
    abstract static class OverWrapper extends L2AdapterContractTest {
        @TempDir
        Path dir;

        abstract Inner inner();

        abstract L2Adapter wrap(L2Adapter inner) throws Exception;

        @Override
        protected L2Adapter create() throws Exception {
            return wrap(switch (inner()) {
                case MOCK -> new MockL2Adapter();
                case MOCK_WITH_BANDWIDTH -> new MockL2Adapter(0, 2_000_000_000L);
                case RAW_BLOCK -> rawBlock(dir);
            });
        }

        @Override
        protected void breakInternals(L2Adapter adapter) throws Exception {
            breakInner(adapter);
        }

        @Override
        protected int lockCount(L2Adapter adapter, ObjectKey key) {
            return innerLockCount(adapter, key);
        }

        @Override
        protected long storedBytes(int payloadBytes) {
            return inner() == Inner.RAW_BLOCK ? SLOT_BYTES : payloadBytes; // raw_block: the slot a new key occupies
        }
    }

    /** The contract through a QoS wrapper; one difference, documented: the inner adapter's refusals. */
    abstract static class OverQos extends OverWrapper {
        @Override
        L2Adapter wrap(L2Adapter inner) throws Exception {
            return QosL2Adapter.wrap(inner);
        }

        /**
         * What the wrapper checks itself throws at submit; what only the inner adapter can check (the stored
         * payload's size) comes after admission: that load completes with a miss and an untouched buffer.
         */
        @Override
        @Test
        void badArgumentsAreRejectedAtSubmit() throws Exception {
            L2Adapter a = open();
            assertThatThrownBy(() -> a.submitStoreTask(List.of(), List.of())).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> a.submitStoreTask(List.of(key(1)), List.of()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("equal length");
            assertThatThrownBy(() -> a.submitLoadTask(List.of(key(1), key(2)), List.of(empty(10, (byte) 0))))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> a.submitLookupAndLockTask(List.of())).isInstanceOf(IllegalArgumentException.class);
            store(a, 1);
            MemoryObj small = empty(100, (byte) 0x33);
            assertThat(awaitLoad(a, a.submitLoadTask(List.of(key(1)), List.of(small))).toString()).isEqualTo("0");
            MemorySegment s = small.segment();
            for (long b = 0; b < s.byteSize(); b++) {
                assertThat(s.get(ValueLayout.JAVA_BYTE, b)).isEqualTo((byte) 0x33);
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> qos = (Map<String, Object>) a.reportStatus().get("qos");
            assertThat(qos).containsEntry("refused_by_inner", 1L);
        }
    }

    @Nested
    class QosOverMock extends OverQos {
        @Override
        Inner inner() {
            return Inner.MOCK;
        }
    }

    @Nested
    class QosOverMockWithBandwidth extends OverQos {
        @Override
        Inner inner() {
            return Inner.MOCK_WITH_BANDWIDTH;
        }
    }

    @Nested
    class QosOverRawBlock extends OverQos {
        @Override
        Inner inner() {
            return Inner.RAW_BLOCK;
        }
    }

    /** The contract through fault_inject with faults that hit none of the contract's keys. */
    abstract static class OverFaultInject extends OverWrapper {
        @Override
        L2Adapter wrap(L2Adapter inner) {
            return FaultInjectL2Adapter.builder().dropChunkHashesHex("ffeeddcc").gapIndices(64).wrap(inner);
        }
    }

    @Nested
    class FaultInjectOverMock extends OverFaultInject {
        @Override
        Inner inner() {
            return Inner.MOCK;
        }
    }

    @Nested
    class FaultInjectOverRawBlock extends OverFaultInject {
        @Override
        Inner inner() {
            return Inner.RAW_BLOCK;
        }
    }
}
