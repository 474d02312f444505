"""The last events of a run, read on their own, for the viewer's first frame at the end.

Opening a long run at its end (`--at end`) used to wait for the index pass
(every event validated and folded) before the first frame. The transcript
pane at the end shows only the last events, and these can be read alone: the
viewer draws them, with the step and the outcome they carry, while the index
pass runs in its worker; the panels folded from the whole run (tools,
budget, map) follow when the pass is done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from engine.core.events import Event
from engine.stored.replay import Timeline
from engine.stored.reader import TranscriptError
from engine.stored.tail import TAIL_EVENTS, fold_events

TAIL_FIRST_AT = 2_000
"""Runs of at least this many events open at the end tail first; a shorter run
is indexed before its first frame (it takes a few milliseconds)."""


@dataclass(frozen=True)
class Tail:
    """The last events of a run and what the header says from them alone."""

    events: Sequence[Event]
    step: int
    policy: str
    ended: str | None
    """`outcome (reason)` when the run's last event is its end."""


def read_tail(timeline: Timeline, count: int | None = None) -> Tail | None:
    """The last `count` (`engine.stored.tail.TAIL_EVENTS`) events of `timeline`, or None when a tail first does not apply:
    a short run, one already indexed, or a bad line among the last events (the
    index pass finds and reports it)."""
    total = len(timeline)
    count = TAIL_EVENTS if count is None else count
    if total < TAIL_FIRST_AT or timeline.indexed:
        return None
    try:
        events = timeline.events(total - count, total)
    except TranscriptError:
        return None
    state = fold_events(timeline.header, events, cut=True)  # the step, the policy and the end: the engine's fold
    ended = None if state.ended is None else f"{state.ended.outcome} ({state.ended.reason})"
    return Tail(events, state.step, state.policy, ended)
