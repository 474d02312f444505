"""A saved run as a timeline you can step, seek, search and jump through.

Position p on the timeline means "the first p events have happened": position
0 is the run before anything, position len(timeline) is the whole run, and
`state_at(p)` is `fold(header, events[:p])`. Seeking is fast on long runs
because the timeline keeps folded-state checkpoints every K events: a seek
copies the nearest checkpoint at or before p and folds at most K-1 events.

A transcript file is not loaded whole: `Timeline.open` reads the bytes and
the line offsets, parses the header, and parses events on demand (a small
cache keeps recent ones). The first pass over all events (`build_index`,
done on demand by a far seek or ahead of time in a worker) validates every
line, folds the run, keeps the checkpoints and collects the markers and step
boundaries. A bad line found by that pass ends the timeline before it and is
reported as `FILE:LINE: reason` in `errors`; nothing here raises for a bad
file except `TranscriptError` from `open`.

Pure Python: no textual, no rich.
"""

from __future__ import annotations

import bisect
import copy
import json
import re
import threading
import time
from array import array
from collections import OrderedDict
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, Iterable, Literal, Sequence

from pydantic import ValidationError

from engine.core.events import EVENT_ADAPTER, Event, Header
from engine.core.policy import StepView
from engine.core.state import RunState
from engine.stored.transcript import INTENT_TYPE, TranscriptError, _read_header, _reason, read_bytes

MarkerKind = Literal["approval", "rejection", "error", "policy_swap", "budget", "end"]
MARKER_KINDS: tuple[MarkerKind, ...] = ("approval", "rejection", "error", "policy_swap", "budget", "end")
DEFAULT_CHECKPOINT_EVERY = 1000
_PLAIN = re.compile(r"[A-Za-z0-9 .,;!?'_-]+")
_STEP_EVENTS = frozenset({"decision", "approval_requested", "approval_decided", "observation", "policy_error"})


# -- copying state -------------------------------------------------------------

_RUNSTATE_FIELDS = tuple(f.name for f in fields(RunState))
_SHARED = frozenset({"header", "budget", "exhausted", "ended", "status", "step", "events", "policy",
                     "input_tokens", "output_tokens", "estimated_usage", "cost", "seconds", "context_words",
                     "last_policy_error", "repeat_count", "last_signature"})
_SHALLOW = frozenset({"input_tokens_per_step", "tool_calls", "tool_last_error", "rules", "queue", "warned",
                      "step_signatures"})


def _copy_step(view: StepView) -> StepView:
    new = copy.copy(view)
    new.actions = list(view.actions)
    new.observations = list(view.observations)
    new.edits = list(view.edits)
    return new


def snapshot_state(state: RunState) -> RunState:
    """An independent copy of `state`, much faster than `copy.deepcopy`.

    Immutable parts (the header, frozen events, numbers, strings) are shared;
    containers are copied. Completed steps in `history` are shared too: the
    fold only ever changes the last step (its observations and edits), so
    only that one is copied. Fields this function does not know are deep
    copied, so a new RunState field stays correct here without an edit.
    """
    new = RunState.__new__(RunState)
    target = new.__dict__
    for name in _RUNSTATE_FIELDS:
        value = getattr(state, name)
        if name in _SHARED:
            target[name] = value
        elif name in _SHALLOW:
            target[name] = copy.copy(value)
        elif name == "history":
            target[name] = value[:-1] + [_copy_step(value[-1])] if value else []
        elif name == "pending":
            target[name] = None if value is None else copy.deepcopy(value)
        else:
            target[name] = copy.deepcopy(value)
    return new


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
        state.history, state.input_tokens_per_step = [], []
        try:
            bare = snapshot_state(state)
        finally:
            state.history, state.input_tokens_per_step = history, tokens
        last = _copy_step(history[-1]) if history else None
        return cls(bare, len(history), last, len(tokens))

    def restore(self, running: RunState) -> RunState:
        """A fresh state; `running` is the index's state, which is at or past this checkpoint."""
        state = snapshot_state(self.state)
        if self.last_step is not None:
            state.history = running.history[: self.history_len - 1] + [_copy_step(self.last_step)]
        state.input_tokens_per_step = running.input_tokens_per_step[: self.tokens_len]
        return state


# -- markers and event text ----------------------------------------------------


@dataclass(frozen=True)
class Marker:
    """A place worth jumping to. `index` is the event's index; seeking to
    `position` (index + 1) shows the run just after that event."""

    index: int
    kind: MarkerKind
    label: str

    @property
    def position(self) -> int:
        return self.index + 1


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def marker_for(index: int, event: Event, *, rejected_call: tuple[int, int] | None = None) -> Marker | None:
    """The marker an event makes, if any. `rejected_call` is the (step, index) of the
    call the operator last rejected: its observation is not a second marker."""
    t = event.type
    if t == "approval_requested":
        return Marker(index, "approval", f"step {event.step}: {event.tool} needs approval")
    if t == "approval_decided" and event.choice in ("reject", "abort"):
        why = f": {_short(event.reason)}" if event.reason else ""
        return Marker(index, "rejection", f"step {event.step}: {event.choice}ed{why}")
    if t == "observation" and event.error and (event.step, event.index) != rejected_call:
        return Marker(index, "error", f"step {event.step}: {_short(event.text)}")
    if t == "policy_error":
        return Marker(index, "error", f"step {event.step}: policy {event.policy} failed: {_short(event.message)}")
    if t == "policy_swapped":
        return Marker(index, "policy_swap", f"policy {event.old} -> {event.new} from step {event.step}")
    if t == "budget_warning":
        return Marker(index, "budget", f"{event.kind} budget at {event.used:g} of {event.limit:g}")
    if t == "budget_exhausted":
        return Marker(index, "budget", f"{event.kind} budget reached: {event.used:g} of {event.limit:g}")
    if t == "run_ended":
        return Marker(index, "end", f"{event.outcome}: {_short(event.answer or event.reason)}")
    return None


def event_text(event: Event) -> str:
    """The words of an event, for search."""
    t = event.type
    if t == "decision":
        parts = [event.thought, *(a.render() for a in event.actions)]
        if event.answer is not None:
            parts.append(event.answer)
        if event.parse_error:
            parts += [event.parse_error, event.raw or ""]
        return "\n".join(parts)
    if t == "observation":
        return f"{event.tool or ''}\n{event.text}"
    if t in ("approval_requested",):
        return f"{event.tool} {json.dumps(event.args, ensure_ascii=False)} {event.reason}"
    if t == "approval_decided":
        return f"{event.choice} {event.reason or ''} {event.by}"
    if t == "policy_swapped":
        return f"{event.old} {event.new}"
    if t == "policy_error":
        return f"{event.policy} {event.message}"
    if t == "note":
        return f"{event.kind} {event.text}"
    if t == "run_ended":
        return f"{event.outcome} {event.reason} {event.answer or ''}"
    return t


# -- where events come from ----------------------------------------------------


class _ListSource:
    """Events already in memory (an imported trace, a live run, a test)."""

    def __init__(self, events: Sequence[Event]) -> None:
        self._events = list(events)

    def __len__(self) -> int:
        return len(self._events)

    def get(self, index: int) -> Event:
        return self._events[index]

    def line_number(self, index: int) -> int | None:
        return None

    def raw_contains(self, index: int, needle: bytes) -> bool:
        return True


class _FileSource:
    """Events parsed on demand from a transcript's bytes and line offsets."""

    CACHE = 4096

    def __init__(self, name: str, data: bytes, starts: array, ends: array, numbers: array) -> None:
        self.name = name
        self._data = data
        self._starts = starts
        self._ends = ends
        self._numbers = numbers
        self._cache: OrderedDict[int, Event] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._starts)

    def truncate(self, length: int) -> None:
        del self._starts[length:]
        del self._ends[length:]
        del self._numbers[length:]

    def raw(self, index: int) -> bytes:
        return self._data[self._starts[index] : self._ends[index]]

    def line_number(self, index: int) -> int | None:
        return self._numbers[index]

    def raw_contains(self, index: int, needle: bytes) -> bool:
        return needle in self.raw(index).lower()

    def parse(self, index: int) -> Event:
        """Validate one line; TranscriptError names FILE:LINE and the reason."""
        raw = self.raw(index)
        try:
            return EVENT_ADAPTER.validate_json(raw)
        except ValidationError:
            pass
        where = f"{self.name}:{self._numbers[index]}"
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise TranscriptError(f"{where}: not UTF-8 text (byte {exc.start})") from None
        except (json.JSONDecodeError, RecursionError) as exc:
            raise TranscriptError(f"{where}: not JSON ({getattr(exc, 'msg', 'too deeply nested')})") from None
        try:
            return EVENT_ADAPTER.validate_python(data)
        except ValidationError as exc:
            raise TranscriptError(f"{where}: not a valid event: {_reason(exc)}") from None
        except (RecursionError, ValueError, TypeError) as exc:
            raise TranscriptError(f"{where}: not a valid event: {exc}") from None

    def get(self, index: int) -> Event:
        with self._lock:
            event = self._cache.get(index)
            if event is not None:
                self._cache.move_to_end(index)
                return event
        event = self.parse(index)
        with self._lock:
            self._cache[index] = event
            if len(self._cache) > self.CACHE:
                self._cache.popitem(last=False)
        return event


_INTENT_AS_WRITTEN = re.compile(rb'\{"at":[-+0-9.eE]+,"type":"tool_started"')


def _is_intent(raw: bytes) -> bool:
    """A `tool_started` write-ahead line (not an event; see engine.events.ToolStarted)."""
    if _INTENT_AS_WRITTEN.match(raw):  # the writer's own layout: no need to parse
        return True
    if b'"tool_started"' not in raw:
        return False
    try:
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return False
    return isinstance(parsed, dict) and parsed.get("type") == INTENT_TYPE


def _scan_lines(name: str, data: bytes) -> tuple[Header, array, array, array, list[str]]:
    """Header and the offsets of every non-blank line after it; a torn last line is dropped with a warning."""
    starts, ends, numbers = array("q"), array("q"), array("q")
    warnings: list[str] = []
    header: Header | None = None
    pos, number, size = 0, 0, len(data)
    while pos < size:
        newline = data.find(b"\n", pos)
        end = size if newline < 0 else newline
        number += 1
        line_end = end - 1 if end > pos and data[end - 1 : end] == b"\r" else end
        if line_end > pos and (data[pos] == 0x7B or data[pos:line_end].strip()):  # 0x7B: "{", the usual start
            if header is None:
                raw = data[pos:line_end]
                try:
                    parsed = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                    raise TranscriptError(
                        f"{name}:{number}: expected the header line (an object with \"type\": \"header\")"
                    ) from None
                header = _read_header(name, number, parsed)
            elif not _is_intent(data[pos:line_end]):
                starts.append(pos)
                ends.append(line_end)
                numbers.append(number)
        pos = end + 1
    if header is None:
        if not data.strip():
            raise TranscriptError(f"{name}: the file is empty (no header line)")
        raise TranscriptError(f"{name}: no header line")
    if starts and not data.endswith(b"\n"):
        last = data[starts[-1] : ends[-1]]
        try:
            EVENT_ADAPTER.validate_json(last)
        except ValidationError:
            warnings.append(f"{name}:{numbers[-1]}: the last line was cut off while being written and is ignored")
            starts.pop(), ends.pop(), numbers.pop()
    return header, starts, ends, numbers, warnings


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
        _source: _ListSource | _FileSource | None = None,
    ) -> None:
        if checkpoint_every < 1:
            raise ValueError("checkpoint_every must be 1 or more")
        self.header = header
        self.path = Path(path) if path is not None else None
        self.warnings: list[str] = list(warnings)
        self.errors: list[str] = []
        self.checkpoint_every = checkpoint_every
        self._source = _source if _source is not None else _ListSource(events or [])
        self._lock = threading.RLock()
        start = RunState.start(header)
        self._checkpoints: list[_Checkpoint] = [_Checkpoint.take(start)]
        self._running = start
        self._indexed = 0
        self._markers: list[Marker] = []
        self._rejected_call: tuple[int, int] | None = None  # (step, index) of the last rejected call
        self._after_step: list[int] = []
        self._decisions: list[int] = []
        self.index_hooks: list[Callable[[int, Event], None]] = []
        """Called with (index, event) for each event the index pass reads, in order
        (from the worker thread when a viewer indexes in the background)."""
        self.position = 0

    # -- opening ---------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, *, checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY) -> Timeline:
        """Open an agent-tui transcript without parsing every event yet."""
        p = Path(path)
        data = read_bytes(p)
        header, starts, ends, numbers, warnings = _scan_lines(str(p), data)
        source = _FileSource(str(p), data, starts, ends, numbers)
        return cls(header, path=p, warnings=warnings, checkpoint_every=checkpoint_every, _source=source)

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
        return self._source.get(index)

    def events(self, start: int = 0, stop: int | None = None) -> list[Event]:
        stop = len(self) if stop is None else min(stop, len(self))
        return [self.event(i) for i in range(max(0, start), stop)]

    def line_number(self, index: int) -> int | None:
        """The file line of event `index`, when the timeline came from a file."""
        return self._source.line_number(index)

    # -- the index pass ---------------------------------------------------------

    def build_index(self, until: int | None = None) -> None:
        """Validate and fold events up to position `until` (all by default),
        keeping checkpoints, markers and step boundaries. Safe to call from a
        worker thread while the viewer seeks: the work goes in chunks of K
        events and the lock is let go between chunks."""
        K = self.checkpoint_every
        while True:
            with self._lock:
                target = len(self._source) if until is None else min(until, len(self._source))
                if self._indexed >= target:
                    if self.indexed:
                        self._close_steps()
                    return
                self._index_chunk(min(target, (self._indexed // K + 1) * K))
            time.sleep(0)

    def _index_chunk(self, stop: int) -> None:
        K = self.checkpoint_every
        state = self._running
        i = self._indexed
        while i < stop:
            try:
                event = self._source.get(i)
            except TranscriptError as exc:
                self.errors.append(str(exc))
                if isinstance(self._source, _FileSource):
                    self._source.truncate(i)
                break
            self._note(i, event, state.step)
            for hook in self.index_hooks:
                hook(i, event)
            state.apply(event)
            i += 1
            if i % K == 0 and len(self._checkpoints) == i // K:
                self._checkpoints.append(_Checkpoint.take(state))
        self._indexed = i

    def _note(self, index: int, event: Event, step_before: int) -> None:
        if event.type == "approval_decided" and event.choice in ("reject", "abort"):
            self._rejected_call = (event.step, event.index)
        marker = marker_for(index, event, rejected_call=self._rejected_call)
        if marker is not None:
            self._markers.append(marker)
        t = event.type
        if t == "decision":
            self._decisions.append(index)
        if t in _STEP_EVENTS:
            while len(self._after_step) < event.step:
                self._after_step.append(index)
        elif t == "run_ended":
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
                state.apply(self._source.get(i))
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

    def final_state(self) -> RunState:
        self.build_index()
        return snapshot_state(self._running)

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

    def step_at(self, position: int) -> int:
        """The step number shown at `position` (0 before the first decision)."""
        self.build_index()
        return bisect.bisect_left(self._decisions, position) if position > 0 else 0

    def decision_indices(self) -> list[int]:
        self.build_index()
        return list(self._decisions)

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
        found = []
        for i in range(max(0, start), len(self)):
            if quick and not self._source.raw_contains(i, raw_needle):
                continue
            if needle in event_text(self._source.get(i)).lower():
                found.append(i)
        return found
