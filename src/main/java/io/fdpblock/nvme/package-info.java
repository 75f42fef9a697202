/**
 * NVMe passthru and Flexible Data Placement: a namespace opened through its generic character device
 * ({@link NvmeNamespace}, {@code /dev/ngXnY}) answering Identify, the FDP log pages, RUH Status and RUH
 * Update; the encoding of NVMe commands and their completions; placement ids; and the kernel's
 * block-layer write streams that carry placement on {@code /dev/nvmeXnY}.
 *
 * <p>The {@code uring_cmd} and write-stream engines of {@code io.fdpblock.device} use it for their
 * commands. A service needs it to name placements ({@link PlacementId}) or to inspect what a device
 * offers (configurations, reclaim unit handles, statistics) before it sets up a store.
 */
package io.fdpblock.nvme;
