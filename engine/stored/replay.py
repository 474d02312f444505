"""A saved run as a timeline you can step, seek, search and jump through.

Position p on the timeline means "the first p events have happened": position
0 is the run before anything, position len(timeline) is the whole run, and
`state_at(p)` is `fold(header, events[:p])`. Seeking is fast on long runs
because the timeline keeps folded-state checkpoints every K events: a seek
copies the nearest checkpoint at or before p and folds at most K-1 events.

A transcript file is not loaded whole: `Timeline.open` indexes its lines
with `engine.stored.reader` (the one reader of the format) and parses events
on demand (`engine.stored.source.FileEvents`, whose cache keeps recent ones). The first pass over all events (`build_index`,
done on demand by a far seek or ahead of time in a worker) validates every
line, folds the run, keeps the checkpoints and collects the markers and step
boundaries. A bad line found by that pass ends the timeline before it and is
reported as `FILE:LINE: reason` in `errors`; nothing here raises for a bad
file except `TranscriptError` from `open`.

Pure Python: no textual, no rich.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

from engine.core.collector import collector_paused
from engine.core.events import Event, Header
from engine.core.history import History
from engine.core.policy import StepView
from engine.core.state import RunState
from engine.core.describe import event_words
from engine.stored.markers import MARKER_KINDS, Marker, MarkerKind, marker_for
from engine.stored.reader import LineIndex, StepCheck, TranscriptError, read_bytes
from engine.stored.runs import chosen_run
from engine.stored.source import EventSource, FileEvents, LinedSource

__all__ = ["DEFAULT_CHECKPOINT_EVERY", "MARKER_KINDS", "Marker", "MarkerKind", "Timeline", "marker_for"]

DEFAULT_CHECKPOINT_EVERY = 50
"""A checkpoint is about 2 KB (the append-only lists are shared): 2.7 MB more
peak RSS for 100,000 events at 50 than at 100 (111 against 108 MB), and a
viewer's far seek folds 25 events on average instead of 50 (`state_at` at
random positions: median 6.6 ms against 12.7 ms on a loaded machine; 12 ms
p95 at 250 and 50 ms at 1000)."""
PASS_SLICE = 0.002
"""Seconds an index pass runs before it gives way to the viewer's thread (which may wait as long for the lock)."""
_PLAIN = re.compile(r"[A-Za-z0-9 .,;!?'_-]+")
_STEP_EVENTS = frozenset({"decision", "approval_requested", "approval_decided", "observation", "policy_error"})


class _Checkpoint:
    """A folded state kept by the timeline, without copies of the append-only lists.

    `history` and `input_tokens_per_step` only grow, and only the last step
    changes after it is appended, so a checkpoint keeps their lengths and a
    copy of its last step; the lists themselves are sliced from the index's
    running state when the checkpoint is restored.
    """

    __slots__ = ("state", "history_len", "last_step", "tokens_len")

    def __init__(self, state: RunState, history_len: int, last_step: StepView | None, tokens_len: int) -> None:
        self.state = state
        self.history_len = history_len
        self.last_step = last_step
        self.tokens_len = tokens_len

    @classmethod
    def take(cls, state: RunState) -> _Checkpoint:
        history, tokens = state.history, state.input_tokens_per_step
        state.history, state.input_tokens_per_step = History(), []
        try:
            bare = state.copy()
        finally:
            state.history, state.input_tokens_per_step = history, tokens
        last = history[-1].copy() if history else None
        return cls(bare, len(history), last, len(tokens))

    def restore(self, running: RunState) -> RunState:
        """A fresh state; `running` is the index's state, which is at or past this checkpoint."""
        state = self.state.copy()
        if self.last_step is not None:
            state.history = running.history.upto(self.history_len, self.last_step.copy())
        state.input_tokens_per_step = running.input_tokens_per_step[: self.tokens_len]
        return state


# -- the timeline --------------------------------------------------------------


class Timeline:
    """A run's events with fast random access to the state at any position.

    Positions run from 0 to len(self). The cursor (`position`, `seek`,
    `forward`, `back`) is a convenience for viewers; `state_at` does not move it.
    """

    def __init__(
        self,
        header: Header,
        events: Sequence[Event] | None = None,
        *,
        path: str | Path | None = None,
        warnings: Iterable[str] = (),
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
        _source: EventSource | None = None,
    ) -> None:
        if checkpoint_every < 1:
            raise ValueError("checkpoint_every must be 1 or more")
        self.header = header
        self.path = Path(path) if path is not None else None
        self.warnings: list[str] = list(warnings)
        self.errors: list[str] = []
        self.checkpoint_every = checkpoint_every
        self._source: EventSource = _source if _source is not None else list(events or [])
        self._lock = threading.RLock()
        start = RunState.start(header)
        self._checkpoints: list[_Checkpoint] = [_Checkpoint.take(start)]
        self._running = start
        self._indexed = 0
        self._markers: list[Marker] = []
        self._rejected_call: tuple[int, int] | None = None  # (step, index) of the last rejected call
        self._after_step: list[int] = []
        self._steps = StepCheck()
        self._packing = False
        self.index_hooks: list[Callable[[int, Event], None]] = []
        """Called with (index, event) for each event the index pass reads, in order
        (from the worker thread when a viewer indexes in the background)."""
        self.position = 0

    # -- opening ---------------------------------------------------------------

    @classmethod
    def open(
        cls, path: str | Path, *, checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY, run: str | int | None = None
    ) -> Timeline:
        """Open an agent-tui transcript without parsing every event yet; of a file of several
        runs, the one `run` names (its number from 1, or its id), else the first."""
        p = Path(path)
        data, lines_before, warnings, _count = chosen_run(str(p), read_bytes(p), run)
        index = LineIndex.scan(str(p), data, lines_before=lines_before)
        source = FileEvents(index)
        return cls(index.header, path=p, warnings=[*index.warnings, *warnings], checkpoint_every=checkpoint_every, _source=source)

    # -- events ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._source)

    @property
    def indexed(self) -> bool:
        """True once every event has been validated and folded."""
        return self._indexed >= len(self._source)

    @property
    def indexed_count(self) -> int:
        return self._indexed

    def event(self, index: int) -> Event:
        """Event `index` (0-based). For a file, an unindexed bad line raises TranscriptError."""
        if not 0 <= index < len(self):
            raise IndexError(f"event {index} is outside 0..{len(self) - 1}")
        return self._source[index]

    def __getitem__(self, index: int) -> Event:
        """The timeline is itself an EventSource: event `index`, parsed on demand."""
        if index < 0:
            index += len(self)
        return self.event(index)

    def events(self, start: int = 0, stop: int | None = None) -> list[Event]:
        stop = len(self) if stop is None else min(stop, len(self))
        return [self.event(i) for i in range(max(0, start), stop)]

    def line_number(self, index: int) -> int | None:
        """The file line of event `index`, when the timeline came from a file."""
        return self._source.line_number(index) if isinstance(self._source, LinedSource) else None

    def _where(self, index: int) -> str:
        """FILE:LINE of event `index`, or its place among the events."""
        number = self.line_number(index)
        return f"{self.path}:{number}" if number is not None else f"event {index + 1}"

    # -- the index pass ---------------------------------------------------------

    def build_index(self, until: int | None = None) -> None:
        """Validate and fold events up to position `until` (all by default),
        keeping checkpoints, markers and step boundaries. Safe to call from a
        worker thread while the viewer seeks: the work goes in chunks of K
        events, the lock let go between chunks, and every `PASS_SLICE` seconds
        the thread gives way (`time.sleep(0)`, about 80 us of CPU a call: after
        every chunk it was a quarter of the pass). The lines are read from the file's
        bytes as they are: a viewer that holds the run packs them afterwards (`pack`)."""
        K = self.checkpoint_every
        give_way_at = time.perf_counter() + PASS_SLICE
        while True:
            with self._lock:
                target = len(self._source) if until is None else min(until, len(self._source))
                if self._indexed >= target:
                    if self.indexed:
                        self._close_steps()
                    break
                self._index_chunk(min(target, (self._indexed // K + 1) * K))
            if time.perf_counter() >= give_way_at:
                time.sleep(0)
                give_way_at = time.perf_counter() + PASS_SLICE

    def pack(self) -> None:
        """A file's bytes kept compressed from now on when large (`Packed`: 3 MB instead of
        33 for 100,000 events; about 0.07 s): for a viewer that holds the run once its
        index pass is done. Packed outside the lock (the bytes do not change; a seek
        meanwhile reads them as they are), by one thread; later calls do nothing."""
        if not isinstance(self._source, FileEvents):
            return
        with self._lock:
            if self._packing:
                return
            self._packing = True
        self._source.index.pack()

    def _index_chunk(self, stop: int) -> None:
        """Index up to `stop`. A file's events are parsed straight from their lines, not
        through the cache (a pass over every event would only churn it), with no
        garbage collection inside the chunk (the events read make no cycles; a
        collection walking the growing history cost a quarter of the pass). A decision
        or an observation without an error, most of a run, makes no marker."""
        K = self.checkpoint_every
        state = self._running
        i = self._indexed
        read = self._source.index.parse if isinstance(self._source, FileEvents) else self._source.__getitem__
        problem_of, note, hooks, apply, checkpoints = self._steps.problem, self._note, self.index_hooks, state.apply, self._checkpoints
        after_step = self._after_step
        with collector_paused():
            while i < stop:
                try:
                    event = read(i)
                    if (problem := problem_of(event)) is not None:
                        raise TranscriptError(f"{self._where(i)}: {problem}")
                except TranscriptError as exc:
                    self.errors.append(str(exc))
                    if isinstance(self._source, FileEvents):
                        self._source.truncate(i)
                    break
                kind = event.type
                if kind == "decision" or (kind == "observation" and not event.error):  # type: ignore[union-attr]
                    while len(after_step) < event.step:  # type: ignore[union-attr]
                        after_step.append(i)
                else:
                    note(i, event, state.step)
                for hook in hooks:
                    hook(i, event)
                apply(event)
                i += 1
                if i % K == 0 and len(checkpoints) == i // K:
                    checkpoints.append(_Checkpoint.take(state))
        self._indexed = i

    def _note(self, index: int, event: Event, step_before: int) -> None:
        if event.type == "approval_decided" and event.choice in ("reject", "abort"):
            self._rejected_call = (event.step, event.index)
        marker = marker_for(index, event, rejected_call=self._rejected_call)
        if marker is not None:
            self._markers.append(marker)
        if event.type in _STEP_EVENTS:
            while len(self._after_step) < event.step:
                self._after_step.append(index)
        elif event.type == "run_ended":
            while len(self._after_step) <= max(event.step, step_before):
                self._after_step.append(index)

    def _close_steps(self) -> None:
        """After the last event: the last step ends at the end of the timeline."""
        last_step = self._running.step
        while len(self._after_step) <= last_step:
            self._after_step.append(len(self._source))

    # -- states ----------------------------------------------------------------

    def _clamp(self, position: int) -> int:
        return max(0, min(position, len(self)))

    def state_at(self, position: int) -> RunState:
        """The folded state after the first `position` events (a fresh copy)."""
        with self._lock:
            if position > self._indexed:
                self.build_index(position)
            position = self._clamp(position)
            K = self.checkpoint_every
            base = min(position // K, len(self._checkpoints) - 1)
            state = self._checkpoints[base].restore(self._running)
            for i in range(base * K, position):
                state.apply(self._source[i])
            return state

    @property
    def state(self) -> RunState:
        return self.state_at(self.position)

    def seek(self, position: int) -> RunState:
        """Move the cursor (clamped to 0..len) and return the state there."""
        state = self.state_at(self._clamp(position))
        self.position = self._clamp(position)
        return state

    def forward(self, count: int = 1) -> RunState:
        return self.seek(self.position + count)

    def back(self, count: int = 1) -> RunState:
        return self.seek(self.position - count)

    # -- navigation ------------------------------------------------------------

    def markers(self, kinds: Iterable[str] | None = None) -> list[Marker]:
        """Every marker, in order (indexes the whole run first)."""
        self.build_index()
        if kinds is None:
            return list(self._markers)
        wanted = set(kinds)
        return [m for m in self._markers if m.kind in wanted]

    def next_marker(self, position: int | None = None, kinds: Iterable[str] | None = None) -> Marker | None:
        """The first marker whose position is after `position` (the cursor by default)."""
        here = self.position if position is None else position
        found = self.markers(kinds)
        i = bisect.bisect_right([m.position for m in found], here)
        return found[i] if i < len(found) else None

    def prev_marker(self, position: int | None = None, kinds: Iterable[str] | None = None) -> Marker | None:
        """The last marker whose position is before `position`."""
        here = self.position if position is None else position
        found = self.markers(kinds)
        i = bisect.bisect_left([m.position for m in found], here)
        return found[i - 1] if i > 0 else None

    def steps(self) -> int:
        """How many steps the run has."""
        self.build_index()
        return max(0, len(self._after_step) - 1)

    def position_after_step(self, step: int) -> int:
        """The position where step `step` is complete and step `step`+1 has not begun:
        every event of steps 1..step (with the warnings and swaps that follow
        them) and nothing of a later step nor the run's end. Step 0 is the start."""
        if step < 0:
            raise ValueError("steps start at 0")
        self.build_index()
        if step < len(self._after_step):
            return self._after_step[step]
        return len(self)

    def step_boundaries(self) -> list[int]:
        """Sorted positions that `next_step` / `prev_step` stop at (0 and the end included)."""
        self.build_index()
        return sorted({0, *self._after_step, len(self)})

    def next_step(self, position: int | None = None) -> int:
        """The next boundary after `position`: the current step shown whole."""
        here = self.position if position is None else position
        bounds = self.step_boundaries()
        i = bisect.bisect_right(bounds, here)
        return bounds[i] if i < len(bounds) else len(self)

    def prev_step(self, position: int | None = None) -> int:
        here = self.position if position is None else position
        bounds = self.step_boundaries()
        i = bisect.bisect_left(bounds, here)
        return bounds[i - 1] if i > 0 else 0

    def search(self, text: str, start: int = 0) -> list[int]:
        """Indices of events at or after `start` whose words contain `text` (case-insensitive)."""
        needle = text.lower()
        if not needle:
            return []
        self.build_index()
        # On a file, skip lines whose raw JSON cannot contain a plain-word needle
        # without parsing them; other needles are checked on every event.
        quick = needle.isascii() and _PLAIN.fullmatch(needle) is not None
        raw_needle = needle.encode("ascii") if quick else b""
        lined = self._source if quick and isinstance(self._source, LinedSource) else None
        found = []
        for i in range(max(0, start), len(self)):
            if lined is not None and raw_needle not in lined.raw(i).lower():
                continue
            if needle in event_words(self._source[i]).lower():
                found.append(i)
        return found
