"""The grid scenario's map: walls, the agent, the cells it visited, the goal, and
the planner's path when the planner drives.

Everything is derived from the run's header (size, density, seed, grid number)
and its move observations, so the live cockpit and the replay viewer draw the
same map from the same events.
"""

from __future__ import annotations

from typing import Any, Iterable

from rich.text import Text
from textual.widgets import Static

from engine.core.events import Header

WALL, FREE, SEEN, PATH = "██", "· ", "░░", "∙∙"


class GridMap(Static):
    """A map two cells wide per grid cell; rebuilt on `show_history`."""

    DEFAULT_CSS = """
    GridMap { height: auto; width: 100%; padding: 0 1; border: round $primary 60%; }
    """

    def __init__(self, header: Header, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        from scenarios import grid

        self._grid = grid
        self.walls, self.grid_size = grid.walls_for(header.task, header.options)
        self.goal = grid.goal_of(self.grid_size)
        self.cells: list[tuple[int, int]] = [(0, 0)]
        self.path: list[tuple[int, int]] = []

    @staticmethod
    def applies(header: Header) -> bool:
        """True for a grid run whose map can be rebuilt from the header."""
        if header.scenario != "grid":
            return False
        try:
            from scenarios import grid

            grid.walls_for(header.task, header.options)
        except (ValueError, KeyError, TypeError):
            return False
        return True

    def show_history(self, history: Iterable[Any], policy: str) -> None:
        """Draw the map after the steps in `history` (RunView/RunState history or events)."""
        self.cells = self._grid.positions(history)
        at = self.cells[-1]
        self.path = []
        if policy == "planner" and at != self.goal:
            self.path = self._grid.bfs_path(self.walls, self.grid_size, start=at) or []
        self.update(self.render_map())

    @property
    def narrow_width(self) -> int:
        """Columns the map needs, border and padding included (the status line is up to 20)."""
        return max(2 * self.grid_size, 20) + 4

    @property
    def at(self) -> tuple[int, int]:
        return self.cells[-1]

    def render_map(self) -> Text:
        visited = set(self.cells)
        path = set(self.path)
        text = Text(no_wrap=True)
        for r in range(self.grid_size):
            for c in range(self.grid_size):
                p = (r, c)
                if p == self.at:
                    text.append("@@", style="bold reverse")
                elif p in self.walls:
                    text.append(WALL, style="dim")
                elif p == self.goal:
                    text.append("GG", style="bold green")
                elif p in path:
                    text.append(PATH, style="cyan")
                elif p in visited:
                    text.append(SEEN, style="yellow")
                else:
                    text.append(FREE, style="dim")
            text.append("\n")
        moves = len(self.cells) - 1
        text.append(f"moves {moves} · at ({self.at[0]}, {self.at[1]})", style="dim")
        if self.path:
            text.append(f"\nplan {len(self.path) - 1} to go", style="cyan")
        return text
