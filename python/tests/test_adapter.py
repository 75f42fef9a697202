"""FdpblockL2Adapter against LMCache's contract: a real file device, real buffers, the Java adapter."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import select
import threading
import types
import weakref
from pathlib import Path

import jpype
import numpy as np
import pytest

from conftest import (DEVICE_BYTES, PAYLOAD_BYTES, SLOT_BYTES, RecordingListener, drain_until, make_device, params,
                      run_load, run_lookup, run_store, status_of)
from fdpblock_lmcache import DeviceIOError, FdpblockL2Adapter, bridge
from lmcache.lmcache_native import Bitmap
from lmcache.v1.distributed.api import ObjectKey
from lmcache.v1.distributed.internal_api import L1MemoryDesc, L2StoreResult
from lmcache.v1.distributed.l2_adapters.base import AdapterUsage, L2AdapterInterface
from lmcache.v1.memory_management import ArrayMemoryObj, CtypesMemoryObj


def key(n: int, **fields) -> ObjectKey:
    return ObjectKey(chunk_hash=ObjectKey.IntHash2Bytes(n), model_name="test_model", kv_rank=0, **fields)


def chunk(seed: int) -> ArrayMemoryObj:
    """A 64 KiB chunk whose bytes differ from every other seed's."""
    return ArrayMemoryObj(np.random.default_rng(seed).integers(0, 256, PAYLOAD_BYTES, dtype=np.uint8))


def empty_chunk(fill: int = 0) -> ArrayMemoryObj:
    return ArrayMemoryObj(np.full(PAYLOAD_BYTES, fill, dtype=np.uint8))


def test_is_an_l2_adapter_of_lmcache(adapter):
    assert isinstance(adapter, L2AdapterInterface)


def test_store_lookup_load_unlock_round_trip_exact_bytes(adapter):
    k1, k_miss, k3 = key(1), key(2), key(3)
    c1, c3 = chunk(1), chunk(3)

    result = run_store(adapter, [k1, k3], [c1, c3])
    assert isinstance(result, L2StoreResult) and result.is_successful()
    assert result.bytes_transferred() == status_of(adapter, "store")["bytes"]  # Java's figure, field for field

    lookup = run_lookup(adapter, [k1, k_miss, k3])
    assert isinstance(lookup, Bitmap)
    assert lookup.get_indices_list() == [0, 2]

    buffers = [empty_chunk(), empty_chunk(0xAB), empty_chunk()]
    loaded = run_load(adapter, [k1, k_miss, k3], buffers)
    assert loaded.get_indices_list() == [0, 2]
    assert buffers[0].array.tobytes() == c1.array.tobytes()
    assert buffers[2].array.tobytes() == c3.array.tobytes()
    assert np.all(buffers[1].array == 0xAB)  # a miss leaves its buffer untouched

    assert status_of(adapter, "locked_keys") == 2
    adapter.submit_unlock([k1, k_miss, k3])
    assert status_of(adapter, "locked_keys") == 0


def test_results_are_handed_out_once(adapter):
    k = key(7)
    store_task = adapter.submit_store_task([k], [chunk(7)])
    done: dict = {}
    drain_until(adapter.get_store_event_fd(), lambda: done.update(adapter.pop_completed_store_tasks()) or done.get(store_task))
    assert store_task not in adapter.pop_completed_store_tasks()

    lookup_task = adapter.submit_lookup_and_lock_task([k], {})
    drain_until(adapter.get_lookup_and_lock_event_fd(), lambda: adapter.query_lookup_and_lock_result(lookup_task))
    assert adapter.query_lookup_and_lock_result(lookup_task) is None

    load_task = adapter.submit_load_task([k], [empty_chunk()])
    drain_until(adapter.get_load_event_fd(), lambda: adapter.query_load_result(load_task))
    assert adapter.query_load_result(load_task) is None
    adapter.submit_unlock([k])


def test_lookup_takes_either_layout_argument(adapter):
    """LMCache passed one layout description, then one per object group: both are accepted."""
    run_store(adapter, [key(1)], [chunk(1)])
    for layout in ({}, {0: object()}, object()):
        task = adapter.submit_lookup_and_lock_task([key(1)], layout)
        hits = drain_until(adapter.get_lookup_and_lock_event_fd(), lambda: adapter.query_lookup_and_lock_result(task))
        assert hits.get_indices_list() == [0]
    adapter.submit_unlock([key(1)] * 3)


def test_segment_is_the_python_buffers_own_memory():
    """Zero copy: what Java writes through the segment, Python reads in its array, and the reverse."""
    import fdpblock_lmcache.jvm as jvm

    jvm.start()
    array = np.zeros(4096, dtype=np.uint8)
    address, length, _ = bridge.memory_of(array, writable=True)
    assert (address, length) == (array.ctypes.data, 4096)
    seg = bridge.segment(address, length)
    assert int(seg.address()) == array.ctypes.data and int(seg.byteSize()) == 4096
    seg.fill(jpype.JByte(0x5A))
    assert np.all(array == 0x5A)
    array[100] = 7
    assert int(seg.get(jpype.JClass("java.lang.foreign.ValueLayout").JAVA_BYTE, jpype.JLong(100))) == 7

    raw = (ctypes.c_ubyte * 512)()
    address, length, _ = bridge.memory_of(raw, writable=True)
    assert (address, length) == (ctypes.addressof(raw), 512)
    bridge.segment(address, length).fill(jpype.JByte(3))
    assert bytes(raw) == b"\x03" * 512


def test_memory_objects_reach_java_as_segments_over_their_memory():
    import fdpblock_lmcache.jvm as jvm

    jvm.start()
    objs = [chunk(1), CtypesMemoryObj(8192), np.zeros(1024, dtype=np.float32), bytearray(300)]
    jlist, pins = bridge.java_memory_objs(objs, writable=True)
    assert len(pins) == 1  # the bytearray's memoryview, so that it cannot be resized under Java
    addresses = [objs[0].data_ptr, objs[1].data_ptr, objs[2].ctypes.data,
                 ctypes.addressof(ctypes.c_char.from_buffer(objs[3]))]
    assert [int(m.segment().address()) for m in jlist] == addresses
    assert [int(m.size()) for m in jlist] == [PAYLOAD_BYTES, 8192, 4096, 300]
    with pytest.raises(BufferError):
        objs[3].extend(b"x")
    meta = jlist.get(0).meta()
    assert list(meta.shape()) == [PAYLOAD_BYTES] and str(meta.dtype()) == "uint8" and str(meta.fmt()) == "KV_2LTD"


def test_a_load_fills_a_python_owned_ctypes_buffer(adapter):
    src = CtypesMemoryObj(PAYLOAD_BYTES)
    for i in range(PAYLOAD_BYTES):
        src.buffer[i] = (i * 7) & 0xFF
    assert run_store(adapter, [key(9)], [src]).is_successful()
    dst = CtypesMemoryObj(PAYLOAD_BYTES)
    assert run_load(adapter, [key(9)], [dst]).get_indices_list() == [0]
    assert bytes(dst.buffer) == bytes(src.buffer)


def test_plain_numpy_arrays_and_bytes_work_as_buffers(adapter):
    data = np.arange(PAYLOAD_BYTES // 4, dtype=np.float32)
    assert run_store(adapter, [key(1), key(2)], [data, data.tobytes()]).is_successful()
    out = [np.zeros_like(data), bytearray(PAYLOAD_BYTES)]
    assert run_load(adapter, [key(1), key(2)], out).get_indices_list() == [0, 1]
    assert out[0].tobytes() == data.tobytes() and bytes(out[1]) == data.tobytes()


def _fd_target(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "closed"


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def test_event_fds_are_the_java_adapters_own_nonblocking_eventfds(adapter):
    fds = [adapter.get_store_event_fd(), adapter.get_lookup_and_lock_event_fd(), adapter.get_load_event_fd()]
    assert len(set(fds)) == 3
    assert fds == [int(adapter._java.storeEventFd()), int(adapter._java.lookupAndLockEventFd()),
                   int(adapter._java.loadEventFd())]
    assert all(_fd_target(fd) == "anon_inode:[eventfd]" for fd in fds)
    assert not any(_readable(fd) for fd in fds)

    task = adapter.submit_store_task([key(1)], [chunk(1)])
    poller = select.poll()
    poller.register(fds[0], select.POLLIN)
    assert poller.poll(120_000) == [(fds[0], select.POLLIN)]
    assert int.from_bytes(os.read(fds[0], 8), "little") >= 1  # the counter, as a controller reads it
    with pytest.raises(BlockingIOError):
        os.read(fds[0], 8)  # EFD_NONBLOCK: a second reader never hangs
    assert not _readable(fds[1]) and not _readable(fds[2])
    assert task in adapter.pop_completed_store_tasks()

    lookup = adapter.submit_lookup_and_lock_task([key(1)], {})
    assert _readable(fds[1]) or adapter.query_lookup_and_lock_result(lookup) is not None
    adapter.submit_unlock([key(1)])

    adapter.close()
    assert [adapter.get_store_event_fd(), adapter.get_lookup_and_lock_event_fd(), adapter.get_load_event_fd()] == [-1] * 3
    assert [_fd_target(fd) for fd in fds] != ["anon_inode:[eventfd]"] * 3  # closed with the Java adapter


def test_usage_by_cache_salt_is_javas(adapter):
    assert adapter.supports_global_eviction
    empty = adapter.get_usage()
    assert isinstance(empty, AdapterUsage)
    assert empty.total_bytes_used == 0 and dict(empty.bytes_by_cache_salt) == {}
    capacity = empty.total_capacity_bytes
    assert capacity == int(adapter._java.usage().totalCapacityBytes()) > 0

    run_store(adapter, [key(1, cache_salt="alice"), key(2, cache_salt="alice"), key(3, cache_salt="bob"), key(4)],
              [chunk(1), chunk(2), chunk(3), chunk(4)])
    usage = adapter.get_usage()
    assert dict(usage.bytes_by_cache_salt) == {"alice": 2 * SLOT_BYTES, "bob": SLOT_BYTES, "": SLOT_BYTES}
    assert usage.total_bytes_used == 4 * SLOT_BYTES and usage.total_capacity_bytes == capacity
    assert usage.usage_fraction == pytest.approx(4 * SLOT_BYTES / capacity)
    with pytest.raises(TypeError):
        usage.bytes_by_cache_salt["alice"] = 0  # a read-only snapshot, as LMCache's

    adapter.delete([key(1, cache_salt="alice"), key(3, cache_salt="bob")])
    assert dict(adapter.get_usage().bytes_by_cache_salt) == {"alice": SLOT_BYTES, "": SLOT_BYTES}


def test_listener_hears_new_keys_loads_and_real_deletes(adapter):
    listener = RecordingListener()
    adapter.register_listener(listener)
    assert listener.stored == []  # nothing held yet, nothing replayed

    odd = ObjectKey(chunk_hash=bytes(range(16)), model_name="org/Model v2.5", cache_salt="tenant-7",
                    kv_rank=ObjectKey.ComputeKVRank(200, 150, 8, 3), object_group_id=3)
    assert odd.kv_rank > 2**31  # an unsigned 32-bit rank: the same bits in Java's int
    assert run_store(adapter, [key(1), odd], [chunk(1), chunk(2)]).is_successful()
    assert listener.stored == [([key(1), odd], [SLOT_BYTES, SLOT_BYTES])]

    run_store(adapter, [key(1)], [chunk(1)])
    assert len(listener.stored) == 1  # a duplicate is not a new key

    run_load(adapter, [key(1), key(5), odd], [empty_chunk(), empty_chunk(), empty_chunk()])
    assert listener.accessed == [[key(1), odd]]

    run_lookup(adapter, [odd])  # locked: a delete keeps it and says nothing
    adapter.delete([odd, key(5)])
    assert listener.deleted == []
    adapter.submit_unlock([odd])
    adapter.delete([odd, key(1)])
    assert listener.deleted == [[odd, key(1)]]

    late = RecordingListener()
    run_store(adapter, [key(8)], [chunk(8)])
    adapter.register_listener(late)
    assert late.stored == [([key(8)], [SLOT_BYTES])]  # what is held, replayed at registration


def test_a_failing_listener_never_blocks_the_eventfds(adapter):
    class Failing(RecordingListener):
        def on_l2_keys_stored(self, keys, sizes):
            raise RuntimeError("listener failed")

    adapter.register_listener(Failing())
    assert run_store(adapter, [key(1)], [chunk(1)]).is_successful()
    assert run_load(adapter, [key(1)], [empty_chunk()]).get_indices_list() == [0]
    assert status_of(adapter, "listener_failures") == 1


def test_delete_keeps_a_locked_key_until_unlocked(adapter):
    k = key(11)
    run_store(adapter, [k], [chunk(11)])
    assert run_lookup(adapter, [k]).get_indices_list() == [0]
    adapter.delete([k])
    assert run_lookup(adapter, [k]).get_indices_list() == [0]
    adapter.submit_unlock([k, k])
    adapter.delete([k])
    assert run_lookup(adapter, [k]).get_indices_list() == []
    adapter.submit_unlock([k])  # unlocking what is not held is a no-op


def test_bad_input_is_a_value_error_naming_it(adapter):
    with pytest.raises(ValueError, match="non-empty"):
        adapter.submit_store_task([], [])
    with pytest.raises(ValueError, match="equal length"):
        adapter.submit_store_task([key(1), key(2)], [chunk(1)])
    with pytest.raises(ValueError, match="non-empty"):
        adapter.submit_lookup_and_lock_task([], {})
    with pytest.raises(ValueError, match="'@'"):  # refused by fdpblock's own key check
        adapter.submit_lookup_and_lock_task(
            [types.SimpleNamespace(chunk_hash=b"\x01", model_name="a@b", kv_rank=0, cache_salt="")], {})
    with pytest.raises(ValueError, match="not an ObjectKey"):
        adapter.submit_lookup_and_lock_task(["not a key"], {})
    with pytest.raises(ValueError, match="32 bits"):
        adapter.submit_lookup_and_lock_task([ObjectKey(b"\x01", "m", 2**32)], {})
    read_only = np.zeros(PAYLOAD_BYTES, dtype=np.uint8)
    read_only.setflags(write=False)
    for buffer in (read_only, bytes(PAYLOAD_BYTES)):
        with pytest.raises(ValueError, match="read-only"):
            adapter.submit_load_task([key(1)], [buffer])
    with pytest.raises(ValueError, match="C-contiguous"):
        adapter.submit_store_task([key(1)], [np.zeros((64, 64), dtype=np.uint8)[:, ::2]])
    with pytest.raises(ValueError, match="holds no memory"):
        adapter.submit_store_task([key(1)], [object()])

    run_store(adapter, [key(1)], [chunk(1)])
    with pytest.raises(ValueError, match="destination"):  # too small for what key(1) holds
        adapter.submit_load_task([key(1)], [np.zeros(100, dtype=np.uint8)])


def test_bad_params_are_value_errors(tmp_path: Path):
    dev = make_device(tmp_path / "dev.img")
    with pytest.raises(ValueError, match="slot_bytes"):
        FdpblockL2Adapter(params(dev, slot_bytes=1000))
    with pytest.raises(ValueError, match="unknown L2 adapter type 'nope'"):
        FdpblockL2Adapter(params(dev, type="nope"))
    with pytest.raises(ValueError, match="JSON object"):
        FdpblockL2Adapter([1, 2])
    with pytest.raises(ValueError, match="\"jvm\": unknown keys"):
        FdpblockL2Adapter(params(dev, jvm={"heap": "1g"}))


def test_a_device_that_cannot_be_opened_is_a_device_io_error(tmp_path: Path):
    with pytest.raises(DeviceIOError) as raised:
        FdpblockL2Adapter(params(str(tmp_path / "no" / "such" / "dir" / "dev.img"), capacity_bytes=DEVICE_BYTES))
    assert isinstance(raised.value, RuntimeError) and isinstance(raised.value, OSError)
    assert isinstance(raised.value.__cause__, jpype.JException)


def test_java_exceptions_map_to_the_python_ones_lmcache_names():
    import fdpblock_lmcache.jvm as jvm

    jvm.start()
    j = jpype.JClass

    def thrown(action):
        try:
            action()
        except jpype.JException as e:
            return e
        raise AssertionError("Java did not throw")

    cases = [
        (thrown(lambda: j("java.lang.Integer").parseInt("x")), ValueError, 'For input string: "x"'),
        (thrown(lambda: j("java.util.ArrayList")().get(5)), IndexError, "out of bounds"),
        (thrown(lambda: j("java.util.List").of().add(1)), NotImplementedError, "java.lang.UnsupportedOperationException"),
        (j("java.io.IOException")("eio"), DeviceIOError, "eio"),
        (j("java.lang.IllegalStateException")("closed"), RuntimeError, "closed"),
        (j("java.lang.ArithmeticException")("/ by zero"), RuntimeError, "java.lang.ArithmeticException: / by zero"),
    ]
    for java_error, python_type, message in cases:
        error = bridge.python_error(java_error)
        assert type(error) is python_type, java_error
        assert message in str(error)
    unchecked = j("java.io.UncheckedIOException")("disk", j("java.io.IOException")("eio"))
    assert type(bridge.python_error(unchecked)) is DeviceIOError


def test_after_close_submits_refuse_and_queries_answer_nothing(device):
    a = FdpblockL2Adapter(params(device))
    run_store(a, [key(1)], [chunk(1)])
    a.close()
    a.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        a.submit_store_task([key(1)], [chunk(1)])
    with pytest.raises(RuntimeError, match="closed"):
        a.submit_lookup_and_lock_task([key(1)], {})
    with pytest.raises(RuntimeError, match="closed"):
        a.submit_load_task([key(1)], [empty_chunk()])
    a.submit_unlock([key(1)])  # never fails
    assert a.pop_completed_store_tasks() == {}
    assert a.query_lookup_and_lock_result(0) is None and a.query_load_result(0) is None
    assert a.get_usage().total_bytes_used == SLOT_BYTES  # what it held at close
    assert a.report_status()["is_healthy"] is False


def test_a_reopened_store_recovers_its_keys(device):
    first = FdpblockL2Adapter(params(device))
    c = chunk(21)
    run_store(first, [key(21, cache_salt="s")], [c])
    first.close()

    second = FdpblockL2Adapter(params(device))
    try:
        listener = RecordingListener()
        second.register_listener(listener)
        assert listener.stored == [([key(21, cache_salt="s")], [SLOT_BYTES])]
        assert dict(second.get_usage().bytes_by_cache_salt) == {"s": SLOT_BYTES}
        out = empty_chunk()
        assert run_load(second, [key(21, cache_salt="s")], [out]).get_indices_list() == [0]
        assert out.array.tobytes() == c.array.tobytes()
    finally:
        second.close()


def test_status_is_plain_python_values(adapter):
    run_store(adapter, [key(1)], [chunk(1)])
    status = adapter.report_status()
    assert status["is_healthy"] is True
    assert json.loads(json.dumps(status)) == status  # dicts, lists, numbers, booleans, strings, None only
    assert status_of(adapter, "keys") == 1 and status_of(adapter, "slot_bytes") == SLOT_BYTES


def test_backend_identity(adapter):
    adapter.set_backend_identity("fdpblock", shared=True)
    assert (adapter._backend_name, adapter._backend_shared) == ("fdpblock", True)
    with pytest.raises(ValueError, match="non-empty"):
        adapter.set_backend_identity("")


def test_buffers_are_held_until_their_result_is_handed_out(adapter):
    src = chunk(31)
    alive = weakref.ref(src)
    task = adapter.submit_store_task([key(31)], [src])
    del src
    gc.collect()
    assert alive() is not None  # the adapter holds it while Java may still read it
    done: dict = {}
    drain_until(adapter.get_store_event_fd(), lambda: done.update(adapter.pop_completed_store_tasks()) or done.get(task))
    gc.collect()
    assert alive() is None

    dst = empty_chunk()
    alive = weakref.ref(dst)
    task = adapter.submit_load_task([key(31)], [dst])
    del dst
    gc.collect()
    assert alive() is not None
    drain_until(adapter.get_load_event_fd(), lambda: adapter.query_load_result(task))
    gc.collect()
    assert alive() is None


def test_l1_arena_is_registered_for_fixed_buffers_with_io_uring(tmp_path: Path):
    import fdpblock_lmcache.jvm as jvm

    jvm.start()
    if not bool(jpype.JClass("io.fdpblock.uring.Uring").isAvailable()):
        pytest.skip("io_uring is not available here: " + str(jpype.JClass("io.fdpblock.uring.Uring").unavailabilityCause()))
    arena = np.zeros(3 * PAYLOAD_BYTES, dtype=np.uint8)
    desc = L1MemoryDesc(ptr=arena.ctypes.data, size=arena.nbytes, align_bytes=4096)
    a = FdpblockL2Adapter(params(make_device(tmp_path / "dev.img"), io_engine="io_uring"), l1_memory_desc=desc)
    try:
        assert a._l1_region is not None
        start = -arena.ctypes.data % 4096  # block-aligned buffers take the fixed path; others a bounce buffer
        src, dst = arena[start:start + PAYLOAD_BYTES], arena[start + PAYLOAD_BYTES:start + 2 * PAYLOAD_BYTES]
        src[:] = np.arange(PAYLOAD_BYTES, dtype=np.uint32).astype(np.uint8)
        assert run_store(a, [key(1)], [src]).is_successful()
        assert run_load(a, [key(1)], [dst]).get_indices_list() == [0]
        assert dst.tobytes() == src.tobytes()
        assert int(a._java.core().device().fixedBufferOps()) >= 2
    finally:
        a.close()


def test_two_controller_threads_at_once_with_a_listener(adapter):
    """A store controller and a prefetch controller, each on its own thread and eventfd, while Java's
    threads call a Python listener: every result arrives, nothing deadlocks."""
    listener = RecordingListener()
    adapter.register_listener(listener)
    chunks = {n: chunk(n) for n in range(40)}
    errors: list[BaseException] = []

    def store_controller() -> None:
        try:
            for n in range(0, 40, 4):
                keys = [key(n + i) for i in range(4)]
                assert run_store(adapter, keys, [chunks[n + i] for i in range(4)]).is_successful()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    def prefetch_controller() -> None:
        try:
            for _ in range(30):
                keys = [key(n) for n in range(40)]
                hits = run_lookup(adapter, keys).get_indices_list()
                if not hits:
                    continue
                buffers = [empty_chunk() for _ in hits]
                loaded = run_load(adapter, [keys[i] for i in hits], buffers).get_indices_list()
                for j in loaded:
                    assert buffers[j].array.tobytes() == chunks[hits[j]].array.tobytes()
                adapter.submit_unlock(keys)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=store_controller), threading.Thread(target=prefetch_controller)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(k.chunk_hash for keys, _ in listener.stored for k in keys) == sorted(key(n).chunk_hash for n in range(40))
    assert status_of(adapter, "locked_keys") == 0
