"""The cockpit's header: scenario, task, policy, run state, transcript path, and for a run
with MCP servers the servers and their log files."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import var
from textual.widgets import Static

from engine.core.text import clean

STATE_CLASSES = ("-running", "-paused", "-approval", "-budget", "-failed", "-input", "-ended")


def _flat(text: str) -> str:
    return clean(text).replace("\n", " ⏎ ").replace("\t", " ")


@dataclass(frozen=True)
class HeaderInfo:
    """What the header says: who runs what, in which state (and its style class), where it is saved."""

    scenario: str
    task: str
    task_text: str
    policy: str
    state: str
    state_class: str
    path: str
    servers: str = ""
    """`mcp: NAME log: PATH · ...` for a run with MCP servers (a third line), else empty."""


class RunHeader(Static):
    """Two lines: who runs what and in which state; the task text and where it is saved;
    a third naming the MCP servers and their stderr logs when the run has some.

    `info` is reactive: the header redraws when what it says changes, and only then.
    """

    info: var[HeaderInfo | None] = var(None, init=False)

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
        servers: str = "",
    ) -> None:
        self.info = HeaderInfo(scenario, task, task_text, policy, state, state_class, path, servers)

    def watch_info(self, info: HeaderInfo | None) -> None:
        if info is None:
            return
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("agent-tui", style="bold")
        line.append(f" · {_flat(info.scenario)} · {_flat(info.task)} · policy: ")
        line.append(_flat(info.policy), style="bold")
        line.append(" · ")
        line.append(_flat(info.state), style="bold reverse")
        line.append("\n")
        line.append("transcript: ", style="dim")
        line.append(_flat(info.path))
        if info.task_text.strip():  # a run of MCP tools may have none yet
            line.append("  ·  ", style="dim")
            line.append(f"“{_flat(info.task_text)}”", style="italic")
        if info.servers:
            line.append("\n")
            line.append(_flat(info.servers), style="dim")
        self.set_class(bool(info.servers), "-mcp")
        for name in STATE_CLASSES:
            self.set_class(name == info.state_class, name)
        self.update(line, layout=False)  # the height is the stylesheet's (2, or 3 with -mcp)
