/**
 * Linux system calls through the FFM API: files opened with {@code open(2)} (O_DIRECT, exclusive claims
 * of a device; {@link NativeFile}), errno turned into exceptions that name the call ({@link Errno}),
 * eventfd and poll for the controllers' wake-ups, I/O memory on huge pages ({@link IoMemory}), and the
 * loading of the native bindings, with the reason when it fails ({@link NativeLibrary}).
 *
 * <p>The other packages build on it. A service needs little of it directly: {@link IoMemory} to allocate
 * the buffers it hands the store, {@link EventFd#await(int, Duration)} and
 * {@link EventFd#drainFd} to wait on an L2 adapter's eventfds (which the adapter gives out as plain
 * descriptors), and, to tell failures apart, the exceptions the store and devices throw as
 * {@link IOException}s ({@link DeviceInUseException} when another owner holds a device,
 * {@link Errno.NativeIOException} with the call and errno).
 */
package io.fdpblock.linux;

import java.io.IOException;
import java.time.Duration;
