/**
 * Block devices the store reads and writes: the {@link BlockDevice} contract (batched, asynchronous I/O
 * in {@link IoBatch}es, with placement ids and deallocation), its engines (io_uring READ/WRITE, NVMe
 * passthru through {@code uring_cmd}, Linux write streams, POSIX pread/pwrite, memory), striping over
 * several members, and the aligned, registered buffers the I/O uses.
 *
 * <p>A service opens a device through {@link BlockDevices} with {@link DeviceOptions} (engine, rings,
 * queue depth) and hands it to the store, or lets the store open it from its configuration; it needs
 * this package to choose an engine, to read {@link IoStats}, or to run I/O of its own beside the store.
 */
package io.fdpblock.device;
