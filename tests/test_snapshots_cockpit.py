"""Pictures of the cockpit (pytest-textual-snapshot). Regenerate with `--snapshot-update`
and look at every changed SVG before accepting it."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

import scenarios
from engine import Budget, Task
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import desk_run, fixed_clock, settle
from tui.app import CockpitApp
from tui.screens.approval import ApprovalScreen
from tui.layout import TooSmallScreen
from tui.screens.dialogs import PolicyPicker
from tui.screens.forms import TakeOverScreen
from tui.widgets.gauges import Gauge

SIZE = (120, 40)
SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def support_app(out: str = "runs/cockpit.jsonl", task: Task | None = None) -> CockpitApp:
    run = new_run(
        scenarios.get("support"),
        "return-1187",
        "scripted",
        save=True,
        out=Path(out),
        interactive=True,
        clock=fixed_clock,
        task=task,
    )
    return CockpitApp(run)


async def steps(pilot, count: int) -> None:
    for _ in range(count):
        await pilot.press("n")
        await settle(pilot)


@SIZES
def test_cockpit_mid_run(snap_compare, in_tmp: Path, size: tuple[int, int]) -> None:
    """Support desk after step 1: header says "paused" with the path runs/cockpit.jsonl;
    the transcript shows the task, thought, action (on one line) and observation of step 1.
    120x40: the tool panel counts get_order_status x1; steps 1/5 and tokens bars; one
    context bar ("step 1: 16"). 80x24: no side panels; a two-line strip under the header
    says "budget steps 1/5 · tokens 28/2000 ..." and "tools get_order_status 1 ...".
    The footer starts with n step, c continue and ends with ? help, q quit on the right."""
    app = support_app()

    async def run_before(pilot) -> None:
        await steps(pilot, 1)
        assert app.run_status == "ready" and app.view_state.step == 1
        assert app.view_state.tool_calls == {"get_order_status": 1}

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@SIZES
def test_approval_modal(snap_compare, in_tmp: Path, size: tuple[int, int]) -> None:
    """The approval modal over the cockpit: open_return_request (irreversible), its
    description, "Paused because: irreversible tool", the thought, order_id = 1187 in the
    arguments box, and the five buttons, all inside the dialog at both sizes; behind it the
    tool row (120x40) or the strip's tool name (80x24) is highlighted."""
    app = support_app()

    async def run_before(pilot) -> None:
        await steps(pilot, 2)
        assert isinstance(app.screen, ApprovalScreen)
        assert app.run_.engine.status == "awaiting_approval"

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_policy_picker(snap_compare, in_tmp: Path) -> None:
    """The policy picker over the test desk after one step: alpha (current), beta,
    pay-twice, reads-rejection, human ("you type each step"), alpha highlighted."""
    app = CockpitApp(desk_run("alpha", Path("runs")))

    async def run_before(pilot) -> None:
        await steps(pilot, 1)
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PolicyPicker)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_budget_warning(snap_compare, in_tmp: Path) -> None:
    """The test desk after 4 of 5 steps: the steps gauge in the warning look (4/5), the
    tokens gauge normal, cost and time "no limit"; four notes in the transcript with the
    budget warning line; the sparkline rising step by step."""
    app = CockpitApp(desk_run("alpha", Path("runs"), budget=Budget(max_steps=5, max_tokens=5000)))

    async def run_before(pilot) -> None:
        await steps(pilot, 4)
        gauge = app.query_one("#gauge-steps", Gauge)
        assert gauge.has_class("-warning") and not gauge.has_class("-alarm")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_ended_run(snap_compare, in_tmp: Path) -> None:
    """The support run after approval and the final answer: header "ended: answer",
    R-1 in the transcript, open_return_request x1, the footer without step/continue/abort."""
    app = support_app()

    async def run_before(pilot) -> None:
        await steps(pilot, 2)
        await pilot.press("a")
        await settle(pilot)
        await steps(pilot, 1)
        assert app.run_.engine.state.ended is not None
        assert app.run_.engine.state.ended.outcome == "answer"

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_too_small(snap_compare, in_tmp: Path) -> None:
    """At 40x10 only the notice, centred: "terminal too small: needs at least 60x16" and
    "this one is 40x10; make it larger, or press q to quit"."""
    app = support_app()

    async def run_before(pilot) -> None:
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)

    assert snap_compare(app, terminal_size=(40, 10), run_before=run_before)


LONG_TASK = (
    "The headphones from order 1187 are broken after two weeks and I want to return them, "
    "get my money back and know when the courier comes to fetch the parcel."
)


def long_named_app() -> CockpitApp:
    """The support run under a long task and a file named as the data folder names runs."""
    out = "data/agent-tui/runs/20261201-142557-support-return-1187-650123.jsonl"
    return support_app(out, Task("return-1187", LONG_TASK))


def test_cockpit_waiting_for_approval_at_80x24(snap_compare, in_tmp: Path) -> None:
    """80x24, the approval dialog closed with escape: header line one ends with the whole
    "awaiting approval: open_return_request" (no "agent-tui", no "policy:" label); line
    two "transcript: …/agent-tui/runs/20261201-142557-support-return-1187-650123.jsonl"
    with the file name whole and no task text; the strip's open_return_request! highlighted;
    the transcript's Approval row; footer a approve ... v review, ? help, q quit."""
    app = long_named_app()

    async def run_before(pilot) -> None:
        await steps(pilot, 2)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.run_status == "awaiting_approval" and not app.screen.is_modal

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_approval_dialog_at_60x16(snap_compare, in_tmp: Path) -> None:
    """60x16: the approval dialog fills the screen above the footer; on top "Approve
    open_return_request (irreversible)", then the description, "Paused because:
    irreversible tool", the thought and order_id = 1187 in the arguments box; at the foot
    compact one-line buttons in two rows: "a Approve  A Approve always  r Reject" and
    "e Edit  esc Look first", none cut."""
    app = long_named_app()

    async def run_before(pilot) -> None:
        await steps(pilot, 2)
        assert isinstance(app.screen, ApprovalScreen) and app.screen.has_class("-compact")

    assert snap_compare(app, terminal_size=(60, 16), run_before=run_before)


def test_take_over_form_at_80x24(snap_compare, in_tmp: Path) -> None:
    """80x24, h pressed on the fresh support run: "Take over: you decide the next step" on
    top; "> Thought" (focused) over a one-line field; the Tool, Final answer fields; the
    mode as "[x] one step, then hand back" and "[ ] stay in control ..."; the buttons
    "Run this step" and "Back" at the dialog's foot, in sight."""
    app = long_named_app()

    async def run_before(pilot) -> None:
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, TakeOverScreen)
        assert app.screen.focused is app.screen.query_one("#thought")
        for field in app.screen.query(Input):
            field.cursor_blink = False  # the cursor hidden, not caught mid-blink

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
