package io.fdpblock.util;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.l2.L2Adapters;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A key given twice in JSON a user hands us is refused, never resolved silently to the last value. */
@Tag("unit")
class StrictJsonTest {
    @Test
    void theStrictMapperRefusesAKeyGivenTwiceAndNamesIt() throws Exception {
        assertThatThrownBy(() -> Json.strictMapper().readTree("{\"a\":1,\"b\":{\"c\":1,\"c\":2}}"))
                .isInstanceOf(JsonProcessingException.class).hasMessageContaining("'c'");
        assertThat(Json.strictMapper().readTree("{\"a\":1,\"b\":{\"a\":2}}").path("b").path("a").asInt())
                .isEqualTo(2); // the same name in another object is fine
    }

    @Test
    void adapterJsonWithADuplicateKeyIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"mock\",\"type\":\"raw_block\"}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Duplicate field 'type'").hasMessageContaining("only once");
        assertThatThrownBy(() -> L2Adapters.create("{\"type\":\"raw_block\",\"device_path\":\"/var/tmp/x.img\","
                + "\"slot_bytes\":8192,\"slot_bytes\":16384}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'slot_bytes'");
    }

    @Test
    void rawBlockConfigJsonWithADuplicateKeyIsRefused() {
        assertThatThrownBy(() -> RawBlockCoreConfig.fromJson("{\"device_path\":\"/var/tmp/a.img\","
                + "\"slot_bytes\":8192,\"device_path\":\"/var/tmp/b.img\"}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'device_path'");
    }
}
