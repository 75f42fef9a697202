"""The stand-in's listener, store result and L1 description."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional


class L2AdapterListener(ABC):
    """Hears what an L2 adapter holds: keys newly stored (with their sizes), loaded, really deleted."""

    @abstractmethod
    def on_l2_keys_stored(self, keys, sizes): ...

    @abstractmethod
    def on_l2_keys_accessed(self, keys): ...

    @abstractmethod
    def on_l2_keys_deleted(self, keys): ...


class L2StoreResult(int):
    """A finished store task: its bytes when it succeeded, -1 when it failed."""

    def __new__(cls, success: bool, bytes_transferred: int) -> "L2StoreResult":
        if bytes_transferred < 0:
            raise ValueError(f"bytes_transferred {bytes_transferred} must be >= 0")
        return super().__new__(cls, bytes_transferred if success else -1)

    def is_successful(self) -> bool:
        return int(self) >= 0

    def bytes_transferred(self) -> int:
        return max(int(self), 0)


@dataclass(frozen=True)
class L1MemoryDesc:
    ptr: int
    size: int
    align_bytes: int
    stable_registration_size: Optional[int] = None
