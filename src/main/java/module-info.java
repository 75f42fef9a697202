/**
 * fdpblock: io_uring, NVMe passthru with FDP placement, a durable KV-chunk store and LMCache's L2
 * adapter contract, in pure Java through the FFM API.
 *
 * <p>On the module path, grant native access to this module: {@code java
 * --enable-native-access=io.fdpblock ...}. On the class path the flag is
 * {@code --enable-native-access=ALL-UNNAMED}. Without it the JDK warns (or, with
 * {@code --illegal-native-access=deny}, refuses), and fdpblock says which flag is missing.
 *
 * <p>Exported: the API packages. Not exported: the generated bindings ({@code io.fdpblock.ffi}), the
 * command line and the benchmark ({@code cli}, {@code bench}: in the runnable jar only, not in the
 * library jar), and helpers ({@code util}). A package added to the project is not exported until it
 * is named here.
 */
module io.fdpblock {
    exports io.fdpblock.l2;
    exports io.fdpblock.core;
    exports io.fdpblock.adapter;
    exports io.fdpblock.device;
    exports io.fdpblock.nvme;
    exports io.fdpblock.uring;
    exports io.fdpblock.linux;
    exports io.fdpblock.controller;
    exports io.fdpblock.sim;

    // L2AdapterFactory.create takes a JsonNode: users of the API see Jackson's types.
    requires transitive com.fasterxml.jackson.databind;
    // BLAKE2b-64 slot identity (the JDK has none).
    requires org.bouncycastle.provider;
    // XXH3-128 key hashes of the compact index.
    requires hash4j;
    // Latency histograms of reportStatus(). HdrHistogram 2.2.2 has no module name of its own: the name is
    // derived from its jar's file name, as Maven stores it (HdrHistogram-2.2.2.jar).
    requires HdrHistogram;

    // The command line and the benchmark are compiled with the module but left out of the library jar;
    // their libraries are optional dependencies (present in the runnable jar, never required here).
    requires static info.picocli;
    requires static me.tongfei.progressbar;
    requires static org.knowm.xchart;
    requires static java.desktop;       // the benchmark's chart (PNG)
    requires static jdk.management;     // the benchmark's CPU clock

    uses io.fdpblock.l2.L2AdapterFactory;
    uses io.fdpblock.core.StoreFormat;
    uses io.fdpblock.controller.StorePolicyFactory;
    uses io.fdpblock.controller.PrefetchPolicyFactory;
    uses io.fdpblock.controller.EvictionPolicyFactory;

    // Keep in step with src/main/resources/META-INF/services/ (the class path reads those files).
    provides io.fdpblock.l2.L2AdapterFactory with
            io.fdpblock.adapter.RawBlockL2Adapter.Factory,
            io.fdpblock.l2.MockL2Adapter.Factory;
    provides io.fdpblock.core.StoreFormat with
            io.fdpblock.core.V1Format,
            io.fdpblock.core.V2Format;
    provides io.fdpblock.controller.StorePolicyFactory with
            io.fdpblock.controller.DefaultStorePolicy.Factory,
            io.fdpblock.controller.SkipL1StorePolicy.Factory;
    provides io.fdpblock.controller.PrefetchPolicyFactory with
            io.fdpblock.controller.DefaultPrefetchPolicy.Factory;
    provides io.fdpblock.controller.EvictionPolicyFactory with
            io.fdpblock.controller.LruEvictionPolicy.Factory,
            io.fdpblock.controller.ReclaimUnitEvictionPolicy.Factory;
}
