"""A transcript's bytes, compressed once its lines are indexed.

A replay reads the whole file once (to index its lines and fold its run),
then reads events again only around the position shown. Holding the file's
bytes for that costs their size (35 MB for 100,000 events). `Packed` keeps
them instead as zlib blocks of 256 KiB (JSON lines shrink 5-15x) and serves
`data[a:b]` by inflating the blocks that hold the range, keeping the last
few inflated. The bytes stay in memory, so the file may change or go away
meanwhile without any effect on the replay.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict

BLOCK = 1 << 18
KEEP_BLOCKS = 8
"""Blocks kept inflated (a viewer reads near one position while the index pass reads ahead)."""
MIN_SIZE = 4 << 20
"""Smaller files are kept as they are: they cost little."""


class Packed:
    """`data`, compressed in blocks and read by slices."""

    def __init__(self, data: bytes) -> None:
        view = memoryview(data)
        self._size = len(data)
        self._packed = [zlib.compress(view[i : i + BLOCK], 1) for i in range(0, len(data), BLOCK)]
        self._block_size = BLOCK
        self._inflated: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._last: tuple[int, int, bytes] = (0, 0, b"")
        """(start, end, bytes) of the block read last: most reads fall inside it (read without the lock)."""

    @classmethod
    def of(cls, data: bytes | Packed) -> bytes | Packed:
        """`data` packed when it is large; as it is when small or packed already."""
        if isinstance(data, Packed) or len(data) < MIN_SIZE:
            return data
        return cls(data)

    def __len__(self) -> int:
        return self._size

    @property
    def packed_size(self) -> int:
        return sum(map(len, self._packed))

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice):
            raise TypeError("Packed is read by slices")
        low, high, last = self._last  # one tuple, replaced whole: a consistent view without the lock
        start, stop = key.start, key.stop
        if type(start) is int and type(stop) is int and key.step is None and low <= start <= stop <= high:  # a line's, the usual read
            return last[start - low : stop - low]
        start, stop, _ = key.indices(self._size)
        if stop <= start:
            return b""
        size = self._block_size
        first, last = start // size, (stop - 1) // size
        with self._lock:
            if first == last:
                offset = first * size
                return self._block(first)[start - offset : stop - offset]
            parts = []
            for k in range(first, last + 1):
                offset = k * size
                parts.append(self._block(k)[max(start, offset) - offset : min(stop, offset + size) - offset])
            return b"".join(parts)

    def _block(self, k: int) -> bytes:
        """Block `k` inflated (caller holds the lock)."""
        block = self._inflated.get(k)
        if block is None:
            block = self._inflated[k] = zlib.decompress(self._packed[k])
            while len(self._inflated) > KEEP_BLOCKS:
                self._inflated.popitem(last=False)
        else:
            self._inflated.move_to_end(k)
        offset = k * self._block_size
        self._last = (offset, offset + len(block), block)
        return block
