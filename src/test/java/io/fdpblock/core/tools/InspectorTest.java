package io.fdpblock.core.tools;

import io.fdpblock.core.CoreFixture;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.core.tools.Inspector;
import io.fdpblock.device.IoEngine;
import io.fdpblock.l2.KeyCodec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

@Tag("host")
class InspectorTest {
    private static final RawBlockCoreConfig.MetaFormat V1 = RawBlockCoreConfig.MetaFormat.LMCACHE_V1;

    @TempDir
    Path dir;

    @Test
    void reportsContainersLayoutUsageBySaltAndBadSlotHeaders() throws Exception {
        try (CoreFixture f = new CoreFixture(IoEngine.IO_URING, dir, 16, V1)) {
            RawBlockCore core = f.open();
            List<PutRequest> reqs = new ArrayList<>();
            String[] salts = {"", "rag:a", "rag:a"};
            for (int i = 0; i < 3; i++) {
                String k = KeyCodec.encode("m", 0, new byte[] {(byte) i}, salts[i], 0);
                reqs.add(PutRequest.of(k, f.payload(k, 1000 * (i + 1))));
            }
            core.put(reqs);
            core.checkpointNow();
            core.close();

            Inspector.Report r = Inspector.inspect(f.device, 4096, CoreFixture.META, true);
            // seq 1 is the empty checkpoint the store committed when it was created
            assertThat(r.winner()).isOne();
            assertThat(r.containers().get(1).seq()).isEqualTo(2);
            assertThat(r.containers().get(0).valid()).isTrue();
            assertThat(r.containers().get(0).seq()).isEqualTo(1);
            assertThat(r.keys()).isEqualTo(3);
            assertThat(r.payloadBytes()).isEqualTo(6000);
            assertThat(r.bySalt().get("rag:a")).containsExactly(2, 5000);
            assertThat(r.bySalt().get("")).containsExactly(1, 1000);
            assertThat(r.layout()).containsEntry("slot_bytes", CoreFixture.SLOT).containsEntry("next_slot", 3L);
            assertThat(r.slotsChecked()).isEqualTo(3);
            assertThat(r.badSlots()).isEmpty();

            CoreFixture.patch(f.device, CoreFixture.META + CoreFixture.SLOT, 1, s -> s.set(ValueLayout.JAVA_BYTE, 0, (byte) 'X'));
            Inspector.Report bad = Inspector.inspect(f.device, 4096, CoreFixture.META, true);
            assertThat(bad.badSlots()).hasSize(1);
            assertThat(bad.badSlots().get(0).problem()).isEqualTo("no LMCBLK01 magic");
            assertThat(bad.badSlots().get(0).offset()).isEqualTo(CoreFixture.META + CoreFixture.SLOT);
        }
    }
}
