package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.BlockDevices;
import io.fdpblock.device.IoBatch;
import io.fdpblock.device.IoEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import java.util.Arrays;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * lmcache_v1 metadata damage, block by block: for every 4 KiB block of the metadata area that holds
 * anything (both container headers, both checkpoints' payloads, the stale tail of an older, longer
 * one), zero it, and separately flip one byte in it, then open. The open either recovers exactly the
 * durable keys, each with its bytes, and is healthy, or refuses (DAMAGED or UNREADABLE) with the device
 * unchanged; never fewer keys and healthy. Each refused one then opens with {@code open_damaged}:
 * unhealthy, the damage named in the status, no key served with another key's bytes.
 */
@Tag("unit")
class V1MetadataDamageSweepTest {
    private static final long SLOT = 8 << 10;
    private static final int SLOTS = 400;
    private static final long META = 512 << 10;
    private static final long SIZE = META + SLOTS * SLOT;

    static {
        // a hundred opens of damaged metadata: keep the console to the figures (outcomes are asserted)
        Logger.getLogger("io.fdpblock.core").setLevel(Level.OFF);
    }

    private static RawBlockCoreConfig.Builder config() {
        return RawBlockCoreConfig.builder("memory", SLOT).capacityBytes(SIZE).metaTotalBytes(META)
                .metaFormat(RawBlockCoreConfig.MetaFormat.LMCACHE_V1).metaEnablePeriodic(false)
                .ioEngine(IoEngine.MEMORY);
    }

    private static String key(int i) {
        return "m@0x00000000@" + Integer.toHexString(0x1000 + i) + "@sweep";
    }

    /** A key's payload follows from its name: any copy served must equal it. */
    private static byte[] payloadOf(String key) {
        SplittableRandom r = new SplittableRandom(key.hashCode());
        byte[] b = new byte[1 + r.nextInt((int) (SLOT - 4096))];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) r.nextInt();
        }
        return b;
    }

    private static void put(RawBlockCore core, Arena arena, List<String> keys, Set<String> model) throws IOException {
        List<PutRequest> reqs = new ArrayList<>();
        for (String k : keys) {
            byte[] data = payloadOf(k);
            reqs.add(PutRequest.of(k, arena.allocate(data.length, 4096).copyFrom(MemorySegment.ofArray(data))));
        }
        assertThat(core.put(reqs)).containsOnly(true);
        model.addAll(keys);
    }

    private static void delete(RawBlockCore core, List<String> keys, Set<String> model) throws IOException {
        assertThat(core.delete(keys, false)).containsOnly(true);
        keys.forEach(model::remove);
    }

    private static byte[] image(BlockDevice dev) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(SIZE, 4096);
            IoBatch b = new IoBatch(1);
            b.read(0, buf);
            dev.execute(b);
            return buf.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static void restore(BlockDevice dev, byte[] image) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(SIZE, 4096).copyFrom(MemorySegment.ofArray(image));
            IoBatch b = new IoBatch(1);
            b.write(0, buf);
            dev.execute(b);
        }
    }

    /**
     * Every key the store holds loads the bytes stored under it.
     *
     * @return what it holds
     */
    private static Set<String> loadAll(RawBlockCore core, List<String> failures, String trial) throws IOException {
        Set<String> held = new HashSet<>(core.keySizes().keySet());
        List<String> keys = new ArrayList<>(held);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment dest = arena.allocate(keys.size() * (SLOT - 4096) + 1, 4096);
            List<LoadRequest> loads = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                loads.add(new LoadRequest(keys.get(i), dest.asSlice(i * (SLOT - 4096), SLOT - 4096)));
            }
            boolean[] hit = core.load(loads);
            for (int i = 0; i < keys.size(); i++) {
                byte[] want = payloadOf(keys.get(i));
                if (!hit[i] || loads.get(i).destination().asSlice(0, want.length)
                        .mismatch(MemorySegment.ofArray(want)) != -1) {
                    failures.add(trial + ": " + keys.get(i) + " is listed but does not load its bytes (hit " + hit[i]
                            + ")");
                }
            }
        }
        return held;
    }

    @Test
    void everyDamagedBlockOfTheMetadataAreaRecoversExactlyTheDurableKeysOrRefuses() throws Exception {
        BlockDevice device = BlockDevices.memory(SIZE, 4096);
        Set<String> durable = new HashSet<>();
        Set<String> everStored = new HashSet<>();
        try (Arena arena = Arena.ofShared()) {
            // seq 2 (container 1): 350 keys; seq 3 (container 0): 330; seq 4 (container 1): 280, of which 10
            // the older checkpoint lacks, and deleted slots reused at once; container 1 keeps the tail of
            // the longer seq 2 behind seq 4
            try (RawBlockCore core = RawBlockCore.open(config().build(), device)) {
                List<String> first = new ArrayList<>();
                for (int i = 0; i < 350; i++) {
                    first.add(key(i));
                }
                put(core, arena, first, durable);
                core.checkpointNow();
                delete(core, first.subList(0, 50), durable);
                List<String> second = new ArrayList<>();
                for (int i = 350; i < 380; i++) {
                    second.add(key(i));
                }
                put(core, arena, second, durable);
                core.checkpointNow();
                delete(core, first.subList(50, 110), durable);
                List<String> third = new ArrayList<>();
                for (int i = 380; i < 390; i++) {
                    third.add(key(i));
                }
                put(core, arena, third, durable);
                everStored.addAll(first);
                everStored.addAll(second);
                everStored.addAll(third);
                assertThat(core.status()).containsEntry("checkpoint_seq", 3L);
            } // close: seq 4
            assertThat(durable).hasSize(280);
            byte[] pristine = image(device);

            List<String> failures = new ArrayList<>();
            Map<String, Integer> outcomes = new TreeMap<>();
            int blocks = 0;
            SplittableRandom rnd = new SplittableRandom(42);
            for (long off = 0; off < META; off += 4096) {
                boolean holds = false;
                for (int i = 0; i < 4096 && !holds; i++) {
                    holds = pristine[(int) off + i] != 0;
                }
                if (!holds) {
                    continue;
                }
                blocks++;
                for (String how : List.of("zeroed", "flipped")) {
                    int at = rnd.nextInt(4096);
                    int mask = 1 + rnd.nextInt(255);
                    String trial = "block at offset " + off + " " + how + (how.equals("flipped") ? " (byte " + (off + at)
                            + " ^ 0x" + Integer.toHexString(mask) + ")" : "");
                    byte[] damaged = pristine.clone();
                    if (how.equals("zeroed")) {
                        Arrays.fill(damaged, (int) off, (int) off + 4096, (byte) 0);
                    } else {
                        damaged[(int) off + at] ^= (byte) mask;
                    }
                    restore(device, damaged);
                    String outcome;
                    try (RawBlockCore core = RawBlockCore.open(config().build(), device)) {
                        Set<String> held = loadAll(core, failures, trial);
                        if (!held.equals(durable) || !Boolean.TRUE.equals(core.status().get("is_healthy"))) {
                            Set<String> missing = new HashSet<>(durable);
                            missing.removeAll(held);
                            Set<String> extra = new HashSet<>(held);
                            extra.removeAll(durable);
                            failures.add(trial + ": opened with " + held.size() + " keys (" + missing.size()
                                    + " durable ones missing, " + extra.size() + " others), healthy "
                                    + core.status().get("is_healthy") + ": " + core.status().get("recovery"));
                        }
                        outcome = "recovered every durable key";
                    } catch (StoreRefusedException e) {
                        outcome = "refused (" + e.reason() + ")";
                        if (e.reason() != StoreRefusedException.Reason.DAMAGED
                                && e.reason() != StoreRefusedException.Reason.UNREADABLE) {
                            failures.add(trial + ": refused as " + e.reason() + ": " + e.getMessage());
                        }
                        if (!Arrays.equals(image(device), damaged)) {
                            failures.add(trial + ": the refused open changed the device");
                        }
                        openDamaged(device, durable, everStored, failures, trial);
                    } catch (IOException | RuntimeException e) {
                        outcome = "failed";
                        failures.add(trial + ": " + e);
                    }
                    outcomes.merge(how + ": " + outcome, 1, Integer::sum);
                }
            }
            System.out.println("lmcache_v1 metadata damage sweep, " + blocks + " blocks holding data, each zeroed"
                    + " and with one byte flipped: " + outcomes);
            assertThat(failures).isEmpty();
            assertThat(blocks).as("headers and payload blocks of both containers").isGreaterThan(20);
            assertThat(outcomes).containsKeys("zeroed: recovered every durable key", "zeroed: refused (DAMAGED)",
                    "flipped: recovered every durable key", "flipped: refused (DAMAGED)");
        } finally {
            device.close();
        }
    }

    /** The refused device opened with what is readable: unhealthy, the damage said, no wrong bytes. */
    private static void openDamaged(BlockDevice device, Set<String> durable, Set<String> everStored,
            List<String> failures, String trial) throws IOException {
        try (RawBlockCore core = RawBlockCore.open(config().openDamaged(true).build(), device)) {
            Map<String, Object> s = core.status();
            Set<String> held = loadAll(core, failures, trial + " with open_damaged");
            Set<String> missing = new HashSet<>(durable);
            missing.removeAll(held);
            long lost = ((Number) s.get("metadata_lost_keys")).longValue();
            if (!Boolean.FALSE.equals(s.get("is_healthy")) || !(s.get("metadata_damage") instanceof String d)
                    || !d.contains("container") || !d.contains("offset")) {
                failures.add(trial + " with open_damaged: healthy " + s.get("is_healthy") + ", damage "
                        + s.get("metadata_damage"));
            }
            if (!everStored.containsAll(held)) {
                failures.add(trial + " with open_damaged: keys that were never stored");
            }
            // one damaged byte changes at most one entry of the damaged checkpoint that is counted
            if (lost < -1 || (lost >= 0 && Math.abs(lost - missing.size()) > 1)) {
                failures.add(trial + " with open_damaged: " + lost + " keys reported lost, " + missing.size()
                        + " missing: " + s.get("metadata_damage"));
            }
        } catch (IOException | RuntimeException e) {
            failures.add(trial + " with open_damaged: " + e);
        }
    }
}
