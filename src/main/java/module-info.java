/**
 * fdpblock: io_uring, NVMe passthru with FDP placement, a durable KV-chunk store and LMCache's L2
 * adapter contract, in pure Java through the FFM API.
 *
 * <p>On the module path, grant native access to this module: {@code java
 * --enable-native-access=io.fdpblock ...}. On the class path the flag is
 * {@code --enable-native-access=ALL-UNNAMED}. Without it the JDK warns (or, with
 * {@code --illegal-native-access=deny}, refuses), and fdpblock says which flag is missing.
 *
 * <p>Exported: the API packages. {@code linux} and {@code uring} are API too: a service allocates its I/O
 * buffers with {@code IoMemory}, catches {@code DeviceInUseException} and {@code Errno.NativeIOException}
 * from {@code BlockDevices} and {@code NvmeNamespace}, asks {@code Uring.isAvailable()} which engine it can
 * use, and may drive a {@code Ring} itself. Not exported: the generated bindings ({@code io.fdpblock.ffi})
 * and helpers ({@code util}). The command line, the benchmarks and the WAF model are not part of the
 * library: they are the tools module (src/tools). A package added to the project is not exported until
 * it is named here.
 *
 * <p>Every module required here has a module name of its own: a name derived from a jar's file name
 * (an automatic module without {@code Automatic-Module-Name}) changes with how the jar is stored, so a
 * library that requires one cannot be published.
 */
module io.fdpblock {
    exports io.fdpblock.l2;
    exports io.fdpblock.core;
    exports io.fdpblock.core.tools;
    exports io.fdpblock.adapter;
    exports io.fdpblock.device;
    exports io.fdpblock.nvme;
    exports io.fdpblock.uring;
    exports io.fdpblock.linux;
    exports io.fdpblock.cache;
    exports io.fdpblock.controller;

    // L2AdapterFactory.create takes a JsonNode: users of the API see Jackson's types.
    requires transitive com.fasterxml.jackson.databind;
    // BLAKE2b-64 slot identity (the JDK has none).
    requires org.bouncycastle.provider;
    // XXH3-128 key hashes of the compact index.
    requires hash4j;

    uses io.fdpblock.l2.L2AdapterFactory;
    uses io.fdpblock.core.StoreFormat;
    uses io.fdpblock.controller.StorePolicyFactory;
    uses io.fdpblock.controller.PrefetchPolicyFactory;
    uses io.fdpblock.controller.EvictionPolicyFactory;

    // Keep in step with src/main/resources/META-INF/services/ (the class path reads those files).
    provides io.fdpblock.l2.L2AdapterFactory with
            io.fdpblock.adapter.RawBlockL2Adapter.Factory,
            io.fdpblock.l2.MockL2Adapter.Factory,
            io.fdpblock.l2.QosL2Adapter.Factory,
            io.fdpblock.l2.FaultInjectL2Adapter.Factory;
    provides io.fdpblock.core.StoreFormat with
            io.fdpblock.core.v1.V1Format,
            io.fdpblock.core.v2.V2Format;
    provides io.fdpblock.controller.StorePolicyFactory with
            io.fdpblock.controller.DefaultStorePolicy.Factory,
            io.fdpblock.controller.SkipL1StorePolicy.Factory;
    provides io.fdpblock.controller.PrefetchPolicyFactory with
            io.fdpblock.controller.DefaultPrefetchPolicy.Factory;
    provides io.fdpblock.controller.EvictionPolicyFactory with
            io.fdpblock.controller.LruEvictionPolicy.Factory,
            io.fdpblock.controller.ReclaimUnitEvictionPolicy.Factory,
            io.fdpblock.controller.TenantQuotaEvictionPolicy.Factory;
}
