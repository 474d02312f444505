"""The cockpit's bindings, from the one keys table (`tui.cockpit_actions.KEYS`), and Ctrl+C.

The cockpit (any run's, the gateway's) and the approval dialog answer with
the same four keys; the footer, the help dialog, the palette and the
headless prompt list them from the same table, so none can drift.
"""

from __future__ import annotations

from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding
from textual.widgets import Input, TextArea

from tui.cockpit_actions import APPROVAL_ANSWERS, KEYS, key_of

APPROVAL_KEYS = tuple((key_of(action).keys[0], action, key_of(action).word) for action in APPROVAL_ANSWERS)
"""(key, choice, footer word) for each answer to a pending call."""


def approval_bindings(action: str = "{}") -> list[Binding]:
    """The approval keys bound to `action` with the choice put in its `{}`."""
    return [Binding(key, action.format(choice), word) for key, choice, word in APPROVAL_KEYS]


def key_binding(action: str) -> Binding:
    """The binding of the table's row for `action` (a key bound where the row says: the
    transcript pane's `o`, the approval dialog's `d`)."""
    row = key_of(action)
    return Binding(row.keys[0], row.action, row.word)


def cockpit_bindings() -> list[Binding]:
    """The cockpit's bindings: each key of the table's rows bound in the cockpit (Ctrl+C as
    `QUIT_ON_CTRL_C`), shown in the footer as the row says."""
    bindings: list[Binding] = []
    for row in KEYS:
        if row.bound != "cockpit":
            continue
        shown = row.shown or (True, *(False,) * (len(row.keys) - 1))
        for key, show in zip(row.keys, shown):
            if key == "ctrl+c":
                bindings.append(QUIT_ON_CTRL_C)
            else:
                bindings.append(Binding(key, row.action, row.word, show=show))
    return bindings


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
