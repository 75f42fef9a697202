/**
 * LMCache's L2 adapter contract in Java: {@link io.fdpblock.l2.L2Adapter} (non-blocking store,
 * lookup-and-lock and load tasks, each signalling its eventfd when done, and unlock and delete), the key
 * ({@link io.fdpblock.l2.ObjectKey}, {@link io.fdpblock.l2.KeyCodec}), the buffers
 * ({@link io.fdpblock.l2.MemoryObj}), the result bitmaps ({@link io.fdpblock.l2.Bitmap}), adapters by
 * name ({@link io.fdpblock.l2.L2Adapters}), an in-memory adapter for tests
 * ({@link io.fdpblock.l2.MockL2Adapter}) and adapter wrappers ({@link io.fdpblock.l2.ForwardingL2Adapter}):
 * weighted admission per cache salt ({@link io.fdpblock.l2.QosL2Adapter}, {@link io.fdpblock.l2.QosScheduler})
 * and failed loads for tests ({@link io.fdpblock.l2.FaultInjectL2Adapter}). It imports nothing of the
 * project but {@code io.fdpblock.linux} (docs/contract.md sections 1-2 and 8).
 */
package io.fdpblock.l2;
