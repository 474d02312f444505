"""The cockpit's header: scenario, task, policy, run state, transcript path, and for a run
with MCP servers the servers and their log files.

Fitted to its width, so what identifies the run and what it waits for is never cut:
the state (`awaiting approval: open_return_request`) stays whole, the name `agent-tui`
goes first, then the `policy:` label, then the end of the scenario and task; the path
keeps the file's name whole (`…/runs/NAME`); the task text follows the path only in
the room left (cut at a word, with `…`), else it is dropped (the transcript's first
row shows it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual import events
from textual.reactive import var
from textual.widgets import Static

from engine.core.text import clean
from tui.widgets.wrap import cut_end, cut_words

STATE_CLASSES = ("-running", "-paused", "-approval", "-budget", "-failed", "-input", "-ended")
MIN_TASK = 16
"""Cells the task text needs after the path to be shown at all."""
MIN_POLICY = 12
"""Cells a policy name keeps, cut, before the `policy:` label is dropped instead."""
MIN_LEAD = 8
"""Cells the scenario and task need before the state to be shown at all."""


def _flat(text: str) -> str:
    return clean(text).replace("\n", " ⏎ ").replace("\t", " ")


def shown_path(path: Path | None) -> str:
    """The transcript path as the header shows it, before fitting: home as `~`."""
    if path is None:
        return "not saved"
    text = str(path)
    home = str(Path.home())
    if home not in ("", "/") and text.startswith(home + "/"):
        text = "~" + text[len(home) :]
    return text


def fit_path(path: str, width: int) -> str:
    """`path` in `width` cells: whole, else its leading folders dropped for `…`
    (`…/runs/NAME`, as many folders as fit); the file's name is cut (in its middle)
    only when it alone is wider than `width`."""
    if cell_len(path) <= width:
        return path
    parts = path.split("/")
    for start in range(1, len(parts)):
        tail = "…/" + "/".join(parts[start:])
        if cell_len(tail) <= width:
            return tail
    name = parts[-1]
    if width < 3:
        return cut_end(name, width)
    keep_end = (width - 1) // 2
    return set_cell_size(name, width - 1 - keep_end) + "…" + name[-keep_end:] if keep_end else cut_end(name, width)


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


def _run_line(info: HeaderInfo, width: int) -> Text:
    """`agent-tui · SCENARIO · TASK · policy: POLICY · STATE`, shortened from the left to fit."""
    scenario, task, policy, state = _flat(info.scenario), _flat(info.task), _flat(info.policy), _flat(info.state)
    for brand, label in ((True, True), (False, True), (False, False)):
        line = Text()
        if brand:
            line.append("agent-tui", style="bold")
            line.append(" · ")
        line.append(f"{scenario} · {task} · {'policy: ' if label else ''}")
        room = width - line.cell_len - 3 - cell_len(state)
        if not brand and cell_len(policy) > room >= MIN_POLICY:  # a long policy name is cut before its label goes
            line.append(cut_end(policy, room), style="bold")
        else:
            line.append(policy, style="bold")
        line.append(" · ")
        line.append(state, style="bold reverse")
        if line.cell_len <= width:
            return line
    room = width - cell_len(state) - 3
    if room >= MIN_LEAD:
        line = Text(cut_end(f"{scenario} · {task} · {policy}", room))
        line.append(" · ")
        line.append(state, style="bold reverse")
        return line
    return Text(cut_words(state, width), style="bold reverse")


def _path_line(info: HeaderInfo, width: int) -> Text:
    """`transcript: PATH  ·  “TASK TEXT”`: the path first, the task text in the room left."""
    label, path = "transcript: ", _flat(info.path)
    line = Text()
    if cell_len(label) + cell_len(path) > width:
        short = fit_path(path, width - cell_len(label))
        if cell_len(label) + cell_len(short) <= width and "/" in short:
            line.append(label, style="dim")
            line.append(short)
        else:
            line.append(fit_path(path, width))
        return line
    line.append(label, style="dim")
    line.append(path)
    task_text = _flat(info.task_text).strip()
    room = width - line.cell_len - 5 - 2
    if task_text and room >= MIN_TASK:  # a run of MCP tools may have none yet
        line.append("  ·  ", style="dim")
        line.append(f"“{cut_words(task_text, room)}”", style="italic")
    return line


def header_text(info: HeaderInfo, width: int) -> Text:
    """The header's lines fitted to `width` cells."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append_text(_run_line(info, width))
    text.append("\n")
    text.append_text(_path_line(info, width))
    if info.servers:
        text.append("\n")
        text.append(_flat(info.servers), style="dim")
    return text


class RunHeader(Static):
    """Two lines: who runs what and in which state; where it is saved and the task text;
    a third naming the MCP servers and their stderr logs when the run has some.

    `info` is reactive: the header redraws when what it says changes or its width
    does, and only then.
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
        self.set_class(bool(info.servers), "-mcp")
        for name in STATE_CLASSES:
            self.set_class(name == info.state_class, name)
        self._draw()

    def on_resize(self, event: events.Resize) -> None:
        self._draw()

    def _draw(self) -> None:
        if self.info is None:
            return
        width = self.size.width or max(1, self.app.size.width - 2)  # before the first layout: the screen's, less the padding
        self.update(header_text(self.info, width), layout=False)  # the height is the stylesheet's (2, or 3 with -mcp)
