"""Minima and maxima of ranges of a growing series, without walking every value.

The context chart cuts the input tokens of every step into one bucket per
cell and draws each bucket's minimum and maximum (`chart_points`). At 50,000
steps that walked 100,000 values per frame (3 ms of a viewer's seek). A
`SeriesExtremes` keeps the minimum and maximum of each block of `BLOCK`
values of the longest series it was shown, so a range costs its two partial
blocks and one value per whole block in between.

The series is append-only within a run and every state of a replayed run
holds a prefix of the same values, so a new series usually continues (or
is a prefix of) the values known; any other series is taken from scratch.
"""

from __future__ import annotations

from typing import Sequence

BLOCK = 64


class SeriesExtremes:
    """Block minima and maxima of the values seen; `follow` a series, then ask `extremes`."""

    def __init__(self) -> None:
        self.values: list[int] = []
        self.minima: list[int] = []
        self.maxima: list[int] = []
        self.rebuilds = 0
        """How many times the blocks were computed from scratch (a series that continued none known)."""

    def follow(self, series: Sequence[int]) -> None:
        """Make the blocks cover `series`: extend them when it continues the values
        known, keep them when it is a prefix of those, else start over."""
        n, known = len(series), len(self.values)
        if n <= known:
            if self.values[:n] == _as_list(series):
                return
        elif _as_list(series[:known]) == self.values:
            self._add(series[known:])
            return
        self.values, self.minima, self.maxima = [], [], []
        self.rebuilds += 1
        self._add(series)

    def _add(self, more: Sequence[int]) -> None:
        values = self.values
        values.extend(more)
        for start in range(len(self.minima) * BLOCK, len(values) - BLOCK + 1, BLOCK):
            block = values[start : start + BLOCK]
            self.minima.append(min(block))
            self.maxima.append(max(block))

    def extremes(self, start: int, stop: int) -> tuple[int, int]:
        """(minimum, maximum) of `values[start:stop]` (a non-empty range of the series followed)."""
        values = self.values
        first = -(-start // BLOCK)  # the first whole block in the range
        last = min(stop // BLOCK, len(self.minima))  # one past the last whole block
        if first >= last:
            part = values[start:stop]
            return min(part), max(part)
        head, tail = values[start : first * BLOCK], values[last * BLOCK : stop]
        low = min(self.minima[first:last])
        high = max(self.maxima[first:last])
        if head:
            low, high = min(low, min(head)), max(high, max(head))
        if tail:
            low, high = min(low, min(tail)), max(high, max(tail))
        return low, high


def _as_list(values: Sequence[int]) -> list[int]:
    return values if isinstance(values, list) else list(values)
