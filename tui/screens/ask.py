"""A one-line question: a prompt, an input, enter to answer, escape to cancel."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from tui.screens.forms import CancelScreen


class AskScreen(CancelScreen[str | None]):
    """Ask for one value; `check(value)` returns an error message or None."""

    def __init__(self, prompt: str, value: str = "", check: Callable[[str], str | None] | None = None) -> None:
        super().__init__()
        self.prompt = prompt
        self.value = value
        self.check = check

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog ask-dialog"):
            yield Static(Text(self.prompt, style="bold"), markup=False)
            yield Input(value=self.value, id="answer")
            yield Static("", id="ask-error", classes="form-error", markup=False)
            yield Label("enter: go · escape: cancel", markup=False, classes="hint")

    def on_mount(self) -> None:
        self.query_one("#answer", Input).focus()

    @on(Input.Submitted, "#answer")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        problem = self.check(value) if self.check is not None else None
        if problem:
            self.query_one("#ask-error", Static).update(Text(problem))
            return
        self.dismiss(value)
