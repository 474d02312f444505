"""The panes the cockpit and the replay viewer share: the compact strip (narrow
terminals) with the progress of a running MCP call under it, then the transcript beside the tools, the scenario's map (when it
has one) and the budget.

Both apps compose one `RunPanes` and hand it the folded state to show
(`show_state`); only the transcript pane is fed events separately (live:
appended as they come; replay: the first n of the file). `tui.layout` picks
which of these show at the terminal's size.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical

from engine.core.events import Header
from engine.core.scenario import Scenario
from engine.core.state import RunState
from tui.widgets.gauges import KINDS, BudgetGauges
from tui.widgets.grid_map import GridMap, map_picture
from tui.widgets.mcp_progress import CallProgress
from tui.widgets.strip import CompactStrip
from tui.widgets.tools import ToolPanel
from tui.widgets.transcript import TranscriptPane


class RunPanes(Vertical):
    """`#strip` over `#body`: `#transcript` left; `#side` with `#tools`, `#map`, `#budget` right."""

    DEFAULT_CSS = """
    RunPanes { height: 1fr; }
    """

    def __init__(self, header: Header, scenario: Scenario | None, *, id: str = "panes") -> None:
        super().__init__(id=id)
        self.header = header
        self.picture = map_picture(scenario, header)

    def compose(self) -> ComposeResult:
        yield CompactStrip(self.header.tools, id="strip")
        yield CallProgress(id="strip-progress")
        with Horizontal(id="body"):
            pane = TranscriptPane(id="transcript")
            pane.border_title = "transcript"
            yield pane
            with Vertical(id="side"):
                tools = ToolPanel(self.header.tools, servers=self.header.mcp, id="tools")
                tools.border_title = "tools"
                yield tools
                if self.picture is not None:
                    grid = GridMap(self.picture, id="map")
                    grid.border_title = "map"
                    yield grid
                budget = BudgetGauges(id="budget")
                budget.border_title = "budget"
                yield budget

    @property
    def transcript(self) -> TranscriptPane:
        return self.query_one(TranscriptPane)

    async def show_tools(self, header: Header) -> None:
        """The tools of another run (a gateway's next run, whose agent may declare others)."""
        tools = self.query_one(ToolPanel)
        if tools.tools != header.tools:
            tools.tools, tools.tool_rows = list(header.tools), None
            await tools.recompose()
        self.query_one(CompactStrip).tools = list(header.tools)

    def show_state(self, state: RunState) -> None:
        """Tools, map and budget as `state` has them."""
        pending_tool = state.pending.tool if state.pending is not None and state.status == "awaiting_approval" else None
        self.query_one(ToolPanel).update_state(state.tool_calls, state.tool_last_error, pending_tool)
        used = {kind: state.used(kind) for kind in KINDS}
        self.query_one(BudgetGauges).update_state(state.budget, used, state.input_tokens_per_step, state.policy_usage)
        self.query_one(CompactStrip).update_state(state.budget, used, state.tool_calls, state.tool_last_error, pending_tool)
        if self.picture is not None:
            self.query_one(GridMap).show_history(state.history, state.policy)
