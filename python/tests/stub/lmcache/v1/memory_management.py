"""The stand-in's memory objects: metadata, and a memory object over a real numpy or ctypes buffer,
as an L1 allocator hands them to an L2 adapter (the caller owns the buffer; the adapter reads it for a
store and fills it for a load)."""

from __future__ import annotations

import ctypes
import enum
from dataclasses import dataclass, field
from typing import Any, Optional


class MemoryFormat(enum.Enum):
    UNDEFINED = 0
    KV_2LTD = 1
    KV_T2D = 2
    BINARY = 3


@dataclass
class MemoryObjMetadata:
    shape: tuple[int, ...]
    dtype: Optional[str]
    address: int
    phy_size: int
    ref_count: int = 1
    fmt: MemoryFormat = MemoryFormat.UNDEFINED
    cached_positions: Optional[list[int]] = None


class MemoryObj:
    """What an adapter may use of a memory object: its address, logical size and metadata."""

    def __init__(self, metadata: MemoryObjMetadata) -> None:
        self.meta = metadata

    @property
    def metadata(self) -> MemoryObjMetadata:
        return self.meta

    @property
    def data_ptr(self) -> int:
        raise NotImplementedError

    def get_size(self) -> int:
        raise NotImplementedError

    def get_physical_size(self) -> int:
        return self.meta.phy_size


class ArrayMemoryObj(MemoryObj):
    """A memory object over a numpy array (its memory, never a copy)."""

    def __init__(self, array: Any, fmt: MemoryFormat = MemoryFormat.KV_2LTD,
                 cached_positions: Optional[list[int]] = None) -> None:
        super().__init__(MemoryObjMetadata(shape=tuple(array.shape), dtype=str(array.dtype),
                                           address=array.ctypes.data, phy_size=array.nbytes, fmt=fmt,
                                           cached_positions=cached_positions))
        self.array = array

    @property
    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def get_size(self) -> int:
        return self.array.nbytes

    @property
    def byte_array(self) -> bytes:
        return self.array.tobytes()


class CtypesMemoryObj(MemoryObj):
    """A memory object over a ctypes byte buffer."""

    def __init__(self, size: int) -> None:
        self.buffer = (ctypes.c_ubyte * size)()
        super().__init__(MemoryObjMetadata(shape=(size,), dtype="uint8", address=ctypes.addressof(self.buffer),
                                           phy_size=size, fmt=MemoryFormat.BINARY))

    @property
    def data_ptr(self) -> int:
        return ctypes.addressof(self.buffer)

    def get_size(self) -> int:
        return ctypes.sizeof(self.buffer)

    @property
    def byte_array(self) -> bytes:
        return bytes(self.buffer)
