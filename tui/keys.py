"""Keys written once for several screens: the answers to a call waiting for approval, Ctrl+C.

The cockpit, the gateway's screen and the approval dialog answer with the
same four keys; they are written once here so that the three cannot drift.
"""

from __future__ import annotations

from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding
from textual.widgets import Input, TextArea

APPROVAL_KEYS = (
    ("a", "approve", "approve"),
    ("A", "approve_always", "approve always"),
    ("r", "reject", "reject"),
    ("e", "edit", "edit"),
)
"""(key, choice, footer word) for each answer to a pending call."""


def approval_bindings(action: str = "{}") -> list[Binding]:
    """The approval keys bound to `action` with the choice put in its `{}`."""
    return [Binding(key, action.format(choice), word) for key, choice, word in APPROVAL_KEYS]


QUIT_ON_CTRL_C = Binding("ctrl+c", "ctrl_c", "quit", show=False, priority=True)
"""Ctrl+C quits as q does (Textual's own only says "press ctrl+q"), over dialogs too; the
app's `action_ctrl_c` is `quit_or_copy`."""


async def quit_or_copy(app: App[object]) -> None:
    """Ctrl+C: copy where text is selected (the focused input's, or the screen's), as in
    Textual; otherwise the app's quit, as q."""
    focused = app.focused
    if (isinstance(focused, (Input, TextArea)) and focused.selected_text) or app.screen.get_selected_text():
        raise SkipAction()  # the key goes on to the input's or the screen's copy
    await app.action_quit()
