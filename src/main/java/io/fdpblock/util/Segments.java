package io.fdpblock.util;

import java.lang.foreign.MemorySegment;

/** What the library asks of a caller's memory segment before it hands it to another thread. */
public final class Segments {
    /** Not a thread of any arena: a confined segment is never accessible by it, any other segment is. */
    private static final Thread ANOTHER_THREAD = Thread.ofPlatform().unstarted(() -> {});

    private Segments() {}

    /** Whether {@code segment} is confined to one thread (Arena.ofConfined()), so no I/O thread may touch it. */
    public static boolean isConfined(MemorySegment segment) {
        return !segment.isAccessibleBy(ANOTHER_THREAD);
    }
}
