/**
 * The benchmarks: fdpblock side by side with fio on the same device, buffers and flushes, the adapter's
 * workloads and the store at scale; their raw JSON goes under docs/bench/ (docs/benchmarks.md).
 */
package io.fdpblock.bench;
