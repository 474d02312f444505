"""The compact strip: the tool panel and the budget gauges in two lines, for narrow terminals.

Below the width where the side panels leave the transcript 50 columns, the
cockpit and the replay viewer hide those panels and show this strip under the
header instead (see `tui.layout`). It says the same things in fewer cells:
each limit as `used/limit` in the gauge's warning or alarm colour, and each
tool with its call count, the pending one highlighted.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from rich.text import Text
from textual.widgets import Static

from engine.core.events import Budget, ToolInfo
from engine.core.text import clean
from engine.core.amounts import amount as format_amount
from tui.widgets.gauges import KINDS, LABELS, budget_level


def budget_line(budget: Budget, used: Mapping[str, float]) -> Text:
    """`steps 1/5 · tokens 28/2000 · cost $0.0000 · time 0.0s`: limits first, then the rest."""
    text = Text("budget ", style="dim")
    parts: list[Text] = []
    for kind in KINDS:
        limit = budget.limit(kind)
        amount = format_amount(kind, used[kind])
        part = Text(f"{LABELS[kind]} ")
        if limit is None:
            part.append(amount, style="dim")
        else:
            level = budget_level(used[kind], limit, budget.warn_at)
            style = {"ok": "bold", "warning": "bold yellow", "alarm": "bold reverse red"}[level]
            part.append(f"{amount}/{format_amount(kind, limit)}", style=style)
        parts.append(part)
    return text + Text(" · ", style="dim").join(parts)


def tools_line(
    tools: Iterable[ToolInfo], calls: Mapping[str, int], last_error: Mapping[str, bool], pending_tool: str | None
) -> Text:
    """`tools get_order_status 1 · open_return_request! 0`: `!` marks an irreversible tool."""
    text = Text("tools ", style="dim")
    parts: list[Text] = []
    for info in tools:
        name = clean(info.name).replace("\n", " ")
        mark = "!" if info.kind == "irreversible" else ""
        if info.name == pending_tool:
            style = "bold reverse yellow"
        elif last_error.get(info.name, False):
            style = "red"
        elif info.kind == "exit":
            style = "dim"
        else:
            style = ""
        part = Text(f"{name}{mark} ", style=style)
        part.append(str(calls.get(info.name, 0)), style=style or "bold")
        parts.append(part)
    return text + Text(" · ", style="dim").join(parts)


class CompactStrip(Static):
    """Two lines: the budget, then the tools; hidden unless the layout is narrow."""

    DEFAULT_CSS = """
    CompactStrip {
        height: 2;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        background: $panel;
    }
    """

    def __init__(self, tools: Iterable[ToolInfo], *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.tools = list(tools)
        self.shown: Text | None = None
        self.latest: tuple[Budget, Mapping[str, float], Mapping[str, int], Mapping[str, bool], str | None] | None = None
        """What the strip is to say, kept while it is hidden (the wide layout) and drawn when it shows."""

    def update_state(
        self,
        budget: Budget,
        used: Mapping[str, float],
        calls: Mapping[str, int],
        last_error: Mapping[str, bool],
        pending_tool: str | None,
    ) -> None:
        self.latest = (budget, used, calls, last_error, pending_tool)
        if self.display:
            self.draw()

    def on_show(self) -> None:
        self.draw()

    def draw(self) -> None:
        if self.latest is None:
            return
        budget, used, calls, last_error, pending_tool = self.latest
        text = budget_line(budget, used) + Text("\n") + tools_line(self.tools, calls, last_error, pending_tool)
        if text != self.shown:
            self.shown = text
            self.update(text, layout=False)  # two lines, whatever they say
