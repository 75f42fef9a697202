package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;

import java.io.IOException;

/**
 * One on-device metadata format of the store, as a codec is one index format in Lucene: the engine
 * ({@link RawBlockCore}) finds the formats through {@link java.util.ServiceLoader} and names none of
 * them. Open asks each format what the device holds ({@link #detect}); the format that found its store
 * opens it ({@link #open}), or, on a device that holds none, the configured one makes a new store
 * ({@link #create}). Either way the result is recovered into an index and a metadata writer
 * ({@link Opening#recover}), whose background work the engine starts afterwards. The tools reach a
 * store through its format too: the layout it records ({@link #recordedLayout}) and its part in a
 * migration to or from another format ({@link FormatMigration}).
 *
 * <p>Implementations are stateless and public, with a public no-argument constructor.
 */
public interface StoreFormat {
    /** The configuration's {@code meta_format} name of this format, e.g. {@code "lmcache_v1"}. */
    String name();

    /** What the device says about this format, read before anything is written; never writes. */
    Detection detect(ProbeContext probe) throws IOException;

    /** Opens the store {@link #detect} found ({@link Detection.Kind#STORE} or {@link Detection.Kind#TRACES}). */
    Opening open(ProbeContext probe) throws IOException;

    /**
     * Makes a new store of this format on a device that holds none of any format, or on one whose
     * formats' signatures were {@linkplain #erase erased} ({@code "format": true}); refuses (writing
     * nothing) when the area it needs holds data it did not write.
     */
    Opening create(ProbeContext probe) throws IOException;

    /** {@code "format": true}: makes whatever of this format the device holds unrecognizable. */
    void erase(ProbeContext probe) throws IOException;

    /**
     * The metadata area a new store of this format needs for {@code slots} slots, its data area aligned to
     * {@code align} (where the format aligns it).
     */
    long metaBytesFor(int blockAlign, long slots, long align);

    /** What {@code found} ({@link #detect}) is, in a phrase for messages, e.g. "an fdpblock_v2 superblock". */
    default String describe(Detection found) {
        return "a " + name() + " store at offset " + found.offset();
    }

    /**
     * A striped device built without member labels: refuses (writing nothing) members that are not the
     * ones the store on them was created over, where what this format records tells. Nothing by default.
     */
    default void checkUnlabelledMembers(ProbeContext probe) throws IOException {}

    // ------------------------------------------------------------------ for the tools (migrate)

    /**
     * What this format records of the layout of the store on {@code probe}'s device, read without writing,
     * for a tool that opens a store without its configuration: {@code given} fills what it does not record,
     * and tells it where to look where it cannot find out by itself.
     *
     * @param found what {@link #detect} found; {@link Detection#NONE} (or {@link Detection.Kind#TRACES})
     *        when no format found its header on the device, and a format may still find its store by what
     *        else it left
     * @return the layout, or null when the device holds no store of this format
     * @throws FormatRefusedException when it holds one whose layout cannot be told, saying what to give
     */
    StoreLayout recordedLayout(ProbeContext probe, Detection found, StoreLayout.Given given) throws IOException;

    /**
     * This format as the source of a migration of {@code store} (open in this format, with
     * {@code layout}) to another format ({@link FormatMigration}).
     *
     * @param devicePath what the store's configuration names its device
     */
    FormatMigration.Source migrationSource(RawBlockCore store, StoreLayout layout, String devicePath)
            throws IOException;

    /**
     * This format as the target of a migration of the store on {@code device}, with {@code layout}, from
     * another format ({@link FormatMigration}).
     *
     * @param devicePath what the store's configuration names its device
     * @throws FormatRefusedException when this format's metadata for the store does not fit its metadata area
     */
    FormatMigration.Target migrationTarget(BlockDevice device, StoreLayout layout, String devicePath)
            throws IOException;

    /** A store of a format, opened far enough to say where its data area starts. */
    interface Opening {
        /** Bytes of the metadata area: the data area starts here. */
        long metaTotalBytes();

        /**
         * Recovers the index and the slots in use from the device ({@code context.slots()} is rebuilt);
         * starts no thread: the engine calls {@link MetaStore#startBackground()} afterwards.
         */
        Recovered recover(StoreContext context) throws IOException;
    }

    /** What recovery made: the store's index, its metadata writer, and what it found. */
    record Recovered(StoreIndex index, MetaStore meta, RecoveryResult result) {}
}
