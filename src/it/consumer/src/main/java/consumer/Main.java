package consumer;

import io.fdpblock.core.LoadRequest;
import io.fdpblock.core.PutRequest;
import io.fdpblock.core.RawBlockCore;
import io.fdpblock.core.RawBlockCoreConfig;
import io.fdpblock.l2.KeyCodec;
import io.fdpblock.l2.L2Adapters;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * What a service does with the library: opens a RawBlockCore on a file in the directory given as the
 * first argument, puts one key, loads it back and compares every byte, reopens the file and finds the
 * key again, and lists the adapter types the library registers (ServiceLoader: on the module path
 * that needs the module's provides/uses). Exit 0 and one line "consumer: OK ..." when all holds.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: Main <directory for the device file>");
        }
        Path device = Path.of(args[0]).resolve("consumer.img");
        RawBlockCoreConfig config = RawBlockCoreConfig.fromJson("""
                {"device_path": "%s", "capacity_bytes": 67108864, "slot_bytes": 1048576,
                 "meta_total_bytes": 4194304, "io_engine": "io_uring"}""".formatted(device));
        byte[] chunkHash = new byte[32];
        for (int i = 0; i < chunkHash.length; i++) {
            chunkHash[i] = (byte) (i * 37 + 11);
        }
        String key = KeyCodec.encode("consumer/model", 0, chunkHash, "", 0);
        int size = 256 << 10;
        try (Arena arena = Arena.ofShared()) { // loads complete on the device thread: not a confined arena
            MemorySegment payload = arena.allocate(size, 4096);
            for (long i = 0; i < size; i += 8) {
                payload.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
            }
            MemorySegment back = arena.allocate(size, 4096);
            try (RawBlockCore core = RawBlockCore.open(config)) {
                check(core.put(List.of(PutRequest.of(key, payload)))[0], "put of " + key);
                check(core.load(List.of(new LoadRequest(key, back)))[0], "load of " + key);
                long at = back.mismatch(payload);
                check(at == -1, "loaded bytes equal the stored ones (first difference at byte " + at + ")");
            }
            try (RawBlockCore core = RawBlockCore.open(config)) {
                check(core.exists(List.of(key), false)[0], "key recovered after reopen");
            }
        }
        Set<String> types = L2Adapters.types();
        check(types.contains("raw_block"), "adapter type raw_block registered, got " + types);
        System.out.println("consumer: OK, put and loaded " + size + " bytes under " + key + " on " + device
                + ", found again after reopen; adapter types " + types + "; module "
                + RawBlockCore.class.getModule().getName());
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError("consumer check failed: " + what);
        }
    }
}
