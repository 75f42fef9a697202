/**
 * io_uring over the generated bindings: whether it is usable here ({@link Uring}), setting a ring up
 * ({@link RingOptions}), preparing SQEs, submitting and reaping ({@link Ring}); a call that fails throws
 * with the call and its values.
 *
 * <p>The io_uring engines of {@code io.fdpblock.device} run on it, and so do the admin commands of
 * {@code io.fdpblock.nvme} where the kernel takes them through io_uring. A service does not need it: it
 * reaches io_uring through a {@link BlockDevice}, and no public signature of the device, nvme, core or
 * l2 packages names a type of this one.
 */
package io.fdpblock.uring;

import io.fdpblock.device.BlockDevice;
