package io.fdpblock.l2;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.fuzz.Fuzzing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The adapter JSON a user passes to {@link L2Adapters#create} (LMCache's --l2-adapter value): its JSON
 * half, {@link L2Adapters#parse}, and for the mock type the factory's own keys (it opens nothing but
 * eventfds; raw_block's keys are {@link io.fdpblock.core.RawBlockCoreConfig}'s, fuzzed there, and creating
 * one would open whatever file the input names). Input: the JSON text (UTF-8). Documented:
 * IllegalArgumentException with a message.
 */
public class L2AdapterConfigFuzzTest {
    @FuzzTest
    void adapterJson(byte[] input) throws IOException {
        check(input);
    }

    public static void check(byte[] input) throws IOException {
        L2Adapters.Parsed p;
        try {
            p = L2Adapters.parse(new String(input, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            Fuzzing.requireMessage(e);
            return;
        }
        if (!p.config().isObject() || !p.factory().type().equals(p.config().get("type").textValue())) {
            throw Fuzzing.wrong("adapter type", p.factory().type(), p.config().get("type"));
        }
        if (p.factory() instanceof MockL2Adapter.Factory mock) {
            try (L2Adapter a = mock.create(p.config())) {
                if (a.usage() == null) {
                    throw Fuzzing.wrong("mock adapter usage", null, "a usage");
                }
            } catch (IllegalArgumentException e) {
                Fuzzing.requireMessage(e);
            }
        }
    }
}
