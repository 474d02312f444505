"""Small dialogs: budget pause, abort confirmation, policy picker, save a copy, help."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Literal, Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from engine.core.events import BudgetExhausted
from engine.core.text import clean
from tui.widgets.gauges import LABELS, format_amount

BudgetAnswer = tuple[Literal["extend"], float] | tuple[Literal["end"], None]


def default_extension(kind: str, limit: float) -> float:
    """+5 steps, or +50 % of any other limit."""
    if kind == "steps":
        return limit + 5
    if kind == "tokens":
        return float(int(limit * 1.5))
    return round(limit * 1.5, 4)


class BudgetScreen(ModalScreen[BudgetAnswer | None]):
    """At a budget limit: raise the limit (by a sensible default) or end the run."""

    BINDINGS = [Binding("escape", "later", "decide later")]

    def __init__(self, exhausted: BudgetExhausted) -> None:
        super().__init__()
        self.exhausted = exhausted

    def compose(self) -> ComposeResult:
        e = self.exhausted
        default = default_extension(e.kind, e.limit)
        shown_default = str(int(default)) if e.kind in ("steps", "tokens") else f"{default:g}"
        with Vertical(id="budget-dialog", classes="dialog"):
            yield Static(Text(f"The {LABELS[e.kind]} budget is used up", style="bold"), markup=False)
            yield Label(
                f"{format_amount(e.kind, e.used)} of {format_amount(e.kind, e.limit)}. "
                "The run is paused: raise the limit to go on, or end the run here.",
                markup=False,
            )
            yield Label(f"New {LABELS[e.kind]} limit", markup=False)
            yield Input(value=shown_default, id="new-limit")
            yield Static("", id="budget-error", classes="form-error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Extend", variant="primary", id="extend")
                yield Button("End the run", variant="error", id="end")
                yield Button("Later", id="later")

    def on_mount(self) -> None:
        self.query_one("#budget-error", Static).display = False
        self.query_one("#new-limit", Input).focus()

    def _say(self, message: str) -> None:
        error = self.query_one("#budget-error", Static)
        error.update(Text(message))
        error.display = True

    @on(Input.Submitted, "#new-limit")
    @on(Button.Pressed, "#extend")
    def _extend(self, event: Input.Submitted | Button.Pressed) -> None:
        event.stop()
        raw = self.query_one("#new-limit", Input).value.strip().lstrip("$").rstrip("s")
        try:
            value = float(raw)
        except ValueError:
            self._say(f"Not a number: {clean(raw)!r}")
            return
        if value <= self.exhausted.used:
            self._say(f"The new limit must be above what is used ({format_amount(self.exhausted.kind, self.exhausted.used)}).")
            return
        self.dismiss(("extend", value))

    @on(Button.Pressed, "#end")
    def _end(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(("end", None))

    @on(Button.Pressed, "#later")
    def action_later(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question; `y` confirms, `n` or escape declines."""

    BINDINGS = [
        Binding("y", "answer(True)", "yes"),
        Binding("n,escape", "answer(False)", "no"),
    ]

    def __init__(self, question: str, yes: str = "Yes") -> None:
        super().__init__()
        self.question = question
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="dialog"):
            yield Static(Text(self.question), markup=False)
            with Horizontal(classes="buttons"):
                yield Button(f"y {self.yes}", variant="error", id="yes")
                yield Button("n No", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")


class PolicyPicker(ModalScreen[str | None]):
    """Pick the policy for the next step."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, names: Sequence[str], current: str) -> None:
        super().__init__()
        self.names = list(names)
        self.current = current

    def compose(self) -> ComposeResult:
        options = []
        for name in self.names:
            prompt = Text(clean(name))
            if name == self.current:
                prompt.append("  (current)", style="dim")
            if name == "human":
                prompt.append("  you type each step", style="italic dim")
            options.append(Option(prompt, id=name))
        with Vertical(id="picker-dialog", classes="dialog"):
            yield Static(Text("Policy for the next step", style="bold"), markup=False)
            yield OptionList(*options, id="policies", markup=False)
            yield Label("enter: use it · escape: keep the current one", markup=False, classes="hint")

    def on_mount(self) -> None:
        policies = self.query_one("#policies", OptionList)
        policies.focus()
        if self.current in self.names:
            policies.highlighted = self.names.index(self.current)

    @on(OptionList.OptionSelected, "#policies")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SaveScreen(ModalScreen[Path | None]):
    """Save a copy of the transcript; `save(path)` writes it and may raise OSError."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, default: str, save: Callable[[Path], None]) -> None:
        super().__init__()
        self.default = default
        self.save = save

    def compose(self) -> ComposeResult:
        with Vertical(id="save-dialog", classes="dialog"):
            yield Static(Text("Save a copy of the transcript", style="bold"), markup=False)
            yield Label("Path (the live transcript keeps saving itself)", markup=False)
            yield Input(value=self.default, id="save-path")
            yield Static("", id="save-error", classes="form-error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Save", variant="primary", id="do-save")
                yield Button("Back", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#save-error", Static).display = False
        self.query_one("#save-path", Input).focus()

    @on(Input.Submitted, "#save-path")
    @on(Button.Pressed, "#do-save")
    def _save(self, event: Input.Submitted | Button.Pressed) -> None:
        event.stop()
        raw = self.query_one("#save-path", Input).value.strip()
        error = self.query_one("#save-error", Static)
        if not raw:
            error.update(Text("Type a path."))
            error.display = True
            return
        path = Path(raw).expanduser()
        try:
            self.save(path)
        except OSError as exc:
            error.update(Text(clean(f"Cannot save: {exc}")))
            error.display = True
            return
        self.dismiss(path)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


HELP = """\
n / space  one step: the policy decides once, then its action runs (or pauses for approval)
c          continue until a pause, the end, or escape
escape     interrupt a continue after the current step
a          approve the pending action
A          approve, and approve this tool always from now on
r          reject the pending action with a reason the policy reads
e          edit the pending action's arguments, then run it
v          view the pending approval again
b          the budget pause: extend the limit or end the run
p          pick the policy for the next step (scripted, human, model)
h          take over: type the next step yourself; h again hands back
x          abort the run
s          save a copy of the transcript
ctrl+p     every command of this screen, searchable
?          this help
q          quit (the transcript is already saved)

Keys that do not apply right now are hidden from the footer."""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog", classes="dialog"):
            yield Static(Text("agent-tui keys", style="bold"), markup=False)
            with VerticalScroll():
                yield Static(Text(HELP), markup=False)
            yield Label("escape to close", markup=False, classes="hint")

    def action_close(self) -> None:
        self.dismiss(None)
