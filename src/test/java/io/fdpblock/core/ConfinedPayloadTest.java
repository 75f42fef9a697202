package io.fdpblock.core;

import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A put's payload may come from an arena confined to the caller's thread, on every engine: the posix
 * engine does its I/O on threads of its own, which cannot touch such a segment (before, that put never
 * completed and its caller hung).
 */
@Tag("host")
class ConfinedPayloadTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"POSIX", "IO_URING", "MEMORY"})
    void aConfinedPayloadIsStoredAndLoadsBackByteForByte(IoEngine engine) throws Exception {
        try (CoreFixture f = new CoreFixture(engine, dir, 16); RawBlockCore core = f.open();
                Arena confined = Arena.ofConfined()) {
            String key = CoreFixture.key(1);
            MemorySegment expected = f.payload(key, 8192);
            MemorySegment mine = confined.allocate(8192, 4096); // aligned: the store would write it as is
            mine.copyFrom(expected);
            assertThat(core.put(List.of(PutRequest.of(key, mine)))).containsExactly(true);
            MemorySegment back = f.arena.allocate(8192, 4096);
            assertThat(core.load(List.of(new LoadRequest(key, back)))).containsExactly(true);
            assertThat(back.mismatch(expected)).isEqualTo(-1);
        }
    }
}
