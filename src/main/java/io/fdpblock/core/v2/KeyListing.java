package io.fdpblock.core.v2;

import com.dynatrace.hash4j.hashing.HashValue128;
import io.fdpblock.core.OnDiskFormat;
import io.fdpblock.core.StoreContext;
import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;
import io.fdpblock.util.KeyHash;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.Lock;

/**
 * fdpblock_v2 keeps no key in memory: the keys of its entries are read back from the slot headers, which
 * name them (a 4 KiB read per key, in batches). For listener replay and tools (inspect, migrate), not for
 * the hot path.
 */
public final class KeyListing {
    private static final int STEP = 4_096;
    private static final int READS = 256;

    private KeyListing() {}

    /** One live index entry and the slot header it points at. */
    public interface Visitor {
        /** @param header the slot's header, or null when headers are not read */
        void entry(long h1, long h2, int slot, int size, int crc, int saltId, OnDiskFormat.SlotHeader header)
                throws IOException;
    }

    /** The keys of {@code index}'s entries and their payload sizes, from the slot headers that name them. */
    static Map<String, Integer> fromSlotHeaders(StoreContext store, CompactIndex index) throws IOException {
        Map<String, Integer> out = new LinkedHashMap<>();
        forEach(store.device(), store.dataBase(), store.slotBytes(), store.headerBytes(), index, store.lock(), true,
                (h1, h2, slot, size, crc, saltId, h) -> {
                    // a header that names another key (a slot reused before a delete was durable, then a power
                    // loss) is not this entry's key: listing it would hand out a key the index does not hold
                    if (headerProblem(h, h1, h2, size) == null) {
                        out.put(h.key(), size);
                    }
                });
        return out;
    }

    /**
     * Hands every live entry of {@code index} to {@code visitor}, with its slot header when
     * {@code readHeaders}; {@code lock} (the store's) is held only while a step of entries is copied.
     */
    public static void forEach(BlockDevice device, long dataBase, long slotBytes, int headerBytes, CompactIndex index,
            Lock lock, boolean readHeaders, Visitor visitor) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment entries = arena.allocate((long) STEP * CompactIndex.ENTRY_BYTES, 8);
            MemorySegment headers = arena.allocate((long) READS * headerBytes, 4096);
            long capacity;
            lock.lock();
            try {
                capacity = index.capacity();
                index.beginCopy();
            } finally {
                lock.unlock();
            }
            try {
                for (long pos = 0; pos < capacity; pos += STEP) {
                    int n;
                    lock.lock();
                    try {
                        n = index.copyLive(pos, STEP, entries, s -> 0);
                    } finally {
                        lock.unlock();
                    }
                    for (int from = 0; from < n; from += READS) {
                        int to = Math.min(n, from + READS);
                        if (readHeaders) {
                            IoBatch b = new IoBatch(to - from);
                            for (int i = from; i < to; i++) {
                                int slot = entries.get(ValueLayout.JAVA_INT_UNALIGNED, (long) i * CompactIndex.ENTRY_BYTES + 16);
                                b.read(dataBase + slot * slotBytes, headers.asSlice((long) (i - from) * headerBytes,
                                        headerBytes));
                            }
                            device.execute(b);
                        }
                        for (int i = from; i < to; i++) {
                            long e = (long) i * CompactIndex.ENTRY_BYTES;
                            OnDiskFormat.SlotHeader h = readHeaders ? OnDiskFormat.readSlotHeader(
                                    headers.asSlice((long) (i - from) * headerBytes, headerBytes)) : null;
                            visitor.entry(entries.get(ValueLayout.JAVA_LONG_UNALIGNED, e),
                                    entries.get(ValueLayout.JAVA_LONG_UNALIGNED, e + 8),
                                    entries.get(ValueLayout.JAVA_INT_UNALIGNED, e + 16),
                                    entries.get(ValueLayout.JAVA_INT_UNALIGNED, e + 20),
                                    entries.get(ValueLayout.JAVA_INT_UNALIGNED, e + 24),
                                    Short.toUnsignedInt(entries.get(ValueLayout.JAVA_SHORT_UNALIGNED, e + 30)), h);
                        }
                    }
                }
            } finally {
                lock.lock();
                try {
                    index.endCopy();
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    /**
     * Whether a slot header names the key of an entry: the magic, a key whose 128-bit hash is the
     * entry's, that key's slot identity, and the entry's length.
     *
     * @return null when it does, else what differs
     */
    public static String headerProblem(OnDiskFormat.SlotHeader h, long h1, long h2, int size) {
        if (!h.magicOk()) {
            return "no LMCBLK01 magic";
        }
        if (h.key() == null) {
            return "names no key (a slot header without fdpblock's key)";
        }
        HashValue128 k = KeyHash.of(h.key());
        if (k.getMostSignificantBits() != h1 || k.getLeastSignificantBits() != h2) {
            return "names " + h.key() + ", another key than the entry's";
        }
        return OnDiskFormat.slotHeaderProblem(h, h.key(), size);
    }
}
