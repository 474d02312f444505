"""How a run stops when something outside it fails: a transcript that cannot take an
event, a signal, a text UTF-8 cannot hold.

An event is recorded before it counts: if the transcript cannot take it (a full
disk, a file gone), the engine is halted with `RecordError` and nothing after it
runs (fail closed). A text holding a lone surrogate (which UTF-8 cannot encode)
is cleaned when its event is serialised, the one place every event passes, so
every event can be written. `Interrupted` is what SIGTERM raises in the main
thread, as Ctrl+C raises KeyboardInterrupt.
"""

from __future__ import annotations

import re
from typing import TypeVar

from engine.core.operator import EngineError
from engine.core.sink import event_line

_M = TypeVar("_M")
_SURROGATE = re.compile("[\ud800-\udfff]")


class RecordError(EngineError):
    """The transcript could not record an event: the run is halted and nothing more runs."""


class Interrupted(BaseException):
    """Raised in the main thread by SIGTERM, as KeyboardInterrupt is by Ctrl+C."""


def halt_reason(exc: BaseException) -> str:
    """Why the run halted, in words, from the error the transcript's write raised."""
    detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"the transcript cannot be written ({detail}); the run stopped and nothing more runs"


def serialised(event: _M) -> tuple[_M, bytes]:
    """The event and its JSON line; an event whose text UTF-8 cannot hold (a lone
    surrogate) comes back cleaned (U+FFFD in its place). Costs nothing for a good event."""
    try:
        return event, event_line(event)
    except ValueError:
        cleaned = type(event).model_validate(scrub(event.model_dump()))  # type: ignore[attr-defined]
        return cleaned, event_line(cleaned)


def scrub(value: object) -> object:
    """A JSON-like value with lone surrogates replaced by U+FFFD in every string (keys too)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value
