"""Where the engine's events go: the sink protocol and the one serialiser of an event.

The engine hands each event's JSON line to an `EventSink` (the transcript writer
in engine/stored/transcript.py implements it); `event_line` is how an event, a
header or a `tool_started` note becomes that line, wherever one is written
(the transcript, the live run's event log, a fork's copied lines).
"""

from __future__ import annotations

from typing import Any, Protocol


class EventSink(Protocol):
    """Where the engine writes each event's JSON line (the transcript writer).

    `write` may queue the line; the engine calls `flush` before it waits on
    anything outside (the policy) and when a step returns. A `tool_started`
    line must reach the file before `write` returns.
    """

    def write(self, event_type: str, line: bytes) -> None: ...

    def flush(self) -> None: ...


def event_line(event: Any) -> bytes:
    """The JSON line of an event, a header or a `tool_started` note (no newline):
    pydantic's serialiser called directly, as `model_dump_json` would, without its
    per-call arguments. Raises ValueError for a text UTF-8 cannot hold
    (`engine.core.guards.serialised` cleans such an event)."""
    serializer: Any = event.__pydantic_serializer__
    return serializer.to_json(event)
