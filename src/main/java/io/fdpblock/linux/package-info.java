/**
 * Linux system calls through the FFM API: files opened with {@code open(2)} (O_DIRECT, exclusive claims
 * of a device; {@link io.fdpblock.linux.NativeFile}), errno turned into exceptions that name the call
 * ({@link io.fdpblock.linux.Errno}), eventfd and poll for the controllers' wake-ups, I/O memory on huge
 * pages ({@link io.fdpblock.linux.IoMemory}), and the loading of the native bindings with the reason
 * when it fails ({@link io.fdpblock.linux.NativeLibrary}).
 *
 * <p>The other packages build on it. A service needs little of it directly: {@link
 * io.fdpblock.linux.IoMemory} to allocate the buffers it hands the store, and the exceptions the store
 * and devices throw as {@link java.io.IOException}s ({@link io.fdpblock.linux.DeviceInUseException}
 * when another owner holds a device) if it wants to tell them apart.
 */
package io.fdpblock.linux;
