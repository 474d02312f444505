"""Where a run's events are read from: one protocol, one cache.

Every reader of a run (the state fold, the replay timeline, the panes) reads
events by index from an `EventSource`: a plain list, the live run's
`EventLog`, a transcript file's `FileEvents`, or a `Timeline`. Sources that
keep their events as JSON lines (`LinedSource`) also give the line itself,
so a search can skip lines without parsing them, and where it stands in a
file. The ones that parse on demand keep recent events in one `EventCache`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol, overload, runtime_checkable

from engine.core.events import Event
from engine.stored.reader import LineIndex


@runtime_checkable
class EventSource(Protocol):
    """Events read by index."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Event: ...


@runtime_checkable
class LinedSource(EventSource, Protocol):
    """Events kept as their JSON lines."""

    def raw(self, index: int) -> bytes:
        """Event `index` as a JSON line (no newline)."""
        ...

    def line_number(self, index: int) -> int | None:
        """The file line of event `index`, when the events come from a file."""
        ...


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


class IndexedEvents(Sequence[Event]):
    """A sequence of events read by index through `_get`: slices and negative indexes done once."""

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("event index out of range")
        return self._get(index)

    def _get(self, index: int) -> Event:
        raise NotImplementedError


class FileEvents(IndexedEvents):
    """A transcript file's events, parsed on demand from its `LineIndex`.

    A line that is not a valid event raises TranscriptError naming FILE:LINE.
    """

    def __init__(self, index: LineIndex, cache: EventCache | None = None) -> None:
        self.index = index
        self.cache = cache if cache is not None else EventCache()

    def __len__(self) -> int:
        return len(self.index)

    def _get(self, index: int) -> Event:
        event = self.cache.get(index)
        if event is None:
            event = self.index.parse(index)
            self.cache.put(index, event)
        return event

    def raw(self, index: int) -> bytes:
        return self.index.raw(index)

    def line_number(self, index: int) -> int | None:
        return self.index.line_number(index)

    def truncate(self, length: int) -> None:
        """Keep only the first `length` events (a bad line ends what can be read)."""
        self.index.truncate(length)
