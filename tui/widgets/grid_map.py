"""A scenario's map beside the transcript: walls, the agent, the cells it visited,
the goal, and a planned path.

What to draw comes from the scenario's map hook (`Scenario.map`, see
`engine.core.scenario.MapPicture`), derived from the run's header and its
history, so the live cockpit and the replay viewer draw the same map from the
same events. The widget knows no scenario.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from rich.text import Text
from textual.widgets import Static

from engine.core.events import Header
from engine.core.scenario import Cell, MapPicture, Scenario

WALL, FREE, SEEN, PATH = "██", "· ", "░░", "∙∙"
Picture = Callable[[Sequence[Any], str], MapPicture]


def map_picture(scenario: Scenario | None, header: Header) -> Picture | None:
    """The scenario's map for this run, or None when it has none."""
    if scenario is None or scenario.map is None:
        return None
    try:
        return scenario.map(header)
    except (ValueError, KeyError, TypeError):
        return None


class GridMap(Static):
    """A map two cells wide per grid cell; rebuilt on `show_history`."""

    DEFAULT_CSS = """
    GridMap { height: auto; width: 100%; padding: 0 1; border: round $primary 60%; }
    """

    def __init__(self, picture: Picture, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.picture_of = picture
        self.picture = picture([], "")

    @property
    def cells(self) -> Sequence[Cell]:
        return self.picture.visited

    @property
    def path(self) -> Sequence[Cell]:
        return self.picture.path

    @property
    def goal(self) -> Cell:
        return self.picture.goal

    @property
    def at(self) -> Cell:
        return self.picture.visited[-1]

    def show_history(self, history: Iterable[Any], policy: str) -> None:
        """Draw the map after the steps in `history` (RunView/RunState history or events)."""
        self.picture = self.picture_of(list(history), policy)
        self.update(self.render_map())

    @property
    def narrow_width(self) -> int:
        """Columns the map needs, border and padding included (the status line is up to 20)."""
        return max(2 * self.picture.size, 20) + 4

    def on_resize(self) -> None:
        self.update(self.render_map())

    def window(self) -> tuple[range, range]:
        """The rows and columns drawn: all of them, or (a grid wider than the widget) a
        square around the agent, so a row never wraps into the next."""
        size = self.picture.size
        width = self.content_size.width
        side = size if width <= 0 else max(1, min(size, width // 2))
        (row, col), start = self.at, lambda at: max(0, min(at - side // 2, size - side))
        return range(start(row), start(row) + side), range(start(col), start(col) + side)

    def render_map(self) -> Text:
        picture = self.picture
        visited = set(picture.visited)
        path = set(picture.path)
        rows, cols = self.window()
        text = Text(no_wrap=True)
        for r in rows:
            for c in cols:
                p = (r, c)
                if p == self.at:
                    text.append("@@", style="bold reverse")
                elif p in picture.walls:
                    text.append(WALL, style="dim")
                elif p == picture.goal:
                    text.append("GG", style="bold green")
                elif p in path:
                    text.append(PATH, style="cyan")
                elif p in visited:
                    text.append(SEEN, style="yellow")
                else:
                    text.append(FREE, style="dim")
            text.append("\n")
        moves = len(picture.visited) - 1
        text.append(f"moves {moves} · at ({self.at[0]}, {self.at[1]})", style="dim")
        if len(cols) < picture.size:
            shown = f"rows {rows[0]}-{rows[-1]}, cols {cols[0]}-{cols[-1]} of {picture.size}"
            if 0 < self.content_size.width < len(shown):  # a narrow window: its line short, not wrapped
                shown = f"{rows[0]}-{rows[-1]} × {cols[0]}-{cols[-1]} of {picture.size}"
            text.append(f"\n{shown}", style="dim")
        if picture.path:
            text.append(f"\nplan {len(picture.path) - 1} to go", style="cyan")
        return text
