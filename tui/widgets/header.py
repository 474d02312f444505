"""The cockpit's header: scenario, task, policy, run state, transcript path."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from engine.core.text import clean

STATE_CLASSES = ("-running", "-paused", "-approval", "-budget", "-failed", "-input", "-ended")


def _flat(text: str) -> str:
    return clean(text).replace("\n", " ⏎ ").replace("\t", " ")


class RunHeader(Static):
    """Two lines: who runs what and in which state; the task text and where it is saved."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)

    def show(
        self,
        *,
        scenario: str,
        task: str,
        task_text: str,
        policy: str,
        state: str,
        state_class: str,
        path: str,
    ) -> None:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("agent-tui", style="bold")
        line.append(f" · {_flat(scenario)} · {_flat(task)} · policy: ")
        line.append(_flat(policy), style="bold")
        line.append(" · ")
        line.append(_flat(state), style="bold reverse")
        line.append("\n")
        line.append("transcript: ", style="dim")
        line.append(_flat(path))
        line.append("  ·  ", style="dim")
        line.append(f"“{_flat(task_text)}”", style="italic")
        for name in STATE_CLASSES:
            self.set_class(name == state_class, name)
        self.update(line)
