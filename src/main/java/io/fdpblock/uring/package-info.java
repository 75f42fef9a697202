/**
 * io_uring over the generated bindings: whether it is usable here ({@link io.fdpblock.uring.Uring}),
 * setting a ring up ({@link io.fdpblock.uring.RingOptions}), preparing SQEs, submitting and reaping
 * ({@link io.fdpblock.uring.Ring}). Each call checks its result and throws with the call and its values.
 *
 * <p>The io_uring engines of {@code io.fdpblock.device} and the admin commands of
 * {@code io.fdpblock.nvme} run on it. A service does not need it: it reaches io_uring through a
 * {@link io.fdpblock.device.BlockDevice}, and no public signature of the device, nvme, core or l2
 * packages names a type of this one.
 */
package io.fdpblock.uring;
