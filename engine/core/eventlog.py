"""The events of a live run, kept as their JSON lines; events read by index, and their cache.

A long run holds many events; as pydantic objects they take about 1.3 KB
each (130 MB for 100,000), as JSON lines about 300 bytes. `EventLog` is the
engine's append-only list of events: it keeps the most recently used events
as objects and the others as their JSON lines (the line the engine wrote,
or one written when an event leaves the cache) parsed again when read. A run shorter than the cache
never pays for either. Reads and appends may come from different threads
(the cockpit reads what the engine's worker appends).

`IndexedEvents` (a sequence read through `_get`) and `EventCache` are shared
with the stored run's sources (`engine.stored.source.FileEvents`): the core
keeps them so that the engine imports nothing of the stored layer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar, overload

from engine.core.events import EVENT_ADAPTER, Event
from engine.core.sink import event_line


class EventCache:
    """Recently read events by index, least recently used first out (thread-safe)."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._events: OrderedDict[int, Event] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, index: int) -> Event | None:
        with self.lock:
            event = self._events.get(index)
            if event is not None:
                self._events.move_to_end(index)
            return event

    def put(self, index: int, event: Event) -> list[tuple[int, Event]]:
        """Keep `event`; the (index, event) pairs pushed out to make room."""
        with self.lock:
            return self.put_locked(index, event)

    def put_locked(self, index: int, event: Event) -> list[tuple[int, Event]]:
        """`put` for a caller that holds `lock`."""
        self._events[index] = event
        self._events.move_to_end(index)
        out = []
        while len(self._events) > self.size:
            out.append(self._events.popitem(last=False))
        return out

    def add_locked(self, index: int, event: Event) -> tuple[int, Event] | None:
        """`put_locked` for an index newer than any cached (a live run's next event): the
        one (index, event) pushed out to make room, if any."""
        events = self._events
        events[index] = event
        return events.popitem(last=False) if len(events) > self.size else None

    def peek_locked(self, index: int) -> Event | None:
        """The cached event without touching its place (caller holds `lock`)."""
        return self._events.get(index)


T = TypeVar("T")


class Indexed(Sequence[T]):
    """A sequence read by index through `_get`: slices (as lists) and negative indexes done once."""

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._get(index)

    def _get(self, index: int) -> T:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        """Equal to a list, a tuple or another such sequence of equal items, in order."""
        if isinstance(other, (Indexed, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class IndexedEvents(Indexed[Event]):
    """A sequence of events read by index through `_get`."""


class EventLog(IndexedEvents):
    """The live run's events (an `engine.stored.source.LinedSource`: each event's line kept)."""

    def __init__(self, events: Iterable[Event] = (), *, cache_size: int = 4096, lines: Iterable[bytes] | None = None) -> None:
        """`lines`: the events' JSON lines, when the caller has them (a fork wrote them, a
        resume read them): kept as they are (a sequence is not copied: a resume's reads its
        lines from the file's bytes), and only the last `cache_size` events cached."""
        self._saved: Sequence[bytes] = ()
        """The lines the log started with; the events appended since are in `_lines`."""
        self._base = 0
        self._lines: list[bytes | None] = []  # None: only in the cache so far
        self._cache = EventCache(cache_size)
        if lines is None:
            for event in events:
                self.append(event)
            return
        events = events if isinstance(events, Sequence) else list(events)
        self._saved = lines if isinstance(lines, Sequence) else list(lines)
        self._base = len(self._saved)
        if self._base != len(events):
            raise ValueError(f"{len(events)} events and {self._base} lines")
        first = max(0, len(events) - cache_size)
        with self._cache.lock:
            for index in range(first, len(events)):
                self._cache.add_locked(index, events[index])

    def append(self, event: Event, line: bytes | None = None) -> None:
        """Add an event; `line`, its JSON line when the caller already wrote it, is kept
        so the event is never serialised a second time."""
        cache, lines, base = self._cache, self._lines, self._base
        with cache.lock:
            lines.append(line)
            out = cache.add_locked(base + len(lines) - 1, event)
            if out is not None and out[0] >= base and lines[out[0] - base] is None:
                lines[out[0] - base] = event_line(out[1])

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.append(event)

    def raw(self, index: int) -> bytes:
        """The event's JSON line (without a newline)."""
        if 0 <= index < self._base:
            return self._saved[index]
        with self._cache.lock:
            line = self._lines[index - self._base]
            if line is None:
                cached = self._cache.peek_locked(index)
                assert cached is not None  # a line not written yet is in the cache
                line = self._lines[index - self._base] = event_line(cached)
            return line

    def line_number(self, index: int) -> int | None:
        return None

    def __len__(self) -> int:
        return self._base + len(self._lines)

    def __iter__(self) -> Iterator[Event]:
        for i in range(len(self)):
            yield self._get(i, keep=False)

    def read(self, index: int) -> Event:
        """Event `index` (0 or more), parsed from its line when not cached and not cached
        then (a pass over old events, such as a history's old steps read back, leaves the
        cache to the recent ones)."""
        return self._get(index, keep=False)

    def __repr__(self) -> str:
        return f"EventLog({len(self)} events)"

    def _get(self, index: int, *, keep: bool = True) -> Event:
        event = self._cache.get(index)
        if event is not None:
            return event
        line = self._saved[index] if index < self._base else self._lines[index - self._base]
        assert line is not None  # an event out of the cache has its line
        event = EVENT_ADAPTER.validate_json(line)
        if keep:
            with self._cache.lock:
                self._keep(index, event)
        return event

    def _keep(self, index: int, event: Event) -> None:
        """Cache `event`; an event pushed out keeps its JSON line (caller holds the lock)."""
        base = self._base
        for old_index, old in self._cache.put_locked(index, event):
            if old_index >= base and self._lines[old_index - base] is None:
                self._lines[old_index - base] = event_line(old)
