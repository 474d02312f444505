"""The transcript pane: every event of the run as styled lines, drawn on demand.

INTERFACE (the cockpit and the replay viewer use only this):

    pane = TranscriptPane(id="transcript")
    pane.reset(header, events)    # show exactly these events (replay seek, resume)
    pane.append(event)            # one more event (live run); follows the end
                                  # unless the operator has scrolled up
    pane.stream(text)             # the thought a model is streaming right now,
                                  # shown below the last event; cleared by the
                                  # next append of a decision or by stream("")
    pane.event_count              # how many events are shown
    pane.follow                   # True while the pane sticks to the newest line

Untrusted text (thoughts, arguments, observations) is drawn as data: never
parsed as markup, control characters replaced (engine.text.clean).

How it stays fast at 100,000 events: the pane keeps the events and, for the
current width, only the number of rows each one takes plus a prefix sum of
those counts. `render_line(y)` finds the event under a row by bisection and
draws that event's rows (kept in a small LRU cache). Appending counts one
event; `reset()` with a list that shares a prefix with what the pane has seen
before (replay seek back and forth) reuses the counts it already has.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from itertools import accumulate, compress, islice
from operator import is_, sub
from typing import NamedTuple, Sequence

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from engine.core.events import Event, Header
from engine.core.text import clean
from tui.plain import OUTCOME_WORDS, fork_words, steps_count
from tui.plain import _num as budget_number

LABEL_WIDTH = 10
FOLD_AT = 6
"""An observation longer than this many rows is folded to FOLD_AT rows."""
MIN_TEXT_WIDTH = 12
BREAK_AFTER = "(,=/"
"""Where a line without spaces may break (after a call's opening parenthesis, a comma...)."""
TAB_SIZE = 4


class Block(NamedTuple):
    """A labelled piece of an event: one or more rows in the text column."""

    label: str
    kind: str
    text: str
    foldable: bool = False


class Row(NamedTuple):
    strip: Strip
    fold: bool = False


_CLEAN_TOUCHES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Every character `clean` acts on (control characters, bidi marks), and tab."""


def _text(value: str) -> str:
    """Untrusted text made safe to draw: `engine.text.clean`, then tabs expanded.

    Text without a character `clean` acts on is returned as it is, after a
    quick scan (most text; the regexes of `clean` are slow on long outputs).
    The tests check this gives exactly what `clean` gives.
    """
    if value.isascii():
        if value.isprintable() or value.replace("\n", "").isprintable():
            return value
    elif _CLEAN_TOUCHES.search(value) is None:
        return value
    text = clean(value)
    return text.expandtabs(TAB_SIZE) if "\t" in text else text


_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


def _call(tool: str | None, args: dict) -> str:
    """`tool(key=value, ...)`, the same words as `tui.plain.render_args`, cleaned."""
    parts = [f"{k}={_JSON.encode(v)}" for k, v in args.items()]
    return _text(f"{tool or '?'}({', '.join(parts)})")


def _shown_in_step(reason: str) -> bool:
    """Whether the step that ended the run shows its answer (a final answer, or an exit tool's call)."""
    return reason == "final answer" or reason.endswith(" called")


SYSTEM_LINES = 8
"""The system prompt's rows at the top of the pane, at most."""
NOTE_BLOCKS = {
    "user": ("User", "header", False),
    "system": ("System", "header", True),
    "subagent": ("Sub-agent", "observe", True),
    "unrecognised": ("Unmapped", "policy", True),
}
"""A note's label, style and whether it folds: user messages stand out, the rest folds like an observation."""


def event_blocks(event: Event) -> list[Block]:
    """What one event says, as labelled blocks (the same words as `tui.plain`)."""
    t = event.type
    if t == "decision":
        blocks = []
        if event.thought:
            blocks.append(Block("Thought", "thought", _text(event.thought)))
        if event.parse_error:
            blocks.append(Block("Invalid", "error", _text(event.parse_error)))
            if event.raw is not None:
                blocks.append(Block("Wrote", "observe", _text(event.raw), True))
        for action in event.actions:
            blocks.append(Block("Action", "action", _call(action.tool, action.args)))
        if event.answer is not None:
            blocks.append(Block("Answer", "answer", _text(event.answer)))
        return blocks or [Block("Thought", "thought", "")]
    if t == "observation":
        if event.error:
            return [Block("Error", "error", _text(event.text), True)]
        return [Block("Observe", "observe", _text(event.text), True)]
    if t == "approval_requested":
        what = f"{_call(event.tool, event.args)} needs approval ({event.reason})"
        return [Block("Approval", "approval", _text(what))]
    if t == "approval_decided":
        label, kind, words = {
            "approve": ("Approved", "approval", "approved"),
            "approve_always": ("Approved", "approval", "approved always for this tool"),
            "reject": ("Rejected", "rejected", "rejected"),
            "modify": ("Edited", "edited", "arguments edited and approved"),
            "abort": ("Aborted", "rejected", "aborted"),
        }[event.choice]
        detail = f": {event.reason}" if event.reason else ""
        if event.choice == "modify" and event.args is not None:
            detail = ": " + json.dumps(event.args, ensure_ascii=False)
        return [Block(label, kind, _text(f"{words} by {event.by}{detail}"))]
    if t == "policy_swapped":
        return [Block("Policy", "policy", _text(f"{event.old} → {event.new} from step {event.step}"))]
    if t == "policy_error":
        return [Block("Failed", "error", _text(f"policy {event.policy}: {event.message}"))]
    if t == "budget_warning":
        used, limit = budget_number(event.kind, event.used), budget_number(event.kind, event.limit)
        return [Block("Budget", "budget", f"{event.kind} at {used} of {limit}")]
    if t == "budget_exhausted":
        used, limit = budget_number(event.kind, event.used), budget_number(event.kind, event.limit)
        return [Block("Budget", "exhausted", f"{event.kind} limit reached: {used} of {limit}")]
    if t == "budget_extended":
        return [Block("Budget", "budget", f"{event.kind} limit raised to {budget_number(event.kind, event.limit)}")]
    if t == "note":
        label, kind, foldable = NOTE_BLOCKS.get(event.kind, ("Note", "observe", True))
        return [Block(label, kind, _text(event.text), foldable)]
    if t == "run_ended":
        title = f"run ended: {OUTCOME_WORDS[event.outcome]} after {steps_count(event.step)}"
        # an answer is shown once, in the step that gave it
        detail = "" if event.outcome == "answer" else event.reason
        blocks = [Block("", "rule", title)]
        if detail:
            blocks.append(Block("Reason", "end", _text(detail)))
        elif event.outcome == "answer" and event.answer and not _shown_in_step(event.reason):
            blocks.append(Block("Answer", "end", _text(event.answer)))  # e.g. an imported run's submission
        return blocks
    return [Block("Event", "observe", _text(str(t)))]


def wrap(text: str, width: int, limit: int | None = None) -> list[str]:
    """Soft-wrap one paragraph (no newlines) to `width` cells, at spaces where possible.

    With `limit`, stop after that many lines (folded observations draw only
    their first rows, however long the text).
    """
    if len(text) <= width and (text.isascii() or cell_len(text) <= width):
        return [text]
    if not text.isascii():
        return _wrap_cells(text, width, limit)
    lines: list[str] = []
    start, end = 0, len(text)
    while end - start > width:
        if limit is not None and len(lines) >= limit:
            return lines
        cut = text.rfind(" ", start, start + width + 1)
        if cut <= start:
            # no space: break after a call's punctuation if there is one, else mid-word
            after = max(text.rfind(mark, start, start + width) for mark in BREAK_AFTER) + 1
            end_at = after if after > start else start + width
            lines.append(text[start:end_at])
            start = end_at
        else:
            lines.append(text[start:cut])
            start = cut + 1
    lines.append(text[start:])
    return lines


def _wrap_cells(text: str, width: int, limit: int | None) -> list[str]:
    """`wrap` for text with wide or combining characters (measured in cells)."""
    lines: list[str] = []
    line, used = "", 0
    for word in text.split(" "):
        if limit is not None and len(lines) >= limit:
            return lines
        size = cell_len(word)
        gap = 1 if line or used else 0
        if used + gap + size <= width:
            line, used = f"{line} {word}" if gap else word, used + gap + size
            continue
        if line or used:
            lines.append(line)
        if size <= width:
            line, used = word, size
        else:
            *full, line = chop_cells(word, width) or [""]
            lines.extend(full)
            used = cell_len(line)
    lines.append(line)
    return lines[:limit] if limit is not None else lines


def block_lines(text: str, width: int, limit: int | None = None) -> list[str]:
    """The wrapped lines of a block's text (its paragraphs wrapped one by one)."""
    if "\n" not in text:
        return wrap(text, width, limit)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(wrap(paragraph, width, None if limit is None else limit - len(lines)))
        if limit is not None and len(lines) >= limit:
            return lines[:limit]
    return lines


def count_lines(text: str, width: int) -> int:
    if len(text) <= width and "\n" not in text and text.isascii():
        return 1
    return len(block_lines(text, width))


def _plain_figures(blocks: list[Block]) -> tuple[int, int, int]:
    """(widest paragraph in cells, rows, foldable excess) of blocks when nothing wraps."""
    widest = rows = excess = 0
    for block in blocks:
        if block.kind == "rule":
            rows += 1
            continue
        text = block.text
        if "\n" in text:
            paragraphs = text.split("\n")
            n = len(paragraphs)
            size = max(map(len, paragraphs)) if text.isascii() else max(map(cell_len, paragraphs))
        else:
            n = 1
            size = len(text) if text.isascii() else cell_len(text)
        widest = max(widest, size)
        rows += n
        if block.foldable and n > FOLD_AT:
            excess += n - FOLD_AT
    return widest, rows, excess


def event_figures(event: Event) -> tuple[int, int, int, int]:
    """What the pane needs to count an event's rows at any width where nothing
    wraps: (widest paragraph in cells, rows, foldable excess, digits of its step
    number for a decision, else 0). Pure: a viewer may compute it off the UI thread."""
    return (*_plain_figures(event_blocks(event)), len(str(event.step)) if event.type == "decision" else 0)


class Prefix(Sequence):
    """The first `stop` events of `base`, an append-only sequence read by index.

    The replay viewer hands the pane a Prefix of its lazily parsed file
    instead of a list of every event: the pane keeps its counts by index and
    reuses them for any Prefix of the same base, and reads an event only to
    count it (unless `base.figure_columns()` already has its `event_figures`,
    as four columns: widest, rows, excess, digits) or to draw it. Nothing
    holds all the events.
    """

    __slots__ = ("base", "stop")

    def __init__(self, base: Sequence[Event], stop: int) -> None:
        self.base = base
        self.stop = stop

    def __len__(self) -> int:
        return self.stop

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self.base[i] for i in range(*index.indices(self.stop))]
        if index < 0:
            index += self.stop
        if not 0 <= index < self.stop:
            raise IndexError(index)
        return self.base[index]


def fold_more_text(hidden: int) -> str:
    return f"… {hidden} more lines (o to expand)"


class TranscriptPane(ScrollView, can_focus=True):
    """The run's events as styled rows: step number, label, soft-wrapped text."""

    ALLOW_SELECT = False

    BINDINGS = [Binding("o", "toggle_folds", "expand/fold")]

    COMPONENT_CLASSES = {
        "transcript--step",
        "transcript--header",
        "transcript--thought",
        "transcript--action",
        "transcript--observe",
        "transcript--error",
        "transcript--answer",
        "transcript--approval",
        "transcript--rejected",
        "transcript--edited",
        "transcript--policy",
        "transcript--budget",
        "transcript--exhausted",
        "transcript--end",
        "transcript--rule",
        "transcript--fold",
        "transcript--stream",
    }

    DEFAULT_CSS = """
    TranscriptPane {
        background: $surface;
        color: $text;
        overflow-x: hidden;
        overflow-y: scroll;
        scrollbar-size-vertical: 1;
        scrollbar-background: $panel;
        scrollbar-background-hover: $panel;
        scrollbar-background-active: $panel;
        &:focus { background-tint: $foreground 5%; }
        & > .transcript--step { color: $text-primary; text-style: bold; }
        & > .transcript--header { color: $text-muted; }
        & > .transcript--thought { color: $text-muted; text-style: italic; }
        & > .transcript--action { text-style: bold; }
        & > .transcript--observe { }
        & > .transcript--error { color: $text-error; }
        & > .transcript--answer { color: $text-success; text-style: bold; }
        & > .transcript--approval { color: $text-warning; }
        & > .transcript--rejected { color: $text-error; text-style: bold; }
        & > .transcript--edited { color: ansi_magenta; }
        & > .transcript--policy { color: ansi_cyan; }
        & > .transcript--budget { color: $text-warning; }
        & > .transcript--exhausted { color: $text-warning; text-style: bold reverse; }
        & > .transcript--end { text-style: bold; }
        & > .transcript--rule { color: $text-muted; text-style: bold; }
        & > .transcript--fold { color: $text-accent; text-style: italic; }
        & > .transcript--stream { color: $text-muted; text-style: italic; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._header: Header | None = None
        self._known: Sequence[Event] = []
        """Events seen, a prefix of which is shown (kept for cheap seeks): a list,
        or the base of the last `Prefix` given to reset()."""
        self._base: Sequence[Event] | None = None
        self._shown = 0
        self._full: list[int] = []
        """Rows each counted event takes unfolded, at `_layout_width`."""
        self._excess: list[int] = []
        """Rows folding hides for each counted event (0: nothing to fold)."""
        self._widest: list[int] = []
        """Cells in each known event's widest paragraph (rules count as 0)."""
        self._plain_rows: list[int] = []
        self._plain_excess: list[int] = []
        """Rows and foldable excess of each known event when nothing wraps."""
        self._rows: list[int] = []
        self._ends: list[int] = []
        """Prefix sums of `_rows`: event i covers rows [_ends[i-1], _ends[i])."""
        self._layout_width: int | None = None
        self._step_digits = 3
        self._expand_all = False
        self._expanded: set[int] = set()
        self._header_rows: list[Row] = []
        self._stream_text = ""
        self._stream_rows: list[Row] = []
        self._row_cache: LRUCache[int, list[Row]] = LRUCache(512)
        self._styles: dict[str, Style] = {}
        self._follow = True

    # -- the interface -----------------------------------------------------

    @property
    def event_count(self) -> int:
        return self._shown

    @property
    def follow(self) -> bool:
        return self._follow

    @follow.setter
    def follow(self, value: bool) -> None:
        self._follow = value
        if value:
            self._scroll_to_end()

    def reset(self, header: Header, events: Sequence[Event]) -> None:
        """Show exactly `events`; counts for a shared prefix of earlier events are reused."""
        self._header = header
        self._header_rows = []
        self._stream_text = ""
        self._stream_rows = []
        base = events.base if isinstance(events, Prefix) else None
        if base is not None or self._base is not None:
            if base is not self._base:
                if self._base is not None or self._known:
                    self._forget_from(0)
                self._base = base
                self._known = base if base is not None else []
            if base is not None:
                # counts are kept by index: every Prefix of one base shares them
                self._shown = len(events)
                self._update()
                return
        known = self._known
        n = len(events)
        common = min(n, len(known))
        if not all(map(is_, events[:common], known[:common])):
            common = next(i for i, (a, b) in enumerate(zip(events, known)) if a is not b)
        if common < len(known) and common < n:
            self._forget_from(common)
        known.extend(events[len(known) :])
        self._shown = n
        self._update()

    def append(self, event: Event) -> None:
        """Show one more event after the current ones."""
        if self._base is not None:
            # from a Prefix back to a list of the events shown
            self._known = [self._known[i] for i in range(self._shown)]
            self._base = None
            self._forget_from(self._shown)
        if self._shown < len(self._known):
            if self._known[self._shown] is not event:
                self._forget_from(self._shown)
                self._known.append(event)
        else:
            self._known.append(event)
        self._shown += 1
        if event.type == "decision" and self._stream_text:
            self._stream_text = ""
            self._stream_rows = []
        self._update()

    def stream(self, text: str) -> None:
        """Show `text` as the thought being streamed now ("" clears it)."""
        self._stream_text = _text(text)
        self._stream_rows = []
        self._update()

    # -- layout ------------------------------------------------------------

    def _forget_from(self, index: int) -> None:
        if isinstance(self._known, list):
            del self._known[index:]
        del self._full[index:], self._excess[index:], self._rows[index:], self._ends[index:]
        del self._widest[index:], self._plain_rows[index:], self._plain_excess[index:]
        self._expanded = {i for i in self._expanded if i < index}
        self._row_cache.clear()

    def _text_width(self) -> int:
        return max(MIN_TEXT_WIDTH, self._pane_width() - self._text_x())

    def _pane_width(self) -> int:
        return self.scrollable_content_region.width

    def _text_x(self) -> int:
        return self._step_digits + 1 + LABEL_WIDTH

    def _folded(self, index: int) -> bool:
        return not self._expand_all and index not in self._expanded

    def _count_upto(self, stop: int) -> None:
        """Count rows for the known events up to `stop` that are not counted yet.

        Each event's width-independent figures (its widest paragraph, its rows
        and foldable excess when nothing wraps) are kept, so a width change
        re-wraps only the events with a paragraph wider than the text column;
        runs of events no wider than the column are counted in bulk.
        """
        fresh = self._figure_upto(stop)
        width = self._text_width()
        widest, plain_rows, plain_excess = self._widest, self._plain_rows, self._plain_excess
        full, excess, rows, ends = self._full, self._excess, self._rows, self._ends
        first = len(full)
        if first >= stop:
            return
        expand_all, expanded = self._expand_all, self._expanded
        wide = list(compress(range(first, stop), map(width.__lt__, islice(widest, first, stop))))
        here = first
        for index in [*wide, stop]:
            if here < index:
                # events that do not wrap: their rows are their plain figures
                run_full, run_excess = plain_rows[here:index], plain_excess[here:index]
                if expand_all:
                    run_rows = run_full
                else:
                    run_rows = list(map(sub, run_full, run_excess))
                    for i in expanded:
                        if here <= i < index:
                            run_rows[i - here] = run_full[i - here]
                full.extend(run_full)
                excess.extend(run_excess)
                rows.extend(run_rows)
                ends.extend(islice(accumulate(run_rows, initial=ends[-1] if ends else 0), 1, None))
            if index == stop:
                break
            blocks = fresh.get(index) or event_blocks(self._known[index])
            event_rows = hidden = 0
            for block in blocks:
                n = 1 if block.kind == "rule" else count_lines(block.text, width)
                if block.foldable and n > FOLD_AT:
                    hidden += n - FOLD_AT
                event_rows += n
            full.append(event_rows)
            excess.append(hidden)
            shown = event_rows - hidden if hidden and not expand_all and index not in expanded else event_rows
            rows.append(shown)
            ends.append((ends[-1] if ends else 0) + shown)
            here = index + 1

    def _figure_upto(self, stop: int) -> dict[int, list[Block]]:
        """Width-independent figures of the known events up to `stop` not seen yet.

        Taken in bulk from the base's `figure_columns()` when it has them (see
        `Prefix`), else from each event. A wider step number than the step
        column holds widens the column and forgets the counts made so far.
        Returns the blocks made for events wider than the text column (they
        are wrapped next).
        """
        known, widest, plain_rows, plain_excess = self._known, self._widest, self._plain_rows, self._plain_excess
        fresh: dict[int, list[Block]] = {}
        digits = self._step_digits
        columns = getattr(known, "figure_columns", None) if self._base is not None else None
        if columns is not None and len(widest) < stop:
            col_widest, col_rows, col_excess, col_digits = columns()
            lo = len(widest)
            hi = min(stop, len(col_widest), len(col_rows), len(col_excess), len(col_digits))
            if lo < hi:
                widest.extend(col_widest[lo:hi])
                plain_rows.extend(col_rows[lo:hi])
                plain_excess.extend(col_excess[lo:hi])
                digits = max(digits, max(col_digits[lo:hi]))
        if len(widest) < stop:
            width = self._text_width()
            for index in range(len(widest), stop):
                event = known[index]
                if event.type == "decision" and len(str(event.step)) > digits:
                    digits = len(str(event.step))
                blocks = event_blocks(event)
                event_widest, event_rows, event_excess = _plain_figures(blocks)
                widest.append(event_widest)
                plain_rows.append(event_rows)
                plain_excess.append(event_excess)
                if event_widest > width:
                    fresh[index] = blocks
        if digits != self._step_digits:
            self._step_digits = digits
            self._forget_rows()
            fresh = {}
        return fresh

    def _forget_rows(self) -> None:
        self._full, self._excess, self._rows, self._ends = [], [], [], []
        self._header_rows, self._stream_rows = [], []
        self._row_cache.clear()

    def _relayout(self) -> None:
        """Forget every count and drawn row (the width or the step column changed)."""
        self._forget_rows()
        self._layout_width = self._pane_width()
        self._count_upto(self._shown)

    def _refold(self) -> None:
        """Recompute shown rows after a fold change (no re-wrapping)."""
        folded = self._folded
        self._rows = [f - e if e and folded(i) else f for i, (f, e) in enumerate(zip(self._full, self._excess))]
        self._ends = list(accumulate(self._rows))
        self._row_cache.clear()

    def _update(self) -> None:
        """Bring counts and the virtual size up to date, then follow or hold still."""
        if not self.is_mounted or self._pane_width() <= 0:
            return
        if self._layout_width != self._pane_width():
            self._relayout()
        else:
            self._count_upto(self._shown)
        self._ensure_edges()
        self.virtual_size = Size(self._pane_width(), self._total_rows())
        if self._follow:
            self._scroll_to_end()
        self.refresh()

    def _ensure_edges(self) -> None:
        if not self._header_rows and self._header is not None:
            self._header_rows = self._header_strips(self._header)
        if not self._stream_rows and self._stream_text:
            self._stream_rows = self._block_rows(Block("Thinking…", "stream", self._stream_text), None, None)

    def _events_rows(self) -> int:
        return self._ends[self._shown - 1] if self._shown else 0

    def _total_rows(self) -> int:
        return len(self._header_rows) + self._events_rows() + len(self._stream_rows)

    def _scroll_to_end(self) -> None:
        if self.is_mounted:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def on_mount(self) -> None:
        super().on_mount()
        self._update()

    def on_resize(self, event: events.Resize) -> None:
        self._update()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._follow = new_value >= self.max_scroll_y

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._row_cache.clear()
        self._header_rows, self._stream_rows = [], []

    # -- drawing -----------------------------------------------------------

    def _style(self, kind: str) -> Style:
        style = self._styles.get(kind)
        if style is None:
            base = self.rich_style
            if kind == "base":
                style = base
            else:
                style = base + self.get_component_rich_style(f"transcript--{kind}")
            self._styles[kind] = style
        return style

    def _strip(self, gutter: str, label: str, text: str, kind: str, first: bool, step: bool = False) -> Strip:
        digits = self._step_digits
        label_text = label.ljust(LABEL_WIDTH - 1)[: LABEL_WIDTH - 1] + " " if first else " " * LABEL_WIDTH
        segments = [
            Segment(gutter.rjust(digits) + " ", self._style("step") if step else self._style("base")),
            Segment(label_text, self._style(kind)),
            Segment(text, self._style(kind)),
        ]
        return Strip(segments).adjust_cell_length(self._pane_width(), self._style("base"))

    def _block_rows(self, block: Block, index: int | None, gutter: str | None) -> list[Row]:
        width = self._text_width()
        if block.kind == "rule":
            title = f"── {block.text} "
            line = title + "─" * max(0, self._pane_width() - cell_len(title))
            strip = Strip([Segment(line, self._style("rule"))]).adjust_cell_length(self._pane_width(), self._style("base"))
            return [Row(strip)]
        folded = block.foldable and index is not None and self._folded(index)
        lines = block_lines(block.text, width, FOLD_AT + 1 if folded else None)
        rows = []
        if folded and len(lines) > FOLD_AT:
            hidden = count_lines(block.text, width) - (FOLD_AT - 1)
            lines = lines[: FOLD_AT - 1]
        else:
            hidden = 0
        for n, line in enumerate(lines):
            first = n == 0
            step_gutter = gutter if first and gutter is not None else ""
            rows.append(Row(self._strip(step_gutter, block.label, line, block.kind, first, bool(step_gutter))))
        if hidden:
            rows.append(Row(self._strip("", "", fold_more_text(hidden), "fold", False), fold=True))
        return rows

    def _event_rows(self, index: int) -> list[Row]:
        rows = self._row_cache.get(index)
        if rows is None:
            event = self._known[index]
            gutter = str(event.step) if event.type == "decision" else None
            rows = []
            for block in event_blocks(event):
                rows.extend(self._block_rows(block, index, gutter))
                gutter = None
            self._row_cache[index] = rows
        return rows

    def _header_strips(self, header: Header) -> list[Row]:
        rows = self._block_rows(Block("Task", "header", _text(header.task_text)), None, None)
        system = header.options.get("system_prompt")
        if isinstance(system, str) and system.strip():
            text = _text(system.strip())
            width = self._text_width()
            total = count_lines(text, width)
            if total > SYSTEM_LINES:
                shown = block_lines(text, width, SYSTEM_LINES - 1)[: SYSTEM_LINES - 1]
                text = "\n".join(shown + [f"… {total - len(shown)} more lines (`agent-tui show` prints them all)"])
            rows += self._block_rows(Block("System", "header", text), None, None)
        if header.parent:
            forked = _text(fork_words(header))
            rows += self._block_rows(Block("Forked", "header", forked), None, None)
        return rows

    def _locate(self, row: int) -> tuple[str, int, int]:
        """Which part a content row belongs to: ("header"|"event"|"stream"|"", index, row within)."""
        head = len(self._header_rows)
        if row < head:
            return "header", 0, row
        row -= head
        events_rows = self._events_rows()
        if row < events_rows:
            index = bisect_right(self._ends, row, 0, self._shown)
            start = self._ends[index - 1] if index else 0
            return "event", index, row - start
        row -= events_rows
        if row < len(self._stream_rows):
            return "stream", 0, row
        return "", 0, 0

    def _row(self, row: int) -> Row | None:
        part, index, offset = self._locate(row)
        if part == "event":
            rows = self._event_rows(index)
            return rows[offset] if offset < len(rows) else None
        if part == "header":
            return self._header_rows[offset]
        if part == "stream":
            return self._stream_rows[offset]
        return None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self._layout_width != self._pane_width():
            self._update()
        self._ensure_edges()
        row = self._row(self.scroll_offset.y + y)
        if row is None:
            return Strip.blank(width, self._style("base"))
        return row.strip.crop_extend(0, width, self._style("base"))

    # -- folding -----------------------------------------------------------

    def action_toggle_folds(self) -> None:
        """Expand every folded observation, or fold them all again."""
        self._expand_all = not self._expand_all
        self._expanded.clear()
        self._refold_keeping_view()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        content_row = self.scroll_offset.y + offset.y
        row = self._row(content_row)
        if row is not None and row.fold:
            _, index, _ = self._locate(content_row)
            self._expanded.add(index)
            self._refold_keeping_view()

    def _refold_keeping_view(self) -> None:
        """Apply a fold change without moving the event at the top of the view."""
        part, index, offset = self._locate(self.scroll_offset.y)
        self._refold()
        self.virtual_size = Size(self._pane_width(), self._total_rows())
        if self._follow:
            self._scroll_to_end()
        elif part == "event":
            start = len(self._header_rows) + (self._ends[index - 1] if index else 0)
            self.scroll_to(y=start + min(offset, self._rows[index] - 1), animate=False)
        self.refresh()
