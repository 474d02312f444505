"""The replay timeline: where the viewer is in the run, and its markers.

Line 1 is the run squeezed to the bar's width with a glyph for each marker
(A approval, R rejection or abort, ! error, P policy swap, $ budget, ■ end);
line 2 carries the cursor; line 3 says where and how fast, or shows the
question being asked there (`question`, tui/widgets/ask_line.py).
"""

from __future__ import annotations

from itertools import groupby
from typing import Sequence

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from engine.stored.markers import Marker

GLYPHS = {"approval": ("A", "bold yellow"), "rejection": ("R", "bold red"), "error": ("!", "bold red"),
          "policy_swap": ("P", "bold cyan"), "budget": ("$", "bold yellow"), "end": ("■", "bold")}
PRIORITY = ("end", "rejection", "error", "approval", "budget", "policy_swap")


class TimelineBar(Widget):
    DEFAULT_CSS = """
    TimelineBar { height: 3; padding: 0 1; }
    """

    total: reactive[int] = reactive(0)
    position: reactive[int] = reactive(0)
    markers: reactive[Sequence[Marker]] = reactive(())
    status: reactive[str] = reactive("")
    question: reactive[Text | None] = reactive(None)
    """The line shown instead of the status while a question is asked on it."""

    def show(self, *, position: int, total: int, markers: Sequence[Marker], status: str) -> None:
        self.position, self.total, self.markers, self.status = position, total, markers, status

    def column(self, position: int, width: int) -> int:
        if self.total <= 0 or width <= 1:
            return 0
        return min(width - 1, round(position * (width - 1) / self.total))

    def marker_cells(self, width: int) -> list[tuple[str, str]]:
        """Line 1 as (glyph, style) per cell: the strongest marker in each column."""
        cells: list[tuple[str, str]] = [("─", "dim")] * width
        best: dict[int, str] = {}
        for marker in self.markers:
            col = self.column(marker.position, width)
            current = best.get(col)
            if current is None or PRIORITY.index(marker.kind) < PRIORITY.index(current):
                best[col] = marker.kind
        for col, kind in best.items():
            cells[col] = GLYPHS[kind]
        return cells

    def render(self) -> Text:
        width = max(10, self.size.width - 2)
        text = Text(no_wrap=True, overflow="crop")
        # One span per run of equal styles, not one per cell: a seek redraws this bar.
        for style, run in groupby(self.marker_cells(width), key=lambda cell: cell[1]):
            text.append("".join(glyph for glyph, _ in run), style=style)
        text.append("\n")
        cursor = self.column(self.position, width)
        text.append(" " * cursor + "▲", style="bold")
        text.append("\n")
        if self.question is not None:
            text.append_text(self.question)
            return text
        status = self.status
        if cell_len(status) > width:  # a long marker note: cut where it shows, not mid-word at the edge
            status = set_cell_size(status, width - 1) + "…"
        text.append(status)
        return text
