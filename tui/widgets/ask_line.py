"""A one-line question asked on the replay timeline's status line.

The viewer's go-to-step (and search) used a modal screen: the screen under it was dimmed
while the operator typed and drawn again whole when the answer closed it,
and the footer was built again for the modal's keys and again for the
screen's (most of a go-to-step's time). An `AskLine` is asked on the
timeline bar's status line instead (`TimelineBar.question`): no screen, no
focus change (one draws the whole screen again), no layout; the screen it is
on hands it the keys while it asks (`take_key`, `take_paste`), so asking and
answering redraw that line and what the answer changes, nothing else.

Typed characters (a paste too) go into the answer, backspace takes one back,
enter answers (a `check` that returns a message keeps the question open and
says why), escape cancels; other keys do nothing while it asks, except
ctrl+ keys (ctrl+c still quits). What is typed is drawn as text, never markup.
"""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import events

from engine.core.text import clean

Answered = Callable[[str | None], None]
"""Called with the answer, or None when the question was cancelled."""
Shown = Callable[[Text | None], None]
"""Draws the question's line (None: the question is over)."""


class AskLine:
    """Ask with `ask(prompt, answered, value=..., check=...)`; `shown` draws the line."""

    def __init__(self, shown: Shown) -> None:
        self.shown = shown
        self._answered: Answered | None = None
        self._check: Callable[[str], str | None] | None = None
        self.prompt = ""
        self.value = ""
        self.problem = ""

    @property
    def asking(self) -> bool:
        return self._answered is not None

    def ask(self, prompt: str, answered: Answered, *, value: str = "", check: Callable[[str], str | None] | None = None) -> None:
        self._answered, self._check = answered, check
        self.prompt, self.value, self.problem = prompt, value, ""
        self.shown(self.line())

    def line(self) -> Text:
        text = Text.assemble((self.prompt, "bold"), " ", self.value, (" ", "reverse"), no_wrap=True, overflow="ellipsis")
        if self.problem:
            text.append(f"  {self.problem}", style="bold red")
        text.append("  enter: go · escape: cancel", style="dim")
        return text

    def take_key(self, event: events.Key) -> None:
        """Answer `event` while asking (its screen's key handler calls this first)."""
        if not self.asking or event.key.startswith("ctrl+"):
            return
        event.stop()
        event.prevent_default()
        if event.key == "enter":
            self._submit()
            return
        if event.key == "escape":
            self._close(None)
            return
        if event.key == "backspace":
            self.value = self.value[:-1]
        elif event.is_printable and event.character:
            self.value += clean(event.character)
        self.shown(self.line())

    def take_paste(self, event: events.Paste) -> None:
        if self.asking:
            event.stop()
            self.value += clean(event.text.splitlines()[0] if event.text else "")
            self.shown(self.line())

    def _submit(self) -> None:
        value = self.value.strip()
        problem = self._check(value) if self._check is not None else None
        if problem:
            self.problem = problem
            self.shown(self.line())
            return
        self._close(value)

    def _close(self, value: str | None) -> None:
        answered, self._answered = self._answered, None
        self.shown(None)
        if answered is not None:
            answered(value)
