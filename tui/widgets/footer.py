"""A footer that lists keys by what a user needs first, shows only keys it can draw
whole, and always shows help and quit.

Textual's Footer lists the focused widget's keys before the app's, and lays
every key out in one row that scrolls, invisibly, past the right edge: at 80
columns the last keys were cut mid-word (`o expa`, `p pol`) under the keys docked
on the right. This footer orders the keys by the app's list (`order`, by action
name; keys not in it keep their place after), docks the `always` keys on the
right, where they stay visible at any width, and leaves out each key that would
not fit whole in the columns left of them (help, `?`, lists every key). It lays
itself out again when its width changes.
"""

from __future__ import annotations

from typing import Sequence

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not re-exported; textual is pinned exactly

AlwaysKey = tuple[str, str, str, str]
"""(key, what the footer shows for it, description, action)."""

HELP_AND_QUIT: tuple[AlwaysKey, ...] = (
    ("question_mark", "?", "help", "help"),
    ("q", "q", "quit", "quit"),
)
PALETTE: AlwaysKey = ("ctrl+p", "^p", "palette", "command_palette")


def key_width(key_display: str, description: str) -> int:
    """Columns a FooterKey takes in the footer's normal (not compact) style: the key
    padded by one on each side, then the description and one space."""
    return cell_len(key_display) + 2 + (cell_len(description) + 1 if description else 0)


class CockpitFooter(Footer):
    DEFAULT_CSS = """
    CockpitFooter #always-keys {
        dock: right;
        width: auto;
        height: 1;
        padding-left: 1;
    }
    """

    def __init__(self, order: Sequence[str], always: Sequence[AlwaysKey]) -> None:
        super().__init__(show_command_palette=False)
        self.order = {action: n for n, action in enumerate(order)}
        self.always = list(always)
        self.laid_out_for = 0
        """The width the keys were chosen for (0: not yet)."""

    def _palette_shown(self) -> bool:
        """The palette key shows in the wide layout only (the stylesheet hides it in the narrow one)."""
        return self.app.ENABLE_COMMAND_PALETTE and not self.screen.has_class("-narrow")

    def compose(self) -> ComposeResult:
        width = self.size.width or self.app.size.width
        self.laid_out_for = width
        always_actions = {action for _, _, _, action in self.always}
        keys = [widget for widget in super().compose() if isinstance(widget, FooterKey)]
        keys = [key for key in keys if key.action not in always_actions]
        last = len(self.order)
        keys.sort(key=lambda key: self.order.get(key.action, last))
        always = [*self.always, *([PALETTE] if self._palette_shown() else [])]
        room = width - 1 - sum(key_width(shown, description) for _, shown, description, _ in always)
        for key in keys:
            needed = key_width(key.key_display, key.description)
            if needed <= room:
                room -= needed
                yield key
        with HorizontalGroup(id="always-keys"):
            for key, shown, description, action in self.always:
                yield FooterKey(key, shown, description, action).data_bind(compact=Footer.compact)
            if self.app.ENABLE_COMMAND_PALETTE:
                key, shown, description, action = PALETTE
                yield FooterKey(key, shown, description, action, classes="palette-key").data_bind(compact=Footer.compact)

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self.laid_out_for:
            self.call_after_refresh(self.recompose)
