package io.fdpblock.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.core.v1.CheckpointContainerFuzzTest;
import io.fdpblock.core.v1.CheckpointPayloadFuzzTest;
import io.fdpblock.core.RawBlockCoreConfigFuzzTest;
import io.fdpblock.core.SlotHeaderFuzzTest;
import io.fdpblock.core.v2.V2LogFuzzTest;
import io.fdpblock.core.v2.V2SnapshotFuzzTest;
import io.fdpblock.core.v2.V2SuperblockFuzzTest;
import io.fdpblock.l2.KeyCodecFuzzTest;
import io.fdpblock.l2.L2AdapterConfigFuzzTest;
import io.fdpblock.nvme.FdpLogPagesFuzzTest;
import io.fdpblock.nvme.NvmeIdentifyFuzzTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/**
 * Every fuzz target behind one: the short fuzzing run of {@code make test}. Jazzer fuzzes one test per
 * JVM and each JVM costs seconds to instrument, so the test phase fuzzes this one; {@code make fuzz}
 * fuzzes each target on its own. Input: one byte choosing the target (its index in {@link #TARGETS}),
 * then that target's input. Seeds: every target's inputs (src/test/resources/<package>/<Class>Inputs/
 * <method>/), each behind its index byte, so the run starts from valid containers, pages and JSON.
 * The tag selects it for that run (surefire execution fuzz-short) and keeps it out of {@code make fuzz}.
 */
@Tag("fuzz-all")
public class DecodersFuzzTest {
    /** The targets, in index order; each has one @FuzzTest method and a {@code static check(byte[])}. */
    static final List<Class<?>> TARGETS = List.of(CheckpointContainerFuzzTest.class, CheckpointPayloadFuzzTest.class,
            SlotHeaderFuzzTest.class, RawBlockCoreConfigFuzzTest.class, NvmeIdentifyFuzzTest.class,
            FdpLogPagesFuzzTest.class, KeyCodecFuzzTest.class, L2AdapterConfigFuzzTest.class,
            V2SuperblockFuzzTest.class, V2SnapshotFuzzTest.class, V2LogFuzzTest.class);
    private static final Method[] CHECKS = TARGETS.stream().map(DecodersFuzzTest::checkMethod).toArray(Method[]::new);

    static Stream<byte[]> seeds() {
        List<byte[]> out = new ArrayList<>();
        for (int t = 0; t < TARGETS.size(); t++) {
            for (byte[] seed : inputsOf(TARGETS.get(t))) {
                byte[] s = new byte[seed.length + 1];
                s[0] = (byte) t;
                System.arraycopy(seed, 0, s, 1, seed.length);
                out.add(s);
            }
        }
        return out.stream();
    }

    @MethodSource("seeds")
    @FuzzTest
    void anyDecoder(byte[] input) throws Throwable {
        if (input.length == 0) {
            return;
        }
        Method check = CHECKS[Byte.toUnsignedInt(input[0]) % CHECKS.length];
        try {
            check.invoke(null, (Object) Arrays.copyOfRange(input, 1, input.length));
        } catch (InvocationTargetException e) {
            throw e.getCause(); // the target's own finding, unwrapped
        }
    }

    private static Method checkMethod(Class<?> target) {
        try {
            return target.getMethod("check", byte[].class);
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException(target + " has no public static check(byte[])", e);
        }
    }

    /** The files of a target's inputs directory (Jazzer's layout), read from the test class path. */
    static List<byte[]> inputsOf(Class<?> target) {
        Method fuzz = Arrays.stream(target.getDeclaredMethods()).filter(m -> m.isAnnotationPresent(FuzzTest.class))
                .findFirst().orElseThrow(() -> new IllegalStateException(target + " has no @FuzzTest"));
        String dir = target.getName().replace('.', '/') + "Inputs/" + fuzz.getName();
        URL url = target.getClassLoader().getResource(dir);
        if (url == null) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(Paths.get(url.toURI()))) {
            List<byte[]> out = new ArrayList<>();
            for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                out.add(Files.readAllBytes(f));
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
