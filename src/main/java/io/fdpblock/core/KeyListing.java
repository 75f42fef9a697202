package io.fdpblock.core;

import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * fdpblock_v2 keeps no key in memory: the keys of its entries are read back from the slot headers, which
 * name them (a 4 KiB read per key, in batches). For listener replay and tools, not for the hot path.
 */
final class KeyListing {
    private static final int STEP = 4_096;
    private static final int READS = 256;

    private KeyListing() {}

    static Map<String, Integer> fromSlotHeaders(RawBlockCore core, CompactIndex index) throws IOException {
        Map<String, Integer> out = new LinkedHashMap<>();
        int headerBytes = core.headerBytes;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment entries = arena.allocate((long) STEP * CompactIndex.ENTRY_BYTES, 8);
            MemorySegment headers = arena.allocate((long) READS * headerBytes, 4096);
            long capacity;
            core.lock.lock();
            try {
                capacity = index.capacity();
                index.beginCopy();
            } finally {
                core.lock.unlock();
            }
            try {
                for (long pos = 0; pos < capacity; pos += STEP) {
                    int n;
                    core.lock.lock();
                    try {
                        n = index.copyLive(pos, STEP, entries, s -> 0);
                    } finally {
                        core.lock.unlock();
                    }
                    for (int from = 0; from < n; from += READS) {
                        int to = Math.min(n, from + READS);
                        IoBatch b = new IoBatch(to - from);
                        for (int i = from; i < to; i++) {
                            int slot = entries.get(ValueLayout.JAVA_INT_UNALIGNED, (long) i * CompactIndex.ENTRY_BYTES + 16);
                            b.read(core.slotOffset(slot), headers.asSlice((long) (i - from) * headerBytes, headerBytes));
                        }
                        core.device.execute(b);
                        for (int i = from; i < to; i++) {
                            long e = (long) i * CompactIndex.ENTRY_BYTES;
                            int size = entries.get(ValueLayout.JAVA_INT_UNALIGNED, e + 20);
                            OnDiskFormat.SlotHeader h = OnDiskFormat.readSlotHeader(
                                    headers.asSlice((long) (i - from) * headerBytes, headerBytes));
                            if (h.key() != null && h.payloadLength() == size) {
                                out.put(h.key(), size);
                            }
                        }
                    }
                }
            } finally {
                core.lock.lock();
                try {
                    index.endCopy();
                } finally {
                    core.lock.unlock();
                }
            }
        }
        return out;
    }
}
