"""The events of a live run, kept as their JSON lines.

A long run holds many events; as pydantic objects they take about 1.3 KB
each (130 MB for 100,000), as JSON lines about 300 bytes. `EventLog` is the
engine's append-only list of events: it keeps the most recently used events
as objects and the others as their JSON lines (the line the engine wrote,
or one written when an event leaves the cache) parsed again when read. A run shorter than the cache
never pays for either. Reads and appends may come from different threads
(the cockpit reads what the engine's worker appends).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from engine.core.events import EVENT_ADAPTER, Event


class EventLog(Sequence[Event]):
    def __init__(self, events: Iterable[Event] = (), *, cache_size: int = 4096) -> None:
        self._lines: list[bytes | None] = []  # None: only in the cache so far
        self._cache: OrderedDict[int, Event] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        for event in events:
            self.append(event)

    def append(self, event: Event, line: bytes | None = None) -> None:
        """Add an event; `line`, its JSON line when the caller already wrote it, is kept
        so the event is never serialised a second time."""
        with self._lock:
            self._lines.append(line)
            self._remember(len(self._lines) - 1, event)

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.append(event)

    def raw(self, index: int) -> bytes:
        """The event's JSON line (without a newline)."""
        with self._lock:
            line = self._lines[index]
            if line is None:
                line = self._lines[index] = self._cache[index].model_dump_json().encode()
            return line

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(*index.indices(len(self._lines)))]
        if index < 0:
            index += len(self._lines)
        if not 0 <= index < len(self._lines):
            raise IndexError("event index out of range")
        return self._get(index)

    def __iter__(self) -> Iterator[Event]:
        for i in range(len(self._lines)):
            yield self._get(i, keep=False)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (EventLog, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EventLog({len(self)} events)"

    def _get(self, index: int, *, keep: bool = True) -> Event:
        with self._lock:
            event = self._cache.get(index)
            if event is not None:
                self._cache.move_to_end(index)
                return event
            line = self._lines[index]
        assert line is not None  # an event out of the cache has its line
        event = EVENT_ADAPTER.validate_json(line)
        if keep:
            with self._lock:
                self._remember(index, event)
        return event

    def _remember(self, index: int, event: Event) -> None:
        self._cache[index] = event
        self._cache.move_to_end(index)
        while len(self._cache) > self._cache_size:
            old_index, old = self._cache.popitem(last=False)
            if self._lines[old_index] is None:
                self._lines[old_index] = old.model_dump_json().encode()
