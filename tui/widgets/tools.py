"""The tool panel: every tool, its kind, how often it ran, whether its last call erred.

One row per tool (a scenario has a handful), grouped under a title per MCP
server when the run has some, and at the foot the progress bar of a running
MCP call that reports progress. A server's title says whether the operator
trusts it (an untrusted server's tools all ask; a trusted one's hints set the
kinds), and an MCP tool's tooltip where its kind came from
(`engine.core.describe.kind_source`). The tool of the pending action
carries the `-pending` class, a tool whose last call erred `-error`; the app's
stylesheet colours them.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from engine.core.events import ToolInfo
from engine.core.text import clean
from engine.core.describe import kind_source, trust_words
from tui.widgets.mcp_progress import CallProgress

KIND_WORDS = {"ordinary": "ordinary", "irreversible": "irreversible", "exit": "exit"}
NAME_WIDTH = 20
FULL_ROW = 2 + NAME_WIDTH + 1 + 13 + 4 + 4
"""Cells of a row with its kind column; a narrower row marks an irreversible tool `!` instead."""


class ToolRow(Static):
    """One tool: marker, name, kind, call count, last-call error flag."""

    def __init__(self, info: ToolInfo, source: str | None = None) -> None:
        """`source`: where the tool's kind came from (an MCP tool's), shown as its tooltip."""
        super().__init__(classes=f"tool-row -{info.kind}", markup=False)
        self.info = info
        if source is not None:
            self.tooltip = source
        self.calls = 0
        self.erred = False
        self.pending = False

    def on_mount(self) -> None:
        self.show()

    def set_state(self, calls: int, erred: bool, pending: bool) -> None:
        if (calls, erred, pending) == (self.calls, self.erred, self.pending):
            return
        self.calls, self.erred, self.pending = calls, erred, pending
        self.show()

    def line(self, width: int = FULL_ROW) -> Text:
        """The row in `width` cells: the kind as a word when it fits, else `!` after an
        irreversible tool's name (as the narrow strip has it)."""
        name = clean(self.info.name).replace("\n", " ")
        if len(name) > NAME_WIDTH:
            name = name[: NAME_WIDTH - 1] + "…"
        text = Text()
        text.append("▶ " if self.pending else "  ", style="bold")
        if width >= FULL_ROW:
            text.append(f"{name:<{NAME_WIDTH}} ")
            kind = KIND_WORDS.get(self.info.kind, self.info.kind)
            text.append(f"{kind:<12} ", style="dim" if self.info.kind == "ordinary" else "italic")
        else:
            mark = "!" if self.info.kind == "irreversible" else ""
            text.append(f"{name + mark:<{NAME_WIDTH + 1}} ")
        text.append(f"x{self.calls:<3}")
        text.append(" err" if self.erred else "    ", style="bold")
        return text

    def on_resize(self) -> None:
        self.show()

    def show(self) -> None:
        self.set_class(self.pending, "-pending")
        self.set_class(self.erred, "-error")
        self.update(self.line(self.size.width or FULL_ROW), layout=False)  # one line


class ToolPanel(Vertical):
    """All tools of the run; updated from the folded run state."""

    def __init__(self, tools: Iterable[ToolInfo], *, servers: Iterable[dict[str, Any]] = (), id: str | None = None) -> None:
        """`servers`: the header's MCP servers (their `name` and `trusted`)."""
        super().__init__(id=id)
        self.tools = list(tools)
        self.trusted = {str(s.get("name")): s.get("trusted") is True for s in servers if isinstance(s, dict)}
        self.tool_rows: list[ToolRow] | None = None

    def compose(self) -> ComposeResult:
        servers = list(dict.fromkeys(info.server for info in self.tools))
        for server in servers:
            trusted = self.trusted.get(server) if server is not None else None
            if servers != [None]:
                title = clean(server).replace("\n", " ") if server is not None else "scenario"
                if trusted is not None:
                    title = f"{title} · {trust_words(trusted)}"
                yield Static(Text(f"── {title}", style="bold"), classes="tool-group", markup=False)
            for info in self.tools:
                if info.server == server:
                    yield ToolRow(info, kind_source(info.kind, trusted) if trusted is not None else None)
        yield CallProgress(id="call-progress")

    def rows(self) -> list[ToolRow]:
        """The tool rows (composed once: looked up once, not by a query every step or seek)."""
        if self.tool_rows is None:
            self.tool_rows = list(self.query(ToolRow))
        return self.tool_rows

    def update_state(self, calls: Mapping[str, int], last_error: Mapping[str, bool], pending_tool: str | None) -> None:
        for row in self.rows():
            name = row.info.name
            row.set_state(calls.get(name, 0), bool(last_error.get(name, False)), name == pending_tool)
