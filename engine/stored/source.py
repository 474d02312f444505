"""Where a run's events are read from: one protocol, one cache.

Every reader of a run (the state fold, the replay timeline, the panes) reads
events by index from an `EventSource`: a plain list, the live run's
`EventLog`, a transcript file's `FileEvents`, or a `Timeline`. Sources that
keep their events as JSON lines (`LinedSource`) also give the line itself,
so a search can skip lines without parsing them, and where it stands in a
file. The ones that parse on demand keep recent events in one `EventCache`
(`engine.core.eventlog`, with the live run's log).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from engine.core.eventlog import EventCache, IndexedEvents
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
