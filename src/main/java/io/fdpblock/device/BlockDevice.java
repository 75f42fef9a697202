package io.fdpblock.device;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A device that stores bytes at offsets: a file, a block device, an NVMe namespace, or memory.
 * Reads and writes go in {@link IoBatch}es, asynchronously; every method is thread-safe.
 *
 * <p>Offsets and lengths are multiples of {@link #logicalBlockSize()}; for the O_DIRECT engines the
 * buffer addresses too are aligned to {@link #bufferAlignment()}. Buffers from {@link #buffers()} are
 * aligned and, on io_uring, registered with the ring, so I/O on them uses the fixed-buffer path.
 */
public interface BlockDevice extends AutoCloseable {

    /** The path (or a name for a memory device). */
    String path();

    IoEngine engine();

    /** Capacity in bytes. */
    long sizeBytes();

    int logicalBlockSize();

    /** The largest single operation, in bytes. */
    int maxTransferBytes();

    /** Buffer addresses must be multiples of this (1 = any). */
    int bufferAlignment();

    /** Writes carry their placement id to the device (NVMe FDP); elsewhere it is accepted and ignored. */
    default boolean supportsPlacement() {
        return false;
    }

    /**
     * Why writes cannot carry placement ids here, and what would let them; null when
     * {@link #supportsPlacement()}.
     */
    default String placementUnsupportedReason() {
        return supportsPlacement() ? null : "io_engine " + engine() + " on " + path() + " cannot carry placement ids: FDP"
                + " needs io_engine uring_cmd on an NVMe generic device /dev/ngXnY, or io_engine io_uring on its block"
                + " device /dev/nvmeXnY with write streams (Linux >= 6.16)";
    }

    /**
     * The placement ids the device reports (NVMe FDP: RUH Status), in its order; empty without FDP.
     */
    default List<Integer> placementIds() throws IOException {
        return List.of();
    }

    /** Bytes of a reclaim unit (FDP configuration RUNS), or 0 when unknown or without FDP. */
    default long reclaimUnitBytes() throws IOException {
        return 0;
    }

    /** A deallocation ({@link IoBatch#deallocate}) tells the device something (it is not a no-op). */
    default boolean supportsDeallocate() {
        return false;
    }

    /** The device's pool of aligned buffers (registered with the ring where that pays). */
    AlignedBufferPool buffers();

    /**
     * Submits every operation of {@code batch}; {@code callback} runs once when all have completed
     * (on the device's I/O thread, or on the caller's for synchronous engines): it must only record
     * and signal, never block.
     *
     * @throws IOException when the batch is invalid (misaligned, past the end, too long) or the device
     *         is closed; then nothing of it was submitted
     */
    void submit(IoBatch batch, IoBatch.Callback callback) throws IOException;

    /**
     * Submits {@code batch} and waits for it; throws the first failure or short transfer. The wait
     * ignores interrupts (the thread's interrupt status is kept): an I/O is never abandoned while the
     * kernel may still read or write its buffers.
     */
    default void execute(IoBatch batch) throws IOException {
        CompletableFuture<IoBatch> done = new CompletableFuture<>();
        submit(batch, done::complete);
        done.join(); // uninterruptible; the callback only ever completes it normally
        batch.throwIfFailed();
    }

    /**
     * Registers {@code region} (e.g. a caller's buffer pool) with the engine, so that I/O on buffers
     * inside it uses the fixed-buffer path.
     *
     * @return false when this engine has no use for it
     */
    default boolean registerBuffers(MemorySegment region) throws IOException {
        return false;
    }

    /**
     * Operations so far that used the registered-buffer path (READ_FIXED/WRITE_FIXED, or
     * {@code IORING_URING_CMD_FIXED} for passthru); 0 for engines that have none. Lets a caller check
     * that the fast path is really taken (e.g. {@code fdpblock selftest}).
     */
    default long fixedBufferOps() {
        return 0;
    }

    /**
     * Undoes {@link #registerBuffers} for every registration inside {@code region}; call it before
     * freeing memory that was registered.
     */
    default void unregisterBuffers(MemorySegment region) throws IOException {
    }

    /**
     * What the engine's rings did so far (system calls, SQEs per call, time-averaged depth); cumulative,
     * {@link IoStats#minus} gives a window. {@link IoStats#NONE} for engines without rings.
     */
    default IoStats ioStats() {
        return IoStats.NONE;
    }

    /** Makes every write that has completed durable. */
    default void flush() throws IOException {
        IoBatch b = new IoBatch(1);
        b.flush();
        execute(b);
    }

    /**
     * Completes everything accepted, then releases the device. Idempotent. Memory the kernel may still
     * touch is never freed: if an operation does not complete within a bound, close says so in the
     * log and leaves that memory allocated.
     */
    @Override
    void close();
}
