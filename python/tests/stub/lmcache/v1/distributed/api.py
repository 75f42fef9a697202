"""The stand-in's keys and layout descriptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class ObjectKey:
    """A KV-cache chunk's key: content hash, model, kv rank (packed parallelism), object group and a
    per-tenant cache salt. Values: equal when every field is."""

    chunk_hash: bytes
    model_name: str
    kv_rank: int
    object_group_id: int = 0
    cache_salt: str = ""

    def __post_init__(self) -> None:
        if "@" in self.model_name:
            raise ValueError(f"model_name {self.model_name!r} must not contain '@'")
        if self.object_group_id < 0:
            raise ValueError(f"object_group_id {self.object_group_id} must be >= 0")
        if set(self.cache_salt) & set("@/\\\0"):
            raise ValueError(f"cache_salt {self.cache_salt!r} has a forbidden character (@ / \\ NUL)")
        if len(self.cache_salt) > 128:
            raise ValueError(f"cache_salt of {len(self.cache_salt)} chars exceeds 128")

    @staticmethod
    def IntHash2Bytes(value: int) -> bytes:  # noqa: N802 - the name callers use
        return value.to_bytes(4, "big")

    @staticmethod
    def ComputeKVRank(world_size: int, global_rank: int, local_world_size: int, local_rank: int) -> int:  # noqa: N802
        return (world_size << 24) | (global_rank << 16) | (local_world_size << 8) | local_rank


@dataclass(frozen=True)
class MemoryLayoutDesc:
    shapes: list[Any] = field(default_factory=list)
    dtypes: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class KeyEntry:
    key: Any
    size_bytes: int


@dataclass(frozen=True)
class KeyListPage:
    entries: tuple[KeyEntry, ...]
    next_page_token: Optional[str]
