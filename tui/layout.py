"""How the cockpit and the replay viewer fit the terminal: wide, narrow, or too small.

- Wide (when the transcript keeps `WIDE_TRANSCRIPT` columns): the transcript on
  the left, the side panels (tools, the grid map, budget) on the right, a share
  of the width (`side_width`: `SIDE_SHARE` of it, from `SIDE_MIN` to `SIDE_MAX`
  columns) so the transcript gets the rest (64 of 100 columns, 112 of 160).
- Narrow (80x24 is the case to get right): the tools and the budget fold into
  the two-line strip under the header (`tui.widgets.strip`), and the side keeps
  only the grid map, when one is drawn: whole when the transcript still gets
  `MIN_TRANSCRIPT` columns, else a window of it around the agent in what is left
  (at least `MAP_MIN_WIDTH`). The transcript always gets the rest.
- Too small (under `MIN_WIDTH` x `MIN_HEIGHT`): a screen that says so and how
  big the terminal must be; it goes away by itself when the terminal grows.
  Notifications raised meanwhile are not drawn over it; they show on the screen
  under it, if still current, once it goes.

The main screen carries the class `-narrow` in the narrow layout; the
stylesheet (`app.tcss`) does the rest.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.widgets.grid_map import GridMap

SIDE_SHARE = 0.3
SIDE_MIN = 36
"""Columns the side panels draw whole in (a tool row drops its kind column under 47)."""
SIDE_MAX = 48
WIDE_TRANSCRIPT = 64
"""Columns of the transcript pane beside the side panels: under that, the narrow layout."""
MIN_TRANSCRIPT = 50
"""Columns of the transcript pane, borders included, that every layout keeps."""
MIN_WIDTH = 60
MIN_HEIGHT = 16
MAP_MIN_WIDTH = 24
"""Columns of the narrow layout's map panel, border and padding included, under which it is
left out: its status line (`moves 12 · at (3, 4)`) is up to 20."""


def too_small_text(size: Size) -> Text:
    text = Text(f"terminal too small: needs at least {MIN_WIDTH}x{MIN_HEIGHT}", style="bold")
    text.append(f"\nthis one is {size.width}x{size.height}; make it larger, or press q to quit", style="not bold")
    return text


class TooSmallScreen(ModalScreen[None]):
    """Covers everything while the terminal is under the minimum size; only q works."""

    DEFAULT_CSS = """
    TooSmallScreen {
        align: center middle;
        background: $background;
    }
    TooSmallScreen ToastHolder {
        display: none;  /* a notification waits for the cockpit: at 40x10 it covered this notice */
    }
    TooSmallScreen #too-small {
        color: $foreground;
        width: 100%;
        height: auto;
        text-align: center;
    }
    """
    BINDINGS = [Binding("q", "app.quit", "quit")]

    def __init__(self, size: Size) -> None:
        super().__init__()
        self.shown_size = size

    def compose(self) -> ComposeResult:
        yield Static(too_small_text(self.shown_size), id="too-small", markup=False)

    def show_size(self, size: Size) -> None:
        self.shown_size = size
        self.query_one("#too-small", Static).update(too_small_text(size))


def side_width(width: int) -> int:
    """Columns of the side panels in the wide layout of a terminal `width` columns wide."""
    return max(SIDE_MIN, min(SIDE_MAX, round(width * SIDE_SHARE)))


def fit(app: App[object], size: Size) -> bool:
    """Choose the layout for a terminal of `size`; show or drop the too-small screen.
    True when it dropped it (the terminal grew back to a usable size)."""
    main = app.screen_stack[0]
    side = side_width(size.width)
    narrow = size.width - side < WIDE_TRANSCRIPT
    main.set_class(narrow, "-narrow")
    if narrow:
        maps = list(main.query(GridMap))
        side = maps[0].narrow_width if maps else 0
        room = size.width - MIN_TRANSCRIPT
        if side > room:  # a grid too wide for it whole: a window of it (`GridMap.window`), if one fits
            side = room if room >= MAP_MIN_WIDTH else 0
    for panel in main.query("#side"):
        panel.display = side > 0
        panel.styles.width = side or None
    covers = [screen for screen in app.screen_stack if isinstance(screen, TooSmallScreen)]
    if size.width < MIN_WIDTH or size.height < MIN_HEIGHT:
        if covers:
            covers[-1].show_size(size)
        else:
            app.push_screen(TooSmallScreen(size))
    elif covers and app.screen is covers[-1]:
        app.pop_screen()
        return True
    return False
