"""A run's last events and what its header and gauges show, read from the end of its file.

Opening a long run (the cockpit's `run --resume`, a listing of runs) should not
wait for every line. `read_tail` reads the header line and the last lines only
(`engine.stored.reader.read_ends`, two reads and no pass over the middle),
parses the last `count` events and folds what they tell (`fold_ends`): the
step, the policy, the status and what is pending are the file's own; tokens,
cost and seconds are summed over the steps read (`Tail.partial`) unless the
file was read whole. A first frame is drawn from it; the whole run follows
from `engine.stored.transcript.read_transcript` (or a timeline's index pass),
which the caller runs in the background and which reports any bad line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from engine.core.events import Event, Header
from engine.core.state import RunState, fold
from engine.core.text import clean
from engine.stored.reader import TAIL_BYTES, LineIndex, TranscriptError, read_ends

__all__ = ["TAIL_EVENTS", "Tail", "fold_ends", "fold_events", "read_tail"]

TAIL_EVENTS = 400
"""Events `read_tail` gives by default: each takes a row at least, so they fill any pane."""
_BYTES_AN_EVENT = 512
"""The first guess at an event line's length: the tail read is grown four times over while short."""


@dataclass
class Tail:
    """The last events of a file's run (its last run, in a file of several) and their fold."""

    path: Path
    header: Header
    events: list[Event]
    """The last events, in order (at most the `count` asked for)."""
    state: RunState
    """What the events read tell (`fold_ends`); the plain fold of the run when `whole`."""
    partial: bool
    """Tokens, cost and seconds are the steps read only (the read did not reach step 1)."""
    whole: bool
    """The file was read whole: `total` and `lines` are known and `state` is exact."""
    total: int | None
    """How many events the run has, when `whole` (else known only from the whole read)."""
    lines: list[int] | None
    """The file line of each event, when `whole`."""
    size: int
    """The file's size when read: what a read of the whole run starts from."""
    warnings: list[str] = field(default_factory=list)
    problem: str | None = None
    """Why the fold stops before the last event (a line that does not follow), if it does."""


def read_tail(path: str | Path, count: int = TAIL_EVENTS) -> Tail:
    """The last `count` events of `path` and their fold, reading only the file's ends.
    TranscriptError (one line naming the file) when the file or one of those lines cannot be read."""
    p = Path(path)
    want = max(TAIL_BYTES, count * _BYTES_AN_EVENT)
    while True:
        ends = read_ends(p, tail_bytes=want)
        index = ends.runs()[-1]
        if ends.whole or len(index) >= count or want >= ends.size:
            break
        want *= 4
    start = max(0, len(index) - count)
    events = [index.parse(i) for i in range(start, len(index))]
    if ends.whole:
        every = events if start == 0 else [*(index.parse(i) for i in range(start)), *events]
        state, partial, problem = fold(index.header, every), False, None
    else:
        state, partial, problem = fold_ends(index.header, index, True)
    return Tail(
        path=p, header=index.header, events=events, state=state, partial=partial, whole=ends.whole,
        total=len(index) if ends.whole else None,
        lines=[index.line_number(i) for i in range(start, len(index))] if ends.whole else None,
        size=ends.size, warnings=list(index.warnings), problem=problem,
    )


def fold_ends(header: Header, index: LineIndex | None, cut: bool) -> tuple[RunState, bool, str | None]:
    """The fold of what a summary or a first frame needs of the events read: every decision (steps, policy,
    tokens, cost) and every event of the last step (its status, its end). `cut`: the lines
    begin mid-run, so the fold starts at the first decision read and usage is partial
    unless that decision is step 1. Returns the state, whether usage is partial, and why
    the events stop, if they do."""
    if index is None:
        return RunState.start(header), False, None
    decisions = [i for i in range(len(index)) if _is_decision(index.raw(i))]
    return _fold_last(header, len(index), decisions, index.parse, index.where, cut)


def fold_events(header: Header, events: Sequence[Event], cut: bool) -> RunState:
    """`fold_ends` of events already parsed (a timeline's last events, for the viewer's first frame)."""
    decisions = [i for i, event in enumerate(events) if event.type == "decision"]
    return _fold_last(header, len(events), decisions, events.__getitem__, lambda i: f"event {i}", cut)[0]


def _fold_last(header: Header, count: int, decisions: list[int], parse: Callable[[int], Event], where: Callable[[int], str],
               cut: bool) -> tuple[RunState, bool, str | None]:
    state = RunState.start(header)
    if cut and not decisions:
        return state, True, None
    first = decisions[0] if cut else 0
    last_step = decisions[-1] if decisions else first
    wanted = [*(i for i in decisions if first <= i < last_step), *range(last_step, count)]
    partial = cut
    for i in wanted:
        try:
            event = parse(i)
            if i < last_step and event.type != "decision":
                continue  # a line that only looked like one
            if cut and i == first:
                partial = getattr(event, "step", None) != 1
            state.apply(event, decision_words=0)  # the context's size is not summed up: no decision rendered
        except TranscriptError as exc:
            return state, partial, clean(str(exc))
        except Exception as exc:  # lines that do not follow one another: say so, list the rest
            return state, partial, clean(f"{where(i)}: does not follow the lines before ({type(exc).__name__})")
    return state, partial, None


def _is_decision(raw: bytes) -> bool:
    """A decision line, told by its layout without parsing it (any other line is parsed only
    when it belongs to the last step)."""
    return b'"type":"decision"' in raw or b'"type": "decision"' in raw
