"""The transcript pane: every event of the run as styled lines, drawn on demand.

INTERFACE (the cockpit and the replay viewer use only this):

    pane = TranscriptPane(id="transcript")
    pane.reset(header, events)    # show exactly these events (a live run's Prefix of its log,
                                  # a replay seek, resume); follows the end unless
                                  # the operator has scrolled up
    pane.stream(text)             # the thought a model is streaming right now,
                                  # shown below the last event; cleared by the
                                  # next reset or by stream("")
    pane.event_count              # how many events are shown
    pane.follow                   # True while the pane sticks to the newest line

Untrusted text (thoughts, arguments, observations) is drawn as data: never
parsed as markup, control characters replaced (engine.core.text.clean).

How it stays fast at 100,000 events: a `RowIndex` (tui/widgets/rows.py)
keeps, for the current width, only the number of rows each event takes plus
a prefix sum of those counts. `render_line(y)` finds the event under a row by
bisection and draws that event's rows (kept in a small LRU cache). Appending
counts one event; a long run shown at once is counted from its tail, its
earlier events estimated at a row each and figured when they come on screen
or, `FILL_CHUNK` at a time, while the app is idle (the event at the top of
the view stays put); `reset()` with a list that shares a prefix with what the
pane has seen before (replay seek back and forth) reuses the counts it
already has. What an event says is `event_blocks` (tui/widgets/blocks.py);
wrapping is tui/widgets/wrap.py.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.timer import Timer

from engine.core.describe import Block, fork_words
from engine.core.events import Event, Header
from tui.keys import key_binding
from tui.widgets.blocks import FOLD_AT, event_blocks, event_figures, safe_text
from tui.widgets.scrollbar import RowCachedScrollBar
from tui.widgets.rows import LABEL_WIDTH, FigureColumns, Prefix, RowIndex
from tui.widgets.wrap import block_lines, count_lines

__all__ = ["FigureColumns", "Prefix", "TranscriptPane", "event_figures"]


SYSTEM_LINES = 8
"""The system prompt's rows at the top of the pane, at most."""
FILL_CHUNK = 250
"""Estimated events figured at a time while the app is idle (about 10 ms of work)."""
FILL_EVERY = 0.02
"""Seconds between two chunks: the app answers keys in between."""
VIEW_MARGIN = 8
"""Events figured either side of those on screen."""


class Row(NamedTuple):
    strip: Strip
    fold: bool = False


def fold_more_text(hidden: int) -> str:
    return f"… {hidden} more lines (o to expand)"


class TranscriptPane(ScrollView, can_focus=True):
    """The run's events as styled rows: step number, label, soft-wrapped text."""

    ALLOW_SELECT = False

    BINDINGS = [key_binding("toggle_folds")]

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
        self.index = RowIndex()
        self._layout_width: int | None = None
        self._header_rows: list[Row] = []
        self._stream_text = ""
        self._stream_rows: list[Row] = []
        self._row_cache: LRUCache[int, list[Row]] = LRUCache(512)
        self._styles: dict[str, Style] = {}
        self._follow = True
        self._drawing = False
        """True while `render_lines` draws rows whose width it has checked."""
        self._figuring = False
        self._filler: Timer | None = None
        """Figures the estimated events a chunk at a time, while there are any."""

    # -- the interface -----------------------------------------------------

    @property
    def event_count(self) -> int:
        return self.index.shown

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
        forgets = self.index.forgets
        self.index.show(events)
        if self.index.forgets != forgets:
            self._row_cache.clear()
        self._update()

    def stream(self, text: str) -> None:
        """Show `text` as the thought being streamed now ("" clears it)."""
        self._stream_text = safe_text(text)
        self._stream_rows = []
        self._update()

    # -- layout ------------------------------------------------------------

    def _text_width(self) -> int:
        return self.index.text_width(self._row_width())

    def _row_width(self) -> int:
        """The width rows are drawn at: the pane's at the last layout (`render_line`
        lays out again first when it changed), read once, not per strip."""
        return self._layout_width if self._layout_width is not None else self._pane_width()

    def _pane_width(self) -> int:
        return self.scrollable_content_region.width

    def _count(self) -> None:
        if self.index.count(self._pane_width()):
            self._forget_drawn()

    def _forget_drawn(self) -> None:
        self._header_rows, self._stream_rows = [], []
        self._row_cache.clear()

    def _relayout(self) -> None:
        """Forget every count and drawn row (the width changed)."""
        self.index.forget_rows()
        self._forget_drawn()
        self._layout_width = self._pane_width()
        self._count()

    def _update(self) -> None:
        """Bring counts and the virtual size up to date, then follow or hold still."""
        if not self.is_mounted or self._pane_width() <= 0:
            return
        if self._layout_width != self._pane_width():
            self._relayout()
        else:
            self._count()
        self._ensure_edges()
        self._set_virtual_size(Size(self._pane_width(), self._total_rows()))
        if self._follow:
            self._scroll_to_end()
        self._figure_view()
        if self.index.estimated and self._filler is None:
            self._filler = self.set_interval(FILL_EVERY, self._fill, name="figure rows")
        self.refresh()

    def _figure_view(self) -> None:
        """Figure the estimated events on screen (and a margin either side)."""
        index = self.index
        if not index.estimated or self._figuring or not index.shown:
            return
        head, height = len(self._header_rows), self.scrollable_content_region.height
        for _ in range(4):  # an estimate is never more rows than figured: few rounds
            top = max(0, min(self.scroll_offset.y - head, index.total() - 1))
            first, _ = index.locate(top)
            last, _ = index.locate(min(top + height, index.total() - 1))
            lo, hi = first - VIEW_MARGIN, last + VIEW_MARGIN + 1
            if index.exact.find(0, max(0, lo), min(hi, index.shown)) < 0:
                return
            self._figure_keeping_view(lo, hi)

    def _fill(self) -> None:
        """Figure the next chunk of estimated events, from the newest down."""
        stop = self.index.estimated_below(self.index.shown) + 1
        if stop <= 0 or self._pane_width() <= 0:
            if self._filler is not None:
                self._filler.stop()
                self._filler = None
            return
        self._figure_keeping_view(stop - FILL_CHUNK, stop)  # a scroll that keeps the view redraws it

    def _figure_keeping_view(self, lo: int, hi: int) -> None:
        """Figure events lo..hi-1 and keep the row at the top of the view where it is
        (or the end in view, when following)."""
        part, at, offset = self._locate(self.scroll_offset.y)
        self._figuring = True
        try:
            if self.index.figure(lo, hi, self._row_width()):
                self._forget_drawn()
                self._ensure_edges()
            self._set_virtual_size(Size(self._pane_width(), self._total_rows()))
            if self._follow:
                self._scroll_to_end()
            elif part == "event":
                y = len(self._header_rows) + self.index.start_of(at) + min(offset, self.index.rows[at] - 1)
                self.scroll_to(y=y, animate=False, immediate=True)
        finally:
            self._figuring = False

    def _set_virtual_size(self, size: Size) -> None:
        """The scrollable size, without a layout of the screen.

        The pane's own region does not depend on how many rows it holds (its
        vertical scrollbar is always shown), so a new row count needs the
        scrollbar told and the scroll position clamped, not the whole screen
        laid out again and drawn twice (`virtual_size` is a layout reactive).
        """
        if size == self.virtual_size:
            return
        self.set_reactive(TranscriptPane.virtual_size, size)
        bar = self.vertical_scrollbar
        bar.window_virtual_size = size.height
        bar.window_size = self.container_size.height - self.scrollbar_size_horizontal
        self.scroll_y = self.scroll_y  # clamped by validate_scroll_y

    def _ensure_edges(self) -> None:
        if not self._header_rows and self._header is not None:
            self._header_rows = self._header_strips(self._header)
        if not self._stream_rows and self._stream_text:
            self._stream_rows = self._block_rows(Block("Thinking…", "stream", self._stream_text), None, None)

    def _events_rows(self) -> int:
        return self.index.total()

    def _total_rows(self) -> int:
        return len(self._header_rows) + self._events_rows() + len(self._stream_rows)

    def _scroll_to_end(self) -> None:
        if self.is_mounted:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def on_mount(self) -> None:
        super().on_mount()
        self._update()

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Textual's scrollbar, made as `Widget.vertical_scrollbar` makes it, of a class that
        keeps its rows' strips (tui/widgets/scrollbar.py): a seek moves the thumb every frame."""
        if self._vertical_scrollbar is None:
            bar = RowCachedScrollBar(vertical=True, name="vertical", thickness=self.scrollbar_size_vertical)
            bar.display = False
            self._vertical_scrollbar = bar
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar

    def on_resize(self, event: events.Resize) -> None:
        self._update()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if not self._figuring:
            self._follow = new_value >= self.max_scroll_y
            self._figure_view()

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
        digits = self.index.step_digits
        label_text = label.ljust(LABEL_WIDTH - 1)[: LABEL_WIDTH - 1] + " " if first else " " * LABEL_WIDTH
        head = gutter.rjust(digits) + " "
        segments = [
            Segment(head, self._style("step") if step else self._style("base")),
            Segment(label_text, self._style(kind)),
            Segment(text, self._style(kind)),
        ]
        width = self._row_width()
        cells = cell_len(head) + cell_len(label_text) + cell_len(text)
        if cells > width:
            return Strip(segments).adjust_cell_length(width, self._style("base"))
        if cells < width:  # padded here: one strip a row, not a short one and its padded copy
            segments.append(Segment(" " * (width - cells), self._style("base")))
        return Strip(segments, width)

    def _block_rows(self, block: Block, index: int | None, gutter: str | None) -> list[Row]:
        width = self._text_width()
        if block.kind == "rule":
            title = f"── {block.text} "
            width = self._row_width()
            line = title + "─" * max(0, width - cell_len(title))
            strip = Strip([Segment(line, self._style("rule"))]).adjust_cell_length(width, self._style("base"))
            return [Row(strip)]
        folded = block.foldable and index is not None and self.index.folded(index)
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
            event = self.index.known[index]
            gutter = str(event.step) if event.type == "decision" else None
            rows = []
            for block in event_blocks(event):
                rows.extend(self._block_rows(block, index, gutter))
                gutter = None
            self._row_cache[index] = rows
        return rows

    def _header_strips(self, header: Header) -> list[Row]:
        rows = self._block_rows(Block("Task", "header", safe_text(header.task_text)), None, None)
        system = header.options.get("system_prompt")
        if isinstance(system, str) and system.strip():
            text = safe_text(system.strip())
            width = self._text_width()
            total = count_lines(text, width)
            if total > SYSTEM_LINES:
                shown = block_lines(text, width, SYSTEM_LINES - 1)[: SYSTEM_LINES - 1]
                text = "\n".join(shown + [f"… {total - len(shown)} more lines (`agent-tui show` prints them all)"])
            rows += self._block_rows(Block("System", "header", text), None, None)
        if header.parent:
            forked = safe_text(fork_words(header))
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
            index, offset = self.index.locate(row)
            return "event", index, offset
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

    def render_lines(self, crop: Region) -> list[Strip]:
        """The rows of `crop`, the pane's width checked once for all of them."""
        self._check_width()
        self._drawing = True
        try:
            return super().render_lines(crop)
        finally:
            self._drawing = False

    def _check_width(self) -> None:
        if self._layout_width != self._pane_width():
            self._update()
        self._ensure_edges()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if not self._drawing:
            self._check_width()
        row = self._row(self.scroll_offset.y + y)
        if row is None:
            return Strip.blank(width, self._style("base"))
        return row.strip.crop_extend(0, width, self._style("base"))

    # -- folding -----------------------------------------------------------

    def action_toggle_folds(self) -> None:
        """Expand every folded observation, or fold them all again."""
        self.index.expand_all = not self.index.expand_all
        self.index.expanded.clear()
        self._refold_keeping_view()

    def reveal(self, index: int, needle: str) -> None:
        """Unfold event `index` and scroll to its first row that shows `needle` (case
        ignored; the event's first row when a wrap splits it): a search hit folded
        away under "… more lines" was out of sight."""
        if not 0 <= index < self.index.shown or self._pane_width() <= 0:
            return
        self._figure_keeping_view(index - VIEW_MARGIN, index + VIEW_MARGIN + 1)
        if self.index.folded(index):
            self.index.expanded.add(index)
            self.index.refold()
            self._row_cache.clear()
            self._set_virtual_size(Size(self._pane_width(), self._total_rows()))
        rows = self._event_rows(index)
        wanted = needle.lower()
        offset = next((n for n, row in enumerate(rows) if wanted in row.strip.text.lower()), 0)
        start = len(self._header_rows) + self.index.start_of(index)
        self.scroll_to(y=max(0, start + offset - 2), animate=False, immediate=True)
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        content_row = self.scroll_offset.y + offset.y
        row = self._row(content_row)
        if row is not None and row.fold:
            _, index, _ = self._locate(content_row)
            self.index.expanded.add(index)
            self._refold_keeping_view()

    def _refold_keeping_view(self) -> None:
        """Apply a fold change without moving the event at the top of the view."""
        part, index, offset = self._locate(self.scroll_offset.y)
        self.index.refold()
        self._row_cache.clear()
        self._set_virtual_size(Size(self._pane_width(), self._total_rows()))
        if self._follow:
            self._scroll_to_end()
        elif part == "event":
            start = len(self._header_rows) + self.index.start_of(index)
            self.scroll_to(y=start + min(offset, self.index.rows[index] - 1), animate=False)
        self.refresh()
