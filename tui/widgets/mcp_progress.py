"""The progress of a running MCP call, as a bar at the foot of the tool panel.

Fed by the server's progress notifications (`engine.core.tools.Progress`); hidden
while no call reports progress, cleared when the call's observation arrives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.message import Message
from textual.widgets import Static

from engine.core.text import clean
from tui.widgets.gauges import append_bar

if TYPE_CHECKING:
    from engine.core.tools import Progress

BAR_WIDTH = 16
NAME_WIDTH = 20


class ProgressMessage(Message, bubble=False):
    """A progress notification, posted to the widget from the MCP loop's thread; only the bar handles it."""

    def __init__(self, update: Progress) -> None:
        super().__init__()
        self.update = update


def _flat(text: str) -> str:
    return clean(text).replace("\n", " ").replace("\t", " ")


class CallProgress(Static):
    """`server.tool ███████░░░ 7/10 message`, or `server.tool ⋯ 7 message` without a total."""

    DEFAULT_CSS = """
    CallProgress { height: auto; display: none; }
    CallProgress.-active { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.tool: str | None = None
        self.fraction: float | None = None

    def show_progress(self, tool: str, progress: float, total: float | None, message: str | None) -> None:
        self.tool = tool
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{_flat(tool)[:NAME_WIDTH]} ", style="bold")
        if total and total > 0:
            self.fraction = max(0.0, min(1.0, progress / total))
            append_bar(line, self.fraction, BAR_WIDTH)
            line.append(f" {progress:g}/{total:g}")
        else:
            self.fraction = None
            line.append(f"⋯ {progress:g}")
        if message:
            line.append(f" {_flat(message)}", style="dim")
        self.add_class("-active")
        self.update(line)

    def listen(self, update: Progress) -> None:
        """The hub's progress listener (any thread): hand the update to the UI thread."""
        self.post_message(ProgressMessage(update))

    @on(ProgressMessage)
    def _progress(self, message: ProgressMessage) -> None:
        u = message.update
        self.show_progress(f"{u.server}.{u.tool}" if u.server else u.tool, u.progress, u.total, u.message)

    def clear(self) -> None:
        """Hide the bar; a bar already hidden is left alone (every step ends by clearing it)."""
        if self.tool is None and not self.has_class("-active"):
            return
        self.tool = None
        self.fraction = None
        self.remove_class("-active")
        self.update("")
