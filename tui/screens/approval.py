"""The approval modal: what the engine wants to run, why it paused, and the operator's answer.

Approval takes an explicit `a` (or a click on Approve): no button here takes
focus, so Enter can never approve an irreversible action. The modal returns
an `Answer` (approve, approve always), an `ApprovalForm` (reject and edit: the
app asks for the reason or the new arguments), or None when the operator
dismisses it to look at the run first (the same keys work on the main screen).
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from engine.core.answers import Answer
from engine.core.edits import EDIT_TOOLS, EditPreview, EditTool, edit_preview
from engine.core.state import PendingApproval
from engine.core.text import clean, visible
from tui.keys import approval_bindings, key_binding
from tui.widgets.diff_view import DiffView

class ApprovalForm(Enum):
    """An answer the dialog cannot give on its own: a form asks for what it needs."""

    REJECT = "reject"
    EDIT = "edit"


ApprovalResult = Answer | ApprovalForm
"""What the dialog is dismissed with, None aside."""

CHOICES: dict[str, ApprovalResult] = {
    "approve": Answer.approve(),
    "approve_always": Answer.approve_always(),
    "reject": ApprovalForm.REJECT,
    "edit": ApprovalForm.EDIT,
}
"""The dialog's keys and buttons (by action name) and what each is dismissed with."""


class KeyButton(Button, can_focus=False):
    """A button that is clicked or reached by its key, never by Enter."""


def args_text(args: dict[str, Any]) -> Text:
    """Every argument in full: strings as they are, other values as JSON; a control character
    is shown as an escape (`visible`), never dropped with what follows it."""
    text = Text()
    if not args:
        text.append("(no arguments)", style="dim")
        return text
    for n, (name, value) in enumerate(args.items()):
        if n:
            text.append("\n")
        text.append(visible(str(name)), style="bold")
        text.append(" = ")
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
        text.append(visible(shown))
    return text


COMPACT_BELOW = (80, 20)
"""Terminal width and height under which the dialog's buttons are one line each, in two
rows, and its padding goes (60x16 shows the title, the arguments and every button)."""

LEAVING_KEYS = (("p", "pick_policy"), ("x", "abort"), ("s", "save"), ("q", "quit"))
"""Cockpit keys the footer shows under the dialog: each closes it (the approval stays
pending; `v` shows it again) and does what it does in the cockpit."""


class ApprovalScreen(ModalScreen[ApprovalResult | None]):
    BINDINGS = [
        *approval_bindings("choose('{}')"),
        Binding("escape", "look", "look at the run"),
        key_binding("toggle_body"),
        Binding("question_mark", "app.help", "help"),
        *(Binding(key, f"leave('{action}')", action, show=False) for key, action in LEAVING_KEYS),
    ]

    showing_diff: var[bool] = var(False, init=False)
    """The body shows the file edit's diff (True) or the call's raw arguments; `d` switches."""

    def __init__(
        self, pending: PendingApproval, description: str, kind: str, edit_tools: tuple[EditTool, ...] = EDIT_TOOLS
    ) -> None:
        super().__init__()
        self.pending = pending
        self.description = description
        self.kind = kind
        self.preview: EditPreview | None = edit_preview(pending.tool, pending.args, edit_tools)
        """The file edit the call makes, shown first; None for any other call."""
        self.set_reactive(ApprovalScreen.showing_diff, self.preview is not None)

    def compose(self) -> ComposeResult:
        p = self.pending
        with Vertical(id="approval-dialog", classes="dialog"):
            title = Text()
            title.append("Approve ", style="bold")
            title.append(clean(p.tool), style="bold reverse")
            title.append(f"  ({self.kind})" if self.kind else "")
            yield Static(title, id="approval-title", markup=False)
            yield Static(Text(clean(self.description)), id="approval-description", markup=False)
            why = Text("Paused because: ", style="bold")
            why.append(clean(p.reason), style="not bold")
            yield Static(why, id="approval-reason", markup=False)
            yield Static(Text("Thought", style="bold"), classes="section", markup=False)
            yield Static(Text(clean(p.thought) or "(no thought)"), id="approval-thought", markup=False)
            yield Static(self._body_title(self.showing_diff), id="approval-body-title", classes="section", markup=False)
            with VerticalScroll(id="approval-args"):
                if self.preview is not None:
                    yield DiffView(self.preview, id="approval-diff")
                arguments = Static(args_text(p.args), id="approval-args-text", markup=False)
                arguments.display = not self.showing_diff
                yield arguments
            with Horizontal(classes="buttons"):
                yield KeyButton("a Approve", variant="success", id="approve")
                yield KeyButton("A Approve always", variant="warning", id="approve_always")
                yield KeyButton("r Reject", variant="error", id="reject")
                yield KeyButton("e Edit", id="edit")
                yield KeyButton("esc Look first", id="look")

    def on_mount(self) -> None:
        self.query_one("#approval-args", VerticalScroll).focus()
        self._fit(self.app.size.width, self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        """The title stays on top and the buttons at the foot (the stylesheet docks them);
        in a small terminal the buttons are compact so the body keeps some rows."""
        compact = width < COMPACT_BELOW[0] or height < COMPACT_BELOW[1]
        self.set_class(compact, "-compact")
        for button in self.query(KeyButton):
            button.compact = compact
        # all the rows but the cockpit's footer under the dialog (its ? help and q quit)
        self.query_one("#approval-dialog").styles.max_height = height - 1 if compact else None

    def _body_title(self, diff: bool) -> Text:
        if self.preview is None:
            return Text("Arguments", style="bold")
        words = {"diff": "Diff", "content": "New content", "patch": "Patch"}[self.preview.shows]
        title = Text(words if diff else "Arguments", style="bold")
        title.append(f"   d: {'the arguments' if diff else words.lower()}", style="not bold dim")
        return title

    def watch_showing_diff(self, diff: bool) -> None:
        self.query_one("#approval-diff").display = diff
        self.query_one("#approval-args-text").display = not diff
        self.query_one("#approval-body-title", Static).update(self._body_title(diff))
        self.query_one("#approval-args", VerticalScroll).scroll_home(animate=False)

    def action_toggle_body(self) -> None:
        """The diff, or the call's raw arguments: both are what runs."""
        self.showing_diff = not self.showing_diff

    def action_choose(self, choice: str) -> None:
        self.dismiss(CHOICES[choice])

    def action_look(self) -> None:
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A leaving key only where the app has its action (the gateway has no save); `d` only for a file edit."""
        if action == "toggle_body":
            return self.preview is not None
        return action != "leave" or hasattr(self.app, f"action_{parameters[0]}")

    def action_leave(self, action: str) -> None:
        self.dismiss(None)
        self.app.call_later(self.app.run_action, action)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "look":
            self.dismiss(None)
        elif event.button.id in CHOICES:
            self.dismiss(CHOICES[event.button.id])
