"""A footer that lists keys by what a user needs first and always shows help and quit.

Textual's Footer lists the focused widget's keys before the app's, so the
transcript pane's `o` came before `n step`, and at 80 columns the keys at the
end (`? help`, `q quit`) fell off the right edge. This footer orders the keys
by the app's list (`order`, by action name; keys not in it keep their place
after) and docks the `always` keys on the right, where they stay visible at
any width.
"""

from __future__ import annotations

from typing import Sequence

from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not re-exported; textual is pinned exactly

AlwaysKey = tuple[str, str, str, str]
"""(key, what the footer shows for it, description, action)."""

HELP_AND_QUIT: tuple[AlwaysKey, ...] = (
    ("question_mark", "?", "help", "help"),
    ("q", "q", "quit", "quit"),
)


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

    def compose(self) -> ComposeResult:
        always_actions = {action for _, _, _, action in self.always}
        keys = [widget for widget in super().compose() if isinstance(widget, FooterKey)]
        keys = [key for key in keys if key.action not in always_actions]
        last = len(self.order)
        keys.sort(key=lambda key: self.order.get(key.action, last))
        yield from keys
        with HorizontalGroup(id="always-keys"):
            for key, shown, description, action in self.always:
                yield FooterKey(key, shown, description, action).data_bind(compact=Footer.compact)
            if self.app.ENABLE_COMMAND_PALETTE:
                yield FooterKey("ctrl+p", "^p", "palette", "command_palette", classes="palette-key").data_bind(
                    compact=Footer.compact
                )
