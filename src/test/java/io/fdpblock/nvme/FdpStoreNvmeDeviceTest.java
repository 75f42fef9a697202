package io.fdpblock.nvme;

import io.fdpblock.core.LoadRequest;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.devicetier.DeviceGuest;
import io.fdpblock.l2.ObjectKey;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The store on a real FDP namespace, checked at the device rather than through the store's own account:
 * where its slots land (read back raw), what each placement id's reclaim unit saw (RUH Status RUAMW), and
 * what a deleted slot holds once deallocated (Identify Namespace DLFEAT). Only the store's public API
 * ({@link RawBlockCore#open}, put, delete, load, status) is used, so the checks hold whatever its insides.
 *
 * <p>Each test starts from an empty store (its meta area zeroed) in the device tests' common layout
 * ({@link DeviceGuest#storeConfig}: 1 MiB slots after an 8 MiB meta area, so that a reclaim unit of 8 MiB
 * holds 8 slots and slot groups start on reclaim-unit boundaries of the namespace).
 */
@Tag("device")
class FdpStoreNvmeDeviceTest {
    /** First bytes of every test payload; then the key's seed (8 bytes), then its pseudo-random bytes. */
    private static final long MARKER = 0x5453_4554_4B4C_4246L; // "FBLKTEST" little-endian
    private static final int PAYLOAD = 256 * 1024;

    private RawBlockCoreConfig config;

    @BeforeEach
    void freshStore() throws IOException {
        String device = System.getenv("FDPBLOCK_NVME_DEVICE");
        assumeTrue(device != null && !device.isBlank(), "FDPBLOCK_NVME_DEVICE is not set: the device tier runs in"
                + " the emulated FDP guest (make test) or against a real FDP SSD");
        config = DeviceGuest.storeConfig(device).build();
        DeviceGuest.wipeStore(config);
    }

    /** A payload in a shared arena (the device's I/O thread reads it): marker, seed, then bytes from the seed. */
    private static MemorySegment payload(Arena arena, long seed) {
        MemorySegment s = arena.allocate(PAYLOAD, 4096);
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 16; i < PAYLOAD; i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, MARKER);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, seed);
        return s;
    }

    private static String key(String salt, int i) {
        return ObjectKey.of("org/model", i, new byte[] {7, (byte) i}).withCacheSalt(salt).encoded();
    }

    private long slotOffset(int slot) {
        return config.metaTotalBytes() + (long) slot * config.slotBytes();
    }

    /** LBAs a put of one {@link #PAYLOAD}-byte key writes: its slot header and its payload. */
    private long lbasPerKey(int lbaSize) {
        return (config.headerBytes() + (long) PAYLOAD) / lbaSize;
    }

    /**
     * Where each seed's payload is on the namespace: the slot whose payload starts with the marker and that
     * seed, read raw (one LBA per slot below the store's high-water mark).
     */
    private Map<Long, Integer> slotsOnDevice(NvmeNamespace ns, int slotsInUse, Arena arena) throws IOException {
        Map<Long, Integer> bySeed = new HashMap<>();
        MemorySegment lba = arena.allocate(ns.lbaSize(), 4096);
        for (int slot = 0; slot < slotsInUse; slot++) {
            ns.read((slotOffset(slot) + config.headerBytes()) / ns.lbaSize(), lba);
            if (lba.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) == MARKER) {
                Integer earlier = bySeed.put(lba.get(ValueLayout.JAVA_LONG_UNALIGNED, 8), slot);
                assertThat(earlier).as("the same payload in slots %s and %d", earlier, slot).isNull();
            }
        }
        return bySeed;
    }

    private static Map<Integer, Long> ruamw(NvmeNamespace ns) throws IOException {
        Map<Integer, Long> m = new TreeMap<>();
        for (FdpRecords.RuhStatusEntry e : ns.ruhStatus().entries()) {
            m.put(e.placementId(), e.availableMediaWritesLbas());
        }
        return m;
    }

    private static int intStatus(RawBlockCore core, String key) {
        Object v = core.status().get(key);
        assertThat(v).as("status key %s", key).isInstanceOf(Number.class);
        return ((Number) v).intValue();
    }

    private static void assertLoads(RawBlockCore core, Arena arena, Map<String, MemorySegment> expected)
            throws IOException {
        List<String> keys = new ArrayList<>(expected.keySet());
        List<LoadRequest> loads = new ArrayList<>();
        List<MemorySegment> into = new ArrayList<>();
        for (String k : keys) {
            MemorySegment d = arena.allocate(PAYLOAD, 4096);
            into.add(d);
            loads.add(new LoadRequest(k, d));
        }
        boolean[] hit = core.load(loads);
        for (int i = 0; i < keys.size(); i++) {
            assertThat(hit[i]).as("load %s", keys.get(i)).isTrue();
            assertThat(into.get(i).mismatch(expected.get(keys.get(i)))).as("bytes of %s", keys.get(i)).isEqualTo(-1);
        }
    }

    @Test
    void eachPlacementIdsSlotsFillReclaimUnitAlignedGroupsAndItsRuamwDropsByExactlyItsLbas() throws Exception {
        // Three salt buckets, each on a data placement id of its own, put interleaved (a, b, c, a, b, c, ...)
        // so that an allocator that ignores reclaim units would interleave their slots. Bucket "rag" gets
        // more keys than a reclaim unit has slots, so it needs a second group.
        String[] salts = {"rag:tenant", "chat:tenant", "code:tenant"};
        int[] counts = {11, 3, 5};
        try (RawBlockCore core = RawBlockCore.open(config); NvmeNamespace ns = NvmeNamespace.open(config.devicePath());
                Arena arena = Arena.ofShared()) {
            long ru = ns.activeFdpConfiguration().reclaimUnitBytes();
            int groupSlots = (int) (ru / config.slotBytes());
            assertThat(config.metaTotalBytes() % ru).as("the data area starts on a reclaim-unit boundary").isZero();
            assertThat(groupSlots).as("slots per reclaim unit of %d bytes", ru).isGreaterThan(counts[1]);
            assertThat(intStatus(core, "slots_per_reclaim_unit")).isEqualTo(groupSlots);
            List<Integer> dataIds = core.dataPlacementIds();
            assertThat(dataIds).hasSizeGreaterThanOrEqualTo(salts.length);
            Map<String, Integer> idOf = new LinkedHashMap<>();
            for (int b = 0; b < salts.length; b++) {
                idOf.put(salts[b], dataIds.get(b));
            }

            // every handle on a fresh reclaim unit, so that none fills (and switches) during the test
            ns.ruhUpdate(ns.ruhStatus().placementIds().stream().mapToInt(Integer::intValue).toArray());
            Map<Integer, Long> before = ruamw(ns);

            List<PutRequest> puts = new ArrayList<>();
            Map<Long, String> saltOfSeed = new HashMap<>();
            Map<String, MemorySegment> stored = new LinkedHashMap<>();
            for (int i = 0; i < counts[0]; i++) {
                for (int b = 0; b < salts.length; b++) {
                    if (i < counts[b]) {
                        long seed = 1000L * (b + 1) + i;
                        MemorySegment p = payload(arena, seed);
                        String k = key(salts[b], i);
                        puts.add(PutRequest.of(k, p).withPlacement(idOf.get(salts[b])));
                        saltOfSeed.put(seed, salts[b]);
                        stored.put(k, p);
                    }
                }
            }
            boolean[] ok = core.put(puts);
            for (int i = 0; i < ok.length; i++) {
                assertThat(ok[i]).as("put %s", puts.get(i).key()).isTrue();
            }
            Map<Integer, Long> after = ruamw(ns);

            // RUAMW: each bucket's id lost exactly the LBAs written with it; every other id (the default,
            // the metadata id, the unused data ids) none
            for (Map.Entry<Integer, Long> e : before.entrySet()) {
                int id = e.getKey();
                long expected = 0;
                for (int b = 0; b < salts.length; b++) {
                    if (idOf.get(salts[b]) == id) {
                        expected = counts[b] * lbasPerKey(ns.lbaSize());
                    }
                }
                assertThat(e.getValue() - after.get(id)).as("RUAMW drop of placement id %d (LBAs written with it)", id)
                        .isEqualTo(expected);
            }

            // Slots, as found on the device: each group of a bucket's slots inside one reclaim-unit-aligned
            // range of the namespace, and no range shared by two buckets
            Map<Long, Integer> slotOf = slotsOnDevice(ns, intStatus(core, "next_slot"), arena);
            assertThat(slotOf.keySet()).as("payloads found on the device").isEqualTo(saltOfSeed.keySet());
            Map<String, TreeMap<Long, TreeSet<Integer>>> rangesOf = new LinkedHashMap<>();
            slotOf.forEach((seed, slot) -> rangesOf.computeIfAbsent(saltOfSeed.get(seed), s -> new TreeMap<>())
                    .computeIfAbsent(slotOffset(slot) / ru, r -> new TreeSet<>()).add(slot));
            Map<Long, String> ownerOfRange = new HashMap<>();
            for (int b = 0; b < salts.length; b++) {
                TreeMap<Long, TreeSet<Integer>> ranges = rangesOf.get(salts[b]);
                int full = counts[b] / groupSlots;
                int rest = counts[b] % groupSlots;
                assertThat(ranges).as("reclaim-unit ranges (offset / %d) holding bucket %s's slots %s", ru, salts[b],
                        ranges).hasSize(full + (rest > 0 ? 1 : 0));
                List<Integer> expectedSizes = new ArrayList<>(Collections.nCopies(full, groupSlots));
                if (rest > 0) {
                    expectedSizes.add(rest);
                }
                assertThat(ranges.values().stream().map(Set::size).sorted(Comparator.reverseOrder()).toList())
                        .as("slots of bucket %s per reclaim unit: %s", salts[b], ranges).isEqualTo(expectedSizes);
                for (long r : ranges.keySet()) {
                    String other = ownerOfRange.put(r, salts[b]);
                    assertThat(other).as("reclaim-unit range %d holds slots of %s and %s", r, other, salts[b]).isNull();
                }
            }
            assertLoads(core, arena, stored);
        }
    }

    @Test
    void deletedSlotsAreDeallocatedBeforeReuseAndReadBackAsTheNamespaceSays() throws Exception {
        try (RawBlockCore core = RawBlockCore.open(config); NvmeNamespace ns = NvmeNamespace.open(config.devicePath());
                Arena arena = Arena.ofShared()) {
            FdpRecords.NamespaceInfo id = ns.identifyNamespaceNow();
            int pid = core.dataPlacementIds().get(0);
            Map<String, MemorySegment> first = new LinkedHashMap<>();
            List<PutRequest> puts = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                MemorySegment p = payload(arena, 5000 + i);
                String k = key("rag:dealloc", i);
                first.put(k, p);
                puts.add(PutRequest.of(k, p).withPlacement(pid));
            }
            assertThat(core.put(puts)).containsOnly(true);
            Map<Long, Integer> slotOf = slotsOnDevice(ns, intStatus(core, "next_slot"), arena);
            List<String> keys = new ArrayList<>(first.keySet());
            List<String> deleted = keys.subList(0, 5);
            TreeSet<Integer> freedSlots = new TreeSet<>();
            for (int i = 0; i < deleted.size(); i++) {
                freedSlots.add(slotOf.get(5000L + i));
            }

            // Delete five and put two new keys at once, on the same id: whichever slots they get (a freed
            // one may be reused as soon as its deallocate completed), their bytes must survive it.
            int deallocatedBefore = intStatus(core, "deallocated_slots");
            long nuseBefore = ns.identifyNamespaceNow().utilizationBlocks();
            assertThat(core.delete(deleted, true)).containsOnly(true);
            Map<String, MemorySegment> second = new LinkedHashMap<>();
            List<PutRequest> again = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                MemorySegment p = payload(arena, 6000 + i);
                String k = key("rag:reuse", i);
                second.put(k, p);
                again.add(PutRequest.of(k, p).withPlacement(pid));
            }
            assertThat(core.put(again)).containsOnly(true);
            awaitDeallocated(core, deallocatedBefore + deleted.size());

            Map<Long, Integer> now = slotsOnDevice(ns, intStatus(core, "next_slot"), arena);
            for (int i = 0; i < 2; i++) {
                assertThat(now).as("the new key %d's payload on the device", i).containsKey(6000L + i);
            }
            Map<String, MemorySegment> live = new LinkedHashMap<>(second);
            keys.subList(5, 8).forEach(k -> live.put(k, first.get(k)));
            assertLoads(core, arena, live); // after every deallocate completed: none hit a reused slot

            // A freed slot not (yet) reused holds nothing: each of its LBAs reads as DLFEAT says
            Set<Integer> reused = new TreeSet<>(List.of(now.get(6000L), now.get(6001L)));
            List<Integer> stillFree = freedSlots.stream().filter(s -> !reused.contains(s)).toList();
            assertThat(stillFree).as("freed slots %s, slots now holding payloads %s", freedSlots, reused).isNotEmpty();
            long slotLbas = lbasPerKey(ns.lbaSize());
            switch (id.deallocatedReads()) {
                case ZEROES, ONES -> {
                    byte fill = id.deallocatedReads() == FdpRecords.DeallocatedReads.ZEROES ? 0 : (byte) 0xFF;
                    MemorySegment expected = arena.allocate(ns.maxTransferBytes(), 4096).fill(fill);
                    MemorySegment buf = arena.allocate(ns.maxTransferBytes(), 4096);
                    for (int slot : stillFree) {
                        long bytes = slotLbas * ns.lbaSize();
                        for (long off = 0; off < bytes; off += buf.byteSize()) {
                            MemorySegment part = buf.asSlice(0, Math.min(buf.byteSize(), bytes - off));
                            ns.read((slotOffset(slot) + off) / ns.lbaSize(), part);
                            assertThat(part.mismatch(expected.asSlice(0, part.byteSize())))
                                    .as("byte of deallocated slot %d at +%d (DLFEAT %s)", slot, off, id.deallocatedReads())
                                    .isEqualTo(-1);
                        }
                    }
                }
                default -> {
                    assumeTrue(id.thinProvisioned(), "the namespace says neither what a deallocated LBA reads as"
                            + " (DLFEAT " + id.dlfeat() + ") nor tracks allocation (NSFEAT bit 0 clear): nothing shows"
                            + " the deallocation; the reuse checks above passed");
                    long nuseAfter = ns.identifyNamespaceNow().utilizationBlocks();
                    // five slots' LBAs deallocated, two slots' worth written anew
                    assertThat(nuseBefore - nuseAfter).as("NUSE drop (LBAs) after deleting %d keys and putting %d",
                            deleted.size(), second.size()).isGreaterThanOrEqualTo((deleted.size() - second.size()) * slotLbas);
                }
            }

            // Once deallocated, a freed slot goes back to its placement id: new keys on that id take
            // the freed slots first, and their bytes are intact.
            Map<String, MemorySegment> third = new LinkedHashMap<>();
            List<PutRequest> refill = new ArrayList<>();
            for (int i = 0; i < stillFree.size(); i++) {
                MemorySegment p = payload(arena, 7000 + i);
                String k = key("rag:refill", i);
                third.put(k, p);
                refill.add(PutRequest.of(k, p).withPlacement(pid));
            }
            assertThat(core.put(refill)).containsOnly(true);
            Map<Long, Integer> finalSlots = slotsOnDevice(ns, intStatus(core, "next_slot"), arena);
            TreeSet<Integer> refilled = new TreeSet<>();
            for (int i = 0; i < stillFree.size(); i++) {
                refilled.add(finalSlots.get(7000L + i));
            }
            assertThat(refilled).as("slots of the refill keys").containsExactlyElementsOf(stillFree);
            assertLoads(core, arena, third);
        }
    }

    /** Waits until the store reports {@code count} slots deallocated (a deallocate may complete after delete returns). */
    private static void awaitDeallocated(RawBlockCore core, int count) throws InterruptedException {
        for (int i = 0; i < 600 && intStatus(core, "deallocated_slots") < count; i++) {
            Thread.sleep(50);
        }
        assertThat(intStatus(core, "deallocated_slots")).as("slots deallocated (status deallocated_slots)")
                .isEqualTo(count);
    }
}
