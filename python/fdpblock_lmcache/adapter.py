"""``FdpblockL2Adapter``: LMCache's ``L2AdapterInterface`` over fdpblock's Java adapter, in process.

LMCache's MP server loads it as a plugin adapter::

    --l2-adapter '{"type": "plugin", "module_path": "fdpblock_lmcache", "class_name": "FdpblockL2Adapter",
                   "adapter_params": {"device_path": "/dev/nvme0n1", "slot_bytes": 69632, "io_engine": "io_uring"}}'

``adapter_params`` are the params of LMCache's ``raw_block`` adapter as fdpblock reads them
(docs/configuration.md), plus an optional ``"type"`` (another fdpblock adapter type; default
``"raw_block"``) and an optional ``"jvm"`` object for the JVM (``java_home``, ``class_path``,
``options``; see :mod:`fdpblock_lmcache.jvm`).

Every call goes straight to the Java adapter on the caller's thread; the three eventfds are the Java
adapter's own, so LMCache's controllers poll them directly; buffers are passed as segments over their
own memory (zero copy). Listener events come from Java's threads.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import jpype

from lmcache.v1.distributed.api import ObjectKey
from lmcache.v1.distributed.internal_api import L2StoreResult
from lmcache.v1.distributed.l2_adapters.base import AdapterUsage, L2AdapterInterface, L2TaskId

try:  # where LMCache keeps Bitmap now; older releases had it in native_storage_ops
    from lmcache.lmcache_native import Bitmap
except ImportError:  # pragma: no cover - depends on the LMCache release
    from lmcache.native_storage_ops import Bitmap

from fdpblock_lmcache import bridge, jvm
from fdpblock_lmcache.bridge import call

logger = logging.getLogger(__name__)

_open_adapters: "weakref.WeakSet[FdpblockL2Adapter]" = weakref.WeakSet()


def _close_open_adapters() -> None:
    """At exit, before JPype stops the JVM (atexit runs this first): a store left open still writes
    its final checkpoint."""
    for adapter in list(_open_adapters):
        try:
            adapter.close()
        except Exception:  # noqa: BLE001 - at exit every adapter gets its chance
            logger.exception("fdpblock: closing %r at exit failed", adapter)


atexit.register(_close_open_adapters)


@jpype.JImplements("io.fdpblock.l2.L2AdapterListener", deferred=True)
class _ListenerRelay:
    """Hears the Java adapter's events and tells one LMCache listener, keys converted."""

    def __init__(self, listener: Any) -> None:
        self._listener = listener

    def _relay(self, what: str, hook: Any, *args: Any) -> None:
        try:
            hook(*args)
        except Exception:
            # Java counts it (listener_failures) and carries on, as LMCache's adapters do.
            logger.exception("fdpblock: L2 listener %r failed on %s", self._listener, what)
            raise

    @jpype.JOverride
    def onKeysStored(self, keys: Any, sizes: Any) -> None:  # noqa: N802 - Java's name
        self._relay("keys stored", self._listener.on_l2_keys_stored,
                    bridge.python_keys(ObjectKey, keys), [int(s) for s in sizes])

    @jpype.JOverride
    def onKeysAccessed(self, keys: Any) -> None:  # noqa: N802
        self._relay("keys accessed", self._listener.on_l2_keys_accessed, bridge.python_keys(ObjectKey, keys))

    @jpype.JOverride
    def onKeysDeleted(self, keys: Any) -> None:  # noqa: N802
        self._relay("keys deleted", self._listener.on_l2_keys_deleted, bridge.python_keys(ObjectKey, keys))


class _HeldBuffers:
    """Keeps the Python buffers of a task alive until its result was handed out, so that Java never
    touches memory Python freed, even when the caller let go of its objects early.

    A result can be handed out before the submitting thread recorded its buffers (Java completes
    fast): the tiny lock makes the two orders meet, and no Java call is made under it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, Any] = {}
        self._done_early: set[int] = set()

    def hold(self, task_id: int, held: Any) -> None:
        with self._lock:
            if task_id in self._done_early:
                self._done_early.discard(task_id)
            else:
                self._held[task_id] = held

    def release(self, task_id: int) -> None:
        with self._lock:
            if self._held.pop(task_id, None) is None:
                self._done_early.add(task_id)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._done_early.clear()


def _params_of(config: Any) -> dict[str, Any]:
    """The adapter params as a dict: a mapping (what LMCache's plugin loader passes), or a JSON text."""
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as e:
            raise ValueError(f"adapter params are not valid JSON: {e}") from e
    if config is None:
        raise ValueError("adapter params are required: at least device_path and slot_bytes (docs/configuration.md)")
    if not isinstance(config, Mapping):
        raise ValueError(f"adapter params must be a JSON object (a dict), got {type(config).__name__}")
    return dict(config)


class FdpblockL2Adapter(L2AdapterInterface):
    """LMCache's L2 adapter, stored through fdpblock (a Java adapter in this process, via JPype).

    Args:
        config: the adapter params (a dict, or its JSON text): fdpblock's raw_block params, with an
            optional ``"type"`` (default ``"raw_block"``) and ``"jvm"`` object.
        l1_memory_desc: LMCache's L1 arena, when the server gives it: registered with the device
            (io_uring fixed buffers) so that stores and loads in it take the fast path. A refusal is
            logged; the I/O still works.

    Raises:
        ValueError: for bad params (fdpblock's message names the value, its limit and the fix).
        DeviceIOError: when the device cannot be opened or recovered (a RuntimeError and an OSError).
        JvmUnavailableError: when no JVM can be started (no JDK >= 25, no jar, no JPype).
    """

    def __init__(self, config: Any = None, l1_memory_desc: Any = None, **kwargs: Any) -> None:
        del kwargs  # framework arguments of later LMCache releases: accepted, as the plugin contract asks
        params = _params_of(config)
        jvm.start_from_params(params.pop("jvm", None))
        params.setdefault("type", "raw_block")
        try:
            text = json.dumps(params)
        except (TypeError, ValueError) as e:
            raise ValueError(f"adapter params must be JSON values: {e}") from e
        j = bridge.java()
        self._java = call(j.L2Adapters.create, text)
        try:
            self._store_fd = int(self._java.storeEventFd())
            self._lookup_fd = int(self._java.lookupAndLockEventFd())
            self._load_fd = int(self._java.loadEventFd())
            self._capacity = int(call(self._java.usage).totalCapacityBytes())
            try:
                super().__init__(max_capacity_bytes=self._capacity)
            except TypeError:  # an interface without usage accounting in its constructor
                super().__init__()
            self._description = str(self._java.toString())
            self._closed = False
            self._close_lock = threading.Lock()
            self._final_usage: AdapterUsage | None = None
            self._stores = _HeldBuffers()
            self._loads = _HeldBuffers()
            self._relays: list[Any] = []
            self._l1_region: Any = None
            self._backend_name = ""
            self._backend_shared = False
            if l1_memory_desc is not None:
                self._register_l1(l1_memory_desc)
        except BaseException:
            self._java.close()
            raise
        _open_adapters.add(self)

    def _register_l1(self, desc: Any) -> None:
        size = getattr(desc, "stable_registration_size", None) or int(desc.size)
        region = bridge.segment(int(desc.ptr), int(size))
        try:
            if bool(call(self._java.registerMemory, region)):
                self._l1_region = region
        except (bridge.DeviceIOError, RuntimeError) as e:
            logger.warning("fdpblock: registering LMCache's L1 arena (%d bytes at %#x) with %s failed: %s; "
                           "its I/O takes the non-fixed path", size, int(desc.ptr), self._description, e)

    def __repr__(self) -> str:
        return f"FdpblockL2Adapter({self._description})"

    # ---- event fds: the Java adapter's own, pollable here; -1 after close, as LMCache's adapters ----

    def get_store_event_fd(self) -> int:
        return -1 if self._closed else self._store_fd

    def get_lookup_and_lock_event_fd(self) -> int:
        return -1 if self._closed else self._lookup_fd

    def get_load_event_fd(self) -> int:
        return -1 if self._closed else self._load_fd

    # ---- store ----

    def submit_store_task(self, keys: list[ObjectKey], objects: list[Any]) -> L2TaskId:
        """Stores ``objects[i]`` under ``keys[i]``, reading each buffer in place.

        Raises:
            ValueError: for empty or unequal lists, a bad key or a buffer without memory.
            RuntimeError: after close.
        """
        return self._submit_with_buffers(self._java.submitStoreTask, keys, objects, False, self._stores)

    def pop_completed_store_tasks(self) -> dict[L2TaskId, L2StoreResult]:
        if self._closed:
            return {}
        out: dict[L2TaskId, L2StoreResult] = {}
        for entry in call(self._java.popCompletedStoreTasks).entrySet():
            task_id = int(entry.getKey())
            result = entry.getValue()
            out[task_id] = L2StoreResult(bool(result.success()), int(result.bytesWritten()))
            self._stores.release(task_id)
        return out

    # ---- lookup and lock ----

    def submit_lookup_and_lock_task(self, keys: list[ObjectKey], *layout: Any, **layout_kw: Any) -> L2TaskId:
        """Finds which keys exist and locks each hit until :meth:`submit_unlock`.

        The layout argument LMCache passes (one ``MemoryLayoutDesc``, or one per object group) is an
        advisory hint this adapter does not need; both forms are accepted.

        Raises:
            ValueError: for an empty list or a bad key.
            RuntimeError: after close.
        """
        del layout, layout_kw
        self._check_open()
        _check_keys(keys)
        return int(call(self._java.submitLookupAndLockTask, bridge.java_keys(keys)))

    def query_lookup_and_lock_result(self, task_id: L2TaskId) -> Bitmap | None:
        if self._closed:
            return None
        result = call(self._java.queryLookupAndLockResult, jpype.JLong(task_id))
        return None if result is None else bridge.python_bitmap(Bitmap, result)

    def submit_unlock(self, keys: list[ObjectKey]) -> None:
        """Unlocks each key once; unknown keys and keys not locked are left as they are. Never fails
        for them (LMCache never retries an unlock); after close there is nothing left to unlock."""
        if self._closed or not keys:
            return
        call(self._java.submitUnlock, bridge.java_keys(keys))

    # ---- load ----

    def submit_load_task(self, keys: list[ObjectKey], objects: list[Any]) -> L2TaskId:
        """Loads each found key straight into its object's buffer (zero copy).

        Raises:
            ValueError: for empty or unequal lists, a bad key, a read-only buffer, or one smaller
                than what is stored under its key.
            RuntimeError: after close.
        """
        return self._submit_with_buffers(self._java.submitLoadTask, keys, objects, True, self._loads)

    def query_load_result(self, task_id: L2TaskId) -> Bitmap | None:
        if self._closed:
            return None
        result = call(self._java.queryLoadResult, jpype.JLong(task_id))
        if result is None:
            return None
        self._loads.release(int(task_id))
        return bridge.python_bitmap(Bitmap, result)

    # ---- eviction, usage, listeners, identity ----

    def delete(self, keys: list[ObjectKey]) -> None:
        """Removes the keys; a locked key is kept. Listeners hear only of keys really removed."""
        self._check_open()
        if keys:
            call(self._java.delete, bridge.java_keys(keys))

    @property
    def supports_global_eviction(self) -> bool:
        return self._capacity > 0

    def get_usage(self) -> AdapterUsage:
        """What the store holds: slots in use (a slot is charged whole), by cache salt; after close,
        what it held at close."""
        if self._closed:
            return self._final_usage or AdapterUsage(0, self._capacity)
        usage = call(self._java.usage)
        return AdapterUsage(
            total_bytes_used=int(usage.totalBytesUsed()),
            total_capacity_bytes=int(usage.totalCapacityBytes()),
            bytes_by_cache_salt=bridge.usage_mapping(usage.bytesByCacheSalt()),
        )

    def register_listener(self, listener: Any) -> None:
        """Registers ``listener`` (``on_l2_keys_stored``, ``on_l2_keys_accessed``,
        ``on_l2_keys_deleted``); the keys already held are replayed to it as stored, at once."""
        self._check_open()
        relay = _ListenerRelay(listener)
        self._relays.append(relay)  # Java holds it too; kept here for the adapter's life
        call(self._java.registerListener, relay)

    def set_backend_identity(self, name: str, shared: bool = False) -> None:
        """The name LMCache registered this adapter under, and whether the store is shared between
        servers; passed on to the Java adapter when it takes them.

        Raises:
            ValueError: for an empty name.
        """
        parent = getattr(super(), "set_backend_identity", None)
        if parent is not None:
            parent(name, shared)
        elif not name:
            raise ValueError("backend name must be non-empty")
        self._backend_name = name
        self._backend_shared = bool(shared)
        if hasattr(self._java, "setBackendIdentity"):
            call(self._java.setBackendIdentity, name, bool(shared))

    def report_status(self) -> dict:
        """The Java adapter's status (``is_healthy``, the store's state and counters) as plain values."""
        if self._closed:
            return {"is_healthy": False, "closed": True, "adapter": self._description}
        return bridge.python_value(call(self._java.reportStatus))

    # ---- close ----

    def close(self) -> None:
        """Waits for the work in flight, writes the final checkpoint, closes the eventfds. Idempotent.

        Raises:
            DeviceIOError: when the final checkpoint could not be written (changes since the last one
                are then not durable).
        """
        with self._close_lock:
            if self._closed:
                return
            try:
                self._final_usage = self.get_usage()
            except Exception:  # noqa: BLE001 - usage is a courtesy; closing must go on
                logger.exception("fdpblock: reading the usage of %s at close failed", self._description)
            self._closed = True
        _open_adapters.discard(self)
        try:
            if self._l1_region is not None:
                try:
                    call(self._java.unregisterMemory, self._l1_region)
                except (bridge.DeviceIOError, RuntimeError) as e:
                    logger.warning("fdpblock: unregistering LMCache's L1 arena from %s failed: %s",
                                   self._description, e)
            call(self._java.close)
        finally:
            self._stores.clear()  # Java waited for every task: no buffer is in use any more
            self._loads.clear()

    def _submit_with_buffers(self, submit: Any, keys: list[ObjectKey], objects: list[Any], writable: bool,
                             held: _HeldBuffers) -> L2TaskId:
        """A store or load task over the objects' own memory, the objects held until its result is out."""
        self._check_open()
        _check_lists(keys, objects)
        memory, pins = bridge.java_memory_objs(objects, writable)
        task_id = int(call(submit, bridge.java_keys(keys), memory))
        held.hold(task_id, (objects, pins))
        return task_id

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self._description} is closed")


def _check_keys(keys: Any) -> None:
    if not isinstance(keys, (list, tuple)) or not keys:
        raise ValueError(f"keys must be a non-empty list, got {keys!r}")


def _check_lists(keys: Any, objects: Any) -> None:
    _check_keys(keys)
    if not isinstance(objects, (list, tuple)) or len(objects) != len(keys):
        raise ValueError(f"keys ({len(keys)}) and objects "
                         f"({len(objects) if isinstance(objects, (list, tuple)) else type(objects).__name__}) "
                         "must be lists of equal length")
