"""Stores a few KV-cache chunks through fdpblock's LMCache adapter and loads them back, polling the three
eventfds the way LMCache's store and prefetch controllers do: poll, read the eventfd's counter, then
drain every result that is ready (signals coalesce).

    python3 python/examples/store_and_load.py [--device PATH] [--chunks N]

Needs LMCache (or the tests' stand-in, python/tests/stub, on PYTHONPATH), JPype, numpy, a JDK >= 25 and
the fdpblock jar (make build; or FDPBLOCK_JAR). Without --device it uses a file in a temp dir under
/var/tmp.
"""

from __future__ import annotations

import argparse
import os
import select
import sys
import tempfile

import numpy as np

from fdpblock_lmcache import FdpblockL2Adapter
from lmcache.v1.distributed.api import ObjectKey

CHUNK_BYTES = 64 << 10
SLOT_BYTES = CHUNK_BYTES + 4096  # the chunk and its slot header


class PrintingListener:
    """What an eviction policy hears: keys newly stored (with their sizes), loaded, really deleted."""

    def on_l2_keys_stored(self, keys, sizes):
        print(f"listener: {len(keys)} keys stored, {sum(sizes)} bytes")

    def on_l2_keys_accessed(self, keys):
        print(f"listener: {len(keys)} keys loaded")

    def on_l2_keys_deleted(self, keys):
        print(f"listener: {len(keys)} keys deleted")


def wait_and_drain(fd: int, drain):
    """Polls ``fd`` until ``drain()`` answers, reading the eventfd's counter after each wake-up."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    answer = drain()
    while answer is None:
        if poller.poll(10_000):
            try:
                os.eventfd_read(fd)
            except BlockingIOError:  # the count was taken by another reader
                pass
        answer = drain()
    return answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="device or file path (default: a 64 MiB file in a temp dir under /var/tmp)")
    parser.add_argument("--chunks", type=int, default=8, help="chunks to store and load (default 8)")
    args = parser.parse_args()

    # /var/tmp, not /tmp: the store opens its file with O_DIRECT, which tmpfs refuses.
    with tempfile.TemporaryDirectory(prefix="fdpblock-example-", dir="/var/tmp") as tmp:
        device = args.device or os.path.join(tmp, "cache.img")
        # The adapter_params of the --l2-adapter JSON (docs/lmcache-python.md): fdpblock's raw_block params.
        adapter = FdpblockL2Adapter({"device_path": device, "capacity_bytes": 64 << 20, "slot_bytes": SLOT_BYTES})
        try:
            return run(adapter, args.chunks)
        finally:
            adapter.close()


def run(adapter: FdpblockL2Adapter, count: int) -> int:
    adapter.register_listener(PrintingListener())
    fds = (adapter.get_store_event_fd(), adapter.get_lookup_and_lock_event_fd(), adapter.get_load_event_fd())
    print(f"adapter: {adapter}; eventfds store={fds[0]} lookup={fds[1]} load={fds[2]}")

    keys = [ObjectKey(chunk_hash=i.to_bytes(8, "big"), model_name="Qwen/Qwen2.5-0.5B", kv_rank=0, cache_salt="demo")
            for i in range(count)]
    chunks = [np.random.default_rng(i).integers(0, 256, CHUNK_BYTES, dtype=np.uint8) for i in range(count)]

    store_task = adapter.submit_store_task(keys, chunks)
    completed: dict = {}
    result = wait_and_drain(fds[0], lambda: completed.update(adapter.pop_completed_store_tasks()) or completed.get(store_task))
    print(f"store task {store_task}: success={result.is_successful()}, {result.bytes_transferred()} bytes")

    probe = keys + [ObjectKey(chunk_hash=b"never stored", model_name="Qwen/Qwen2.5-0.5B", kv_rank=0, cache_salt="demo")]
    lookup_task = adapter.submit_lookup_and_lock_task(probe, {})
    hits = wait_and_drain(fds[1], lambda: adapter.query_lookup_and_lock_result(lookup_task))
    print(f"lookup task {lookup_task}: {len(hits.get_indices_list())} of {len(probe)} keys found and locked")

    hit_indices = hits.get_indices_list()
    found = [probe[i] for i in hit_indices]
    buffers = [np.zeros(CHUNK_BYTES, dtype=np.uint8) for _ in found]
    load_task = adapter.submit_load_task(found, buffers)
    loaded = wait_and_drain(fds[2], lambda: adapter.query_load_result(load_task))
    adapter.submit_unlock(found)

    same = sum(1 for j in loaded.get_indices_list() if np.array_equal(buffers[j], chunks[hit_indices[j]]))
    usage = adapter.get_usage()
    print(f"load task {load_task}: {len(loaded.get_indices_list())} loaded, {same} byte for byte equal to what was stored")
    print(f"usage: {usage.total_bytes_used} of {usage.total_capacity_bytes} bytes, by salt {dict(usage.bytes_by_cache_salt)}")
    ok = result.is_successful() and hit_indices == list(range(count)) and same == count
    print("VERIFIED" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
