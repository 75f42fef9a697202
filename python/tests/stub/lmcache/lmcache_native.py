"""The stand-in's Bitmap: one bit per key of a request, bit i for keys[i]."""

from __future__ import annotations

from typing import Any, Sequence


class Bitmap:
    """A fixed-size bit set; indices outside ``[0, size)`` are ignored by set/clear and read as 0."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"bitmap size {size} must be >= 0")
        self._size = size
        self._bits = 0

    def size(self) -> int:
        return self._size

    def set(self, index: int) -> None:
        if 0 <= index < self._size:
            self._bits |= 1 << index

    def clear(self, index: int) -> None:
        if 0 <= index < self._size:
            self._bits &= ~(1 << index)

    def test(self, index: int) -> bool:
        return 0 <= index < self._size and (self._bits >> index) & 1 == 1

    def popcount(self) -> int:
        return bin(self._bits).count("1")

    def get_indices_list(self) -> list[int]:
        return [i for i in range(self._size) if (self._bits >> i) & 1]

    def gather(self, items: Sequence[Any]) -> list[Any]:
        return [items[i] for i in self.get_indices_list() if i < len(items)]

    def __repr__(self) -> str:
        return "".join("1" if self.test(i) else "0" for i in range(self._size))
