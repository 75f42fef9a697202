/**
 * Small helpers the library's packages share and a service never needs: strict JSON reading, thread
 * shutdown, the latency histogram of the adapters' status, BLAKE2b-64. Not exported.
 */
package io.fdpblock.util;
