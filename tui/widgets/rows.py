"""How many rows each event of the transcript pane takes, kept by index.

`RowIndex` owns the per-event lists the pane draws from: each event's
width-independent figures (its widest paragraph, rows and foldable excess
when nothing wraps), its rows unfolded and folded at the current text width,
and their prefix sums, so the pane finds the event under a row by bisection.
A width change re-wraps only the events with a paragraph wider than the text
column; runs of narrower events are counted in bulk.

A long run shown at once (a resume, a seek far ahead) is figured from its
tail: the last `EXACT_TAIL` events exactly, every earlier one estimated at
one row (no event takes fewer) until `figure` reads it, which the pane does
for what comes on screen and, a chunk at a time, for the rest while idle.
Only the scrollbar is approximate until then.

`Prefix` is how a viewer hands the pane the first n events of a long,
lazily read run without a list of them; `FigureColumns` carries the figures
of events counted elsewhere (the replay index pass) so the pane need not
read those events again.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from itertools import accumulate, compress, islice
from operator import is_, sub
from typing import Sequence

from engine.core.events import Event
from engine.core.describe import Block
from tui.widgets.blocks import FOLD_AT, event_blocks, event_figures, plain_figures
from tui.widgets.wrap import count_lines

LABEL_WIDTH = 10
MIN_TEXT_WIDTH = 12
EXACT_TAIL = 256
"""Events figured exactly when more than this many are shown at once; the earlier ones are estimated."""


class FigureColumns:
    """`event_figures` of events 0, 1, 2... in order, as four columns: widest, rows, excess, digits."""

    def __init__(self) -> None:
        self.columns: tuple[array, array, array, array] = (array("l"), array("l"), array("l"), array("l"))

    def __len__(self) -> int:
        return len(self.columns[3])

    def note(self, index: int, event: Event) -> None:
        """Add event `index` if it is the next one (a hook for an index pass)."""
        if index == len(self):
            for column, value in zip(self.columns, event_figures(event)):
                column.append(value)


class Prefix(Sequence):
    """The first `stop` events of `base`, an append-only sequence read by index.

    The pane keeps its counts by index and reuses them for any Prefix of the
    same base, and reads an event only to count it (unless `figures` already
    has its figures) or to draw it. Nothing holds all the events.
    """

    __slots__ = ("base", "stop", "figures")

    def __init__(self, base: Sequence[Event], stop: int, figures: FigureColumns | None = None) -> None:
        self.base = base
        self.stop = stop
        self.figures = figures

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


class RowIndex:
    """Rows per event for the events a pane shows (see the module docstring)."""

    def __init__(self) -> None:
        self.known: Sequence[Event] = []
        """Events seen, a prefix of which is shown (kept for cheap seeks): a list,
        or the base of the last `Prefix` given to `show`."""
        self.base: Sequence[Event] | None = None
        self.figures: FigureColumns | None = None
        self.shown = 0
        self.full: list[int] = []
        """Rows each counted event takes unfolded, at the counted width."""
        self.excess: list[int] = []
        """Rows folding hides for each counted event (0: nothing to fold)."""
        self.widest: list[int] = []
        """Cells in each known event's widest paragraph (rules count as 0)."""
        self.plain_rows: list[int] = []
        self.plain_excess: list[int] = []
        """Rows and foldable excess of each known event when nothing wraps."""
        self.exact = bytearray()
        """1 for each known event figured from its blocks, 0 for one estimated at a row."""
        self.estimated = 0
        """How many known events are estimated (0 in `exact`)."""
        self.rows: list[int] = []
        self.ends: list[int] = []
        """Prefix sums of `rows`: event i covers rows [ends[i-1], ends[i])."""
        self.step_digits = 3
        self.expand_all = False
        self.expanded: set[int] = set()
        self.forgets = 0
        """How many times counts were forgotten: a drawn row is stale once this moves."""

    # -- which events ------------------------------------------------------

    def show(self, events: Sequence[Event]) -> None:
        """Show exactly `events`; counts for a shared prefix of earlier events are kept."""
        base = events.base if isinstance(events, Prefix) else None
        if base is not None or self.base is not None:
            if base is not self.base:
                if self.base is not None or self.known:
                    self.forget_from(0)
                self.base = base
                self.known = base if base is not None else []
            if base is not None:
                # counts are kept by index: every Prefix of one base shares them
                self.figures = events.figures if isinstance(events, Prefix) else None
                self.shown = len(events)
                return
        self.figures = None
        known = self.known
        assert isinstance(known, list)
        n = len(events)
        common = min(n, len(known))
        if not all(map(is_, events[:common], known[:common])):
            common = next(i for i, (a, b) in enumerate(zip(events, known)) if a is not b)
        if common < len(known) and common < n:
            self.forget_from(common)
        known.extend(events[len(known) :])
        self.shown = n

    def forget_from(self, index: int) -> None:
        self.forgets += 1
        if isinstance(self.known, list):
            del self.known[index:]
        del self.full[index:], self.excess[index:], self.rows[index:], self.ends[index:]
        del self.widest[index:], self.plain_rows[index:], self.plain_excess[index:]
        del self.exact[index:]
        self.estimated = self.exact.count(0)
        self.expanded = {i for i in self.expanded if i < index}

    def forget_rows(self) -> None:
        """Forget the counts made at a width (the width or the step column changed).

        The lists are emptied, not replaced: the counts of a long run are long-lived
        lists that a viewer's collector has already aged; new ones would be walked
        by the next young collections again (200,000 items at 50,000 events)."""
        del self.full[:], self.excess[:], self.rows[:], self.ends[:]

    # -- widths and counts ---------------------------------------------------

    def text_x(self) -> int:
        return self.step_digits + 1 + LABEL_WIDTH

    def text_width(self, pane_width: int) -> int:
        return max(MIN_TEXT_WIDTH, pane_width - self.text_x())

    def folded(self, index: int) -> bool:
        return not self.expand_all and index not in self.expanded

    def count(self, pane_width: int) -> bool:
        """Count rows for the shown events not counted yet; True when the step
        column widened and every count (and drawn row) had to be forgotten."""
        fresh, widened = self._figure_upto(self.shown, pane_width)
        first, stop = len(self.full), self.shown
        if first < stop:
            full, excess, rows = self._counts(first, stop, self.text_width(pane_width), fresh)
            self.full.extend(full)
            self.excess.extend(excess)
            self.rows.extend(rows)
            self.ends.extend(islice(accumulate(rows, initial=self.ends[-1] if self.ends else 0), 1, None))
        return widened

    def _counts(self, first: int, stop: int, width: int, fresh: dict[int, list[Block]]) -> tuple[list[int], list[int], list[int]]:
        """(rows unfolded, foldable excess, rows shown) of events first..stop-1 at text `width`."""
        widest, plain_rows, plain_excess = self.widest, self.plain_rows, self.plain_excess
        full: list[int] = []
        excess: list[int] = []
        rows: list[int] = []
        expand_all, expanded = self.expand_all, self.expanded
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
            if index == stop:
                break
            blocks = fresh.get(index) or event_blocks(self.known[index])
            event_rows = hidden = 0
            for block in blocks:
                n = 1 if block.kind == "rule" else count_lines(block.text, width)
                if block.foldable and n > FOLD_AT:
                    hidden += n - FOLD_AT
                event_rows += n
            full.append(event_rows)
            excess.append(hidden)
            rows.append(event_rows - hidden if hidden and not expand_all and index not in expanded else event_rows)
            here = index + 1
        return full, excess, rows

    def _figure_upto(self, stop: int, pane_width: int) -> tuple[dict[int, list[Block]], bool]:
        """Width-independent figures of the known events up to `stop` not seen yet.

        Taken in bulk from `figures` when the shown Prefix has them, else from
        each event: all of them when at most `EXACT_TAIL` are new, else the last
        `EXACT_TAIL`, the earlier ones estimated at a row each. A wider step
        number than the step column holds widens the column and forgets the
        counts made so far (then True). Returns the blocks made for events
        wider than the text column (they are wrapped next).
        """
        widest = self.widest
        fresh: dict[int, list[Block]] = {}
        digits = self.step_digits
        if self.figures is not None and len(widest) < stop:
            col_widest, col_rows, col_excess, col_digits = self.figures.columns
            lo = len(widest)
            hi = min(stop, len(col_widest), len(col_rows), len(col_excess), len(col_digits))
            if lo < hi:
                widest.extend(col_widest[lo:hi])
                self.plain_rows.extend(col_rows[lo:hi])
                self.plain_excess.extend(col_excess[lo:hi])
                self.exact.extend(b"\x01" * (hi - lo))
                digits = max(digits, max(col_digits[lo:hi]))
        lo = len(widest)
        if lo < stop:
            if stop - lo > EXACT_TAIL:
                guessed = stop - EXACT_TAIL - lo
                widest.extend([0] * guessed)
                self.plain_rows.extend([1] * guessed)
                self.plain_excess.extend([0] * guessed)
                self.exact.extend(bytes(guessed))
                self.estimated += guessed
                lo += guessed
            width = self.text_width(pane_width)
            self.exact.extend(b"\x01" * (stop - lo))
            for index in range(lo, stop):
                widest.append(0)
                self.plain_rows.append(1)
                self.plain_excess.append(0)
                digits = self._figure_one(index, width, fresh, digits)
        if digits != self.step_digits:
            self.step_digits = digits
            self.forget_rows()
            return {}, True
        return fresh, False

    def _figure_one(self, index: int, width: int, fresh: dict[int, list[Block]], digits: int) -> int:
        """Set the plain figures of known event `index` (its blocks into `fresh` when
        wider than `width`); the step digits with its step's."""
        event = self.known[index]
        if event.type == "decision" and len(str(event.step)) > digits:
            digits = len(str(event.step))
        blocks = event_blocks(event)
        self.widest[index], self.plain_rows[index], self.plain_excess[index] = plain_figures(blocks)
        if self.widest[index] > width:
            fresh[index] = blocks
        return digits

    def figure(self, lo: int, hi: int, pane_width: int) -> bool:
        """Figure the estimated events among lo..hi-1 and correct their counts and
        every later row; True when the step column widened (every count forgotten)."""
        exact = self.exact
        lo, hi = max(0, lo), min(hi, len(exact))
        first = exact.find(0, lo, hi)
        if first < 0:
            return False
        width = self.text_width(pane_width)
        fresh: dict[int, list[Block]] = {}
        digits = self.step_digits
        columns = self.figures.columns if self.figures is not None else None
        for index in range(first, hi):
            if exact[index]:
                continue
            if columns is not None and index < len(columns[3]):
                self.widest[index], self.plain_rows[index], self.plain_excess[index] = (c[index] for c in columns[:3])
                digits = max(digits, columns[3][index])
            else:
                digits = self._figure_one(index, width, fresh, digits)
            exact[index] = 1
            self.estimated -= 1
            last = index
        if digits != self.step_digits:
            self.step_digits = digits
            self.forget_rows()
            self.count(pane_width)
            return True
        stop = min(last + 1, len(self.full))
        if first < stop:
            self.full[first:stop], self.excess[first:stop], self.rows[first:stop] = self._counts(first, stop, width, fresh)
            self.ends[first:] = islice(accumulate(islice(self.rows, first, None), initial=self.start_of(first)), 1, None)
        return False

    def estimated_below(self, stop: int) -> int:
        """The last estimated event before `stop` (-1: none)."""
        return self.exact.rfind(0, 0, min(stop, len(self.exact)))

    def refold(self) -> None:
        """Recompute shown rows after a fold change (no re-wrapping)."""
        folded = self.folded
        self.rows = [f - e if e and folded(i) else f for i, (f, e) in enumerate(zip(self.full, self.excess))]
        self.ends = list(accumulate(self.rows))

    # -- finding rows --------------------------------------------------------

    def total(self) -> int:
        """Rows of the shown events."""
        return self.ends[self.shown - 1] if self.shown else 0

    def start_of(self, index: int) -> int:
        return self.ends[index - 1] if index else 0

    def locate(self, row: int) -> tuple[int, int]:
        """(event index, row within it) of an events row (0 <= row < total())."""
        index = bisect_right(self.ends, row, 0, self.shown)
        return index, row - self.start_of(index)
