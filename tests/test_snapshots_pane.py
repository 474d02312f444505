"""Snapshot of the transcript pane alone (pytest-textual-snapshot)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.pilot import Pilot

from engine.core.events import (
    Action,
    ApprovalDecided,
    ApprovalRequested,
    BudgetWarning,
    DecisionMade,
    Header,
    Observed,
    RunEnded,
)
from tui.widgets.transcript import TranscriptPane

HEADER = Header(
    scenario="support",
    task="return-1187",
    task_text="The headphones from order 1187 are broken. I want to return them.",
    policy="scripted",
)

LONG_HISTORY = "\n".join(f"2024-10-{day:02d}  order 1187  scan at depot {day}, parcel moving" for day in range(1, 21))

SUPPORT_RUN = [
    DecisionMade(
        step=1,
        policy="scripted",
        thought="First I check whether the order was delivered.",
        actions=[Action(tool="get_order_status", args={"order_id": "1187"})],
    ),
    Observed(step=1, index=0, tool="get_order_status", args={"order_id": "1187"}, text=LONG_HISTORY, executed=True),
    DecisionMade(
        step=2,
        policy="scripted",
        thought="It was delivered. I open a return request.",
        actions=[Action(tool="open_return_request", args={"order_id": "1187"})],
    ),
    ApprovalRequested(step=2, index=0, tool="open_return_request", args={"order_id": "1187"}, reason="irreversible tool"),
    ApprovalDecided(step=2, index=0, choice="reject", reason="ask for a photo of the damage first"),
    Observed(
        step=2,
        index=0,
        tool="open_return_request",
        args={"order_id": "1187"},
        text="The operator rejected this call: ask for a photo of the damage first",
        error=True,
    ),
    BudgetWarning(kind="steps", used=4, limit=5),
    DecisionMade(
        step=3,
        policy="scripted",
        thought="The operator wants a photo [bold]first[/]. I open the request again after asking.",
        actions=[Action(tool="open_return_request", args={"order_id": "1187"})],
    ),
    ApprovalRequested(step=3, index=0, tool="open_return_request", args={"order_id": "1187"}, reason="irreversible tool"),
    ApprovalDecided(step=3, index=0, choice="approve"),
    Observed(step=3, index=0, tool="open_return_request", text="R-1 for 1187 — waits for a colleague", executed=True),
    DecisionMade(step=4, policy="scripted", thought="The request is open.", answer="I opened request R-1 to return 1187."),
    RunEnded(outcome="answer", reason="final answer", step=4, answer="I opened request R-1 to return 1187."),
]


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="transcript")

    def on_mount(self) -> None:
        self.query_one(TranscriptPane).reset(HEADER, SUPPORT_RUN)


def test_support_run_in_the_pane(snap_compare) -> None:
    """A support run in the transcript pane, 100x32, whole run visible.

    The reviewer should see: the task line; step numbers 1-4 in the left
    column with Thought (dim italic), Action (bold) and Observe rows; step 1's
    20-line observation folded to 5 rows and "… 15 more lines (o to expand)";
    a yellow Approval row, a red Rejected row and a red Error observation; a
    yellow Budget warning; a yellow Approved row; "[bold]first[/]" shown
    literally in step 3's thought; the Answer of step 4; then a rule titled
    "run ended: answer after 4 steps" with the answer in bold below it.
    """

    async def run_before(pilot: Pilot) -> None:
        pane = pilot.app.query_one(TranscriptPane)
        await pilot.pause()
        assert pane.event_count == len(SUPPORT_RUN)
        text = "\n".join(pane.render_line(y).text for y in range(pane.size.height))
        assert "… 15 more lines (o to expand)" in text
        assert "scan at depot 6," not in text
        assert "[bold]first[/]" in text
        assert "run ended: answer after 4 steps" in text
        assert pane.virtual_size.height <= pane.size.height

    assert snap_compare(PaneApp(), terminal_size=(100, 32), run_before=run_before)
