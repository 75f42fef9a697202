package io.fdpblock.nvme;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Little-endian, unaligned value layouts for NVMe data structures (which are packed). */
final class NvmeLayouts {
    private NvmeLayouts() {}

    static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
}
