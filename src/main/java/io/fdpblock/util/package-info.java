/**
 * Small helpers the library's packages share and a service never needs: strict JSON reading, thread
 * shutdown, the latency histogram of the adapters' status, BLAKE2b-64, and the 128-bit key hash that keys
 * and the store share ({@link io.fdpblock.util.KeyHash}). Not exported.
 */
package io.fdpblock.util;
