/**
 * LMCache's raw_block state v1 ({@code lmcache_v1}), one {@code StoreFormat} of the store: the index is
 * a JSON checkpoint written in turn to two mirrored containers at the device's start (each a sealed
 * header block, the payload and a trailer: {@code ContainerFormat}), byte-compatible with LMCache.
 * {@code V1Format} detects and opens it; {@code Recovery} picks the newest valid container and checks
 * the slot headers it names; {@code Checkpointer} writes the next one from the heap index
 * ({@code HeapKeyIndex}); {@code V1Migration} is its part in the tools' migration (the layout a
 * checkpoint records, the store as source or target). Not exported: the engine finds it through
 * {@link java.util.ServiceLoader}.
 */
package io.fdpblock.core.v1;
