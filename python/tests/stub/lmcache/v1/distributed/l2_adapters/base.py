"""The stand-in's L2 adapter interface: the abstract methods every adapter implements, and the parts
the base class gives (listeners, usage accounting, identity, defaults for delete and listing)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

L2TaskId = int


@dataclass(frozen=True)
class AdapterUsage:
    """Bytes held in total and by cache salt, and the capacity (0: unknown, no global eviction)."""

    total_bytes_used: int
    total_capacity_bytes: int
    bytes_by_cache_salt: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def usage_fraction(self) -> float:
        if self.total_capacity_bytes <= 0:
            return -1.0
        return self.total_bytes_used / self.total_capacity_bytes


class L2AdapterInterface(ABC):
    """Non-blocking L2 I/O: submit a task, learn of its end on one of three distinct eventfds, then
    query its result once. Stores succeed or fail as a whole; lookups and loads answer per key with a
    bitmap. Called from two controller threads at once, so implementations are thread-safe."""

    def __init__(self, max_capacity_bytes: int = 0) -> None:
        self._listeners: list = []
        self._max_capacity_bytes = max_capacity_bytes
        self._usage_lock = threading.Lock()
        self._total_bytes_used = 0
        self._bytes_by_cache_salt: dict[str, int] = {}
        self._backend_name = ""
        self._backend_shared = False

    @abstractmethod
    def get_store_event_fd(self) -> int: ...

    @abstractmethod
    def get_lookup_and_lock_event_fd(self) -> int: ...

    @abstractmethod
    def get_load_event_fd(self) -> int: ...

    @abstractmethod
    def submit_store_task(self, keys, objects) -> L2TaskId: ...

    @abstractmethod
    def pop_completed_store_tasks(self) -> dict: ...

    @abstractmethod
    def submit_lookup_and_lock_task(self, keys, group_layout_descs) -> L2TaskId: ...

    @abstractmethod
    def query_lookup_and_lock_result(self, task_id: L2TaskId): ...

    @abstractmethod
    def submit_unlock(self, keys) -> None: ...

    @abstractmethod
    def submit_load_task(self, keys, objects) -> L2TaskId: ...

    @abstractmethod
    def query_load_result(self, task_id: L2TaskId): ...

    @abstractmethod
    def close(self) -> None: ...

    def register_listener(self, listener) -> None:
        self._listeners.append(listener)

    def set_backend_identity(self, name: str, shared: bool = False) -> None:
        if not name:
            raise ValueError("backend name must be non-empty")
        self._backend_name = name
        self._backend_shared = shared

    @property
    def supports_global_eviction(self) -> bool:
        return self._max_capacity_bytes > 0

    def get_usage(self) -> AdapterUsage:
        with self._usage_lock:
            return AdapterUsage(self._total_bytes_used, self._max_capacity_bytes,
                                MappingProxyType(dict(self._bytes_by_cache_salt)))

    def delete(self, keys) -> None:
        return None

    def list_l2_keys(self, model_name=None, page_size: int = 500, cursor=None):
        raise NotImplementedError(f"{type(self).__name__} does not list its keys")

    def report_status(self) -> dict:
        return {"is_healthy": True}
