"""Small dialogs: budget pause, abort confirmation, policy picker, save a copy, help."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Literal, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from engine.core.events import BudgetExhausted
from engine.core.text import clean
from engine.core.amounts import amount
from engine.stored.lock import TranscriptBusy, a_link
from tui.cockpit_actions import HELP
from tui.screens.approval import KeyButton
from tui.screens.forms import CancelScreen, ErrorLine, OneFieldScreen
from tui.widgets.gauges import LABELS


class FocusBox(Vertical, can_focus=True):
    """A dialog's box that holds the focus itself (its border lights up) until a field is chosen."""


BudgetAnswer = tuple[Literal["extend"], float] | tuple[Literal["end"], None]


def default_extension(kind: str, limit: float, used: float) -> float:
    """+5 steps, or +50 % of any other limit; of what is used when a step went past the limit (a
    step's tokens are counted when it is done), so that the new limit is always above it."""
    base = max(limit, used)
    if kind == "steps":
        return base + 5
    if kind == "tokens":
        return float(max(int(base * 1.5), int(base) + 1))
    value = round(base * 1.5, 4)
    return value if value > used else (base * 1.5 or 1.0)


class BudgetScreen(ModalScreen[BudgetAnswer | None]):
    """At a budget limit: raise the limit (by a sensible default) or end the run.

    The cockpit opens it by itself when a step stops at a limit, so the next
    key the operator types may have been meant for the cockpit: the limit field
    is not focused at first (the dialog is, with its border lit), `e`, `x` and
    escape answer, and any other key is answered with what the keys do, never
    typed into the field or dropped. Tab or `l` goes to the field.
    """

    BINDINGS = [
        Binding("e", "extend", "extend"),
        Binding("x", "end", "end the run"),
        Binding("l", "edit_limit", "change the limit"),
        Binding("question_mark", "app.help", "help"),
        Binding("escape", "later", "decide later"),
    ]

    def __init__(self, exhausted: BudgetExhausted) -> None:
        super().__init__()
        self.exhausted = exhausted

    def compose(self) -> ComposeResult:
        e = self.exhausted
        default = default_extension(e.kind, e.limit, e.used)
        shown_default = str(int(default)) if e.kind in ("steps", "tokens") else f"{default:g}"
        with FocusBox(id="budget-dialog", classes="dialog"):
            yield Static(Text(f"The {LABELS[e.kind]} budget is used up", style="bold"), markup=False)
            yield Label(
                f"{amount(e.kind, e.used)} of {amount(e.kind, e.limit)}. "
                "The run is paused: raise the limit to go on, or end the run here.",
                markup=False,
            )
            yield Label(f"New {LABELS[e.kind]} limit (l or tab to change it)", markup=False)
            yield Input(value=shown_default, id="new-limit", select_on_focus=False)
            yield ErrorLine(id="budget-error")
            with Horizontal(classes="buttons"):
                yield KeyButton("e Extend", variant="primary", id="extend")
                yield KeyButton("x End the run", variant="error", id="end")
                yield KeyButton("esc Later", id="later")

    def on_mount(self) -> None:
        self.query_one("#budget-dialog", FocusBox).focus()

    def on_key(self, event: Key) -> None:
        """A key that means nothing here (the dialog, not the field, has focus) gets an answer."""
        if isinstance(self.focused, Input) or not event.is_printable or event.key in self.active_bindings:
            return
        event.stop()
        key = clean(event.character or event.key)
        self.query_one(ErrorLine).say(
            f"{key!r} does nothing here: the run is paused at the {LABELS[self.exhausted.kind]} limit. "
            "e extends it, x ends the run, l changes the new limit, escape decides later."
        )

    def action_edit_limit(self) -> None:
        self.query_one("#new-limit", Input).focus()

    @on(Input.Submitted, "#new-limit")
    @on(Button.Pressed, "#extend")
    def action_extend(self, event: Input.Submitted | Button.Pressed | None = None) -> None:
        if event is not None:
            event.stop()
        raw = self.query_one("#new-limit", Input).value.strip().lstrip("$").rstrip("s")
        try:
            value = float(raw)
        except ValueError:
            self.query_one(ErrorLine).say(f"Not a number: {clean(raw)!r}")
            return
        if value <= self.exhausted.used:
            self.query_one(ErrorLine).say(f"The new limit must be above what is used ({amount(self.exhausted.kind, self.exhausted.used)}).")
            return
        self.dismiss(("extend", value))

    @on(Button.Pressed, "#end")
    def action_end(self) -> None:
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
                yield Button(Text(f"y {self.yes}"), variant="error", id="yes")
                yield Button("n No", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")


class QuitScreen(ConfirmScreen):
    """Quit a run that can go on? (The cockpit reads a second quit key here as yes.)"""

    def __init__(self, *, resumable: bool = True) -> None:
        if resumable:
            question = "Quit? The run stays resumable: the command that continues it is printed as you leave."
        else:
            question = "Quit? The run is not saved, so it cannot be resumed."
        super().__init__(question, yes="Quit")


class PolicyPicker(CancelScreen[str | None]):
    """Pick the policy for the next step; the current one picked keeps it (None), with a word
    that nothing changed, unless `keep_current` is False (a fork may go on with the same policy)."""

    def __init__(
        self,
        names: Sequence[str],
        current: str,
        *,
        title: str = "Policy for the next step",
        hint: str = "enter: use it · escape: keep the current one",
        keep_current: bool = True,
    ) -> None:
        super().__init__()
        self.names = list(names)
        self.current = current
        self.keep_current = keep_current
        self.title_text = title
        self.hint = hint

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
            yield Static(Text(self.title_text, style="bold"), markup=False)
            yield OptionList(*options, id="policies", markup=False)
            yield Label(self.hint, markup=False, classes="hint")

    def on_mount(self) -> None:
        policies = self.query_one("#policies", OptionList)
        policies.focus()
        if self.current in self.names:
            policies.highlighted = self.names.index(self.current)

    @on(OptionList.OptionSelected, "#policies")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.keep_current and event.option.id == self.current:
            self.app.notify(f"{clean(self.current)} is the policy already: nothing changed.", markup=False)
            self.dismiss(None)
            return
        self.dismiss(event.option.id)


def refuse_target(path: Path, live: Path | None) -> str | None:
    """Why a copy cannot be written to `path` (a folder, a device, the live transcript), or None."""
    if live is not None and path.resolve() == live.resolve():
        return f"{path} is the live transcript: choose another name."
    if path.is_symlink():
        return a_link(path)
    if path.is_dir():
        return f"{path} is a folder: add a file name (for example {path / 'transcript.jsonl'})."
    if path.exists() and not path.is_file():
        return f"{path} is not a regular file (a device, a pipe or a socket): choose a file."
    return None


class SaveScreen(OneFieldScreen[Path | None]):
    """Save a copy of the transcript; `save(path)` writes it and may raise OSError.

    An existing file is overwritten only after a yes in a confirmation whose
    default (Enter) keeps it; a folder, a device, a symbolic link, the live
    transcript and a transcript another run holds are refused with a message.
    """

    def __init__(self, default: str, save: Callable[[Path], None], live: Path | None = None) -> None:
        super().__init__(
            "save-dialog", Text("Save a copy of the transcript", style="bold"), "Path (the live transcript keeps saving itself)",
            Input(value=default, id="save-path"), Button("Save", variant="primary", id="do-save"), error_id="save-error",
        )
        self.save = save
        self.live = live

    def submit(self, text: str) -> None:
        raw = text.strip()
        if not raw:
            self.query_one(ErrorLine).say("Type a path.")
            return
        path = Path(raw).expanduser()
        refused = refuse_target(path, self.live)
        if refused is not None:
            self.query_one(ErrorLine).say(refused)
            return
        if path.exists():

            def answered(overwrite: bool | None) -> None:
                if overwrite:
                    self._write(path)
                else:
                    self.query_one(ErrorLine).say(f"Kept {path} as it was: type another path, or confirm with y to replace it.")

            question = f"{path} already exists (another run's transcript?). Replace it with this copy?"
            self.app.push_screen(ConfirmScreen(question, yes="Replace"), answered)
            return
        self._write(path)

    def _write(self, path: Path) -> None:
        try:
            self.save(path)
        except TranscriptBusy as exc:
            self.query_one(ErrorLine).say(f"Cannot save there: {exc}.")
            return
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self.query_one(ErrorLine).say(f"Cannot save to {path}: {reason}.")
            return
        self.dismiss(path)




def key_table(keys: str) -> Group:
    """The help text with each description wrapped beside its key (at 80 columns a
    long line used to wrap back under the keys). A line `KEY  what it does` is a
    row, an indented line goes on with the row above, and any other line is a
    paragraph of its own between the tables."""
    blocks: list[list[list[str]] | str] = []
    for line in keys.splitlines():
        row = re.match(r"(\S.*?)\s{2,}(\S.*)$", line)
        last = blocks[-1] if blocks else None
        if line[:1].isspace() and line.strip() and isinstance(last, list):
            last[-1][1] += " " + line.strip()
        elif row is not None:
            if not isinstance(last, list):
                last = []
                blocks.append(last)
            last.append([row.group(1), row.group(2)])
        else:
            blocks.append(line)
    parts: list[Table | Text] = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(Text(block))
            continue
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True, style="bold")
        table.add_column(ratio=1)
        for key, description in block:
            table.add_row(Text(key), Text(description))
        parts.append(table)
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    """The keys of a screen (the cockpit's by default); escape, ? or q closes."""

    BINDINGS = [Binding("escape,question_mark,q", "close", "close")]

    def __init__(self, title: str = "agent-tui keys", keys: str = HELP) -> None:
        super().__init__()
        self.heading = title
        self.keys = keys

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog", classes="dialog"):
            yield Static(Text(self.heading, style="bold"), markup=False)
            with VerticalScroll():
                yield Static(key_table(self.keys), markup=False)
            yield Label("escape to close", markup=False, classes="hint")
        yield Footer()  # its own: the keys of the screen below do nothing while it is open

    def action_close(self) -> None:
        self.dismiss(None)
