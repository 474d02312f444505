"""80x24 first-class: what identifies the run and what it waits for is never cut, the
panels share the width, dialogs and forms fit, notices stay readable (asserted on the
text a terminal shows)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

import scenarios
from engine import Task
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import fixed_clock, screen_text, settle, wait_until
from tui.app import CockpitApp
from tui.screens.approval import ApprovalScreen

pytestmark = pytest.mark.anyio

LONG_TASK = (
    "The headphones from order 1187 are broken after two weeks and I want to return them, "
    "get my money back and know when the courier comes to fetch the parcel from my door."
)
NAME = "20261201-142557-support-return-1187-650123.jsonl"


def long_path_run(tmp_path: Path, *folders: str):
    out = tmp_path.joinpath(*folders, "runs", NAME)
    out.parent.mkdir(parents=True)
    task = Task("return-1187", LONG_TASK)
    return new_run(scenarios.get("support"), "return-1187", "scripted", out=out, interactive=True, clock=fixed_clock, task=task)


async def to_approval(pilot) -> None:
    for _ in range(2):
        await pilot.press("n")
        await settle(pilot)
    assert isinstance(pilot.app.screen, ApprovalScreen)
    await pilot.press("escape")
    await pilot.pause()


async def test_at_80x24_the_header_keeps_the_run_the_wait_and_the_file_name_whole(tmp_path: Path) -> None:
    app = CockpitApp(long_path_run(tmp_path, "home", "someone", ".local", "share", "agent-tui"))
    async with app.run_test(size=(80, 24)) as pilot:
        await to_approval(pilot)
        first, second = screen_text(app)[:2]
        assert "support · return-1187" in first, first
        assert first.rstrip().endswith("awaiting approval: open_return_request"), first
        assert second.startswith(" transcript: …/") and second.rstrip().endswith(f"/runs/{NAME}"), second
        assert second.count("…") == 1, second
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert app.view_state.ended is not None
        first = screen_text(app)[0]
        assert "ended: answer" in first and "return-1187" in first, first
        assert "…" not in first or first.rstrip().endswith("…"), first


async def test_at_160x40_the_whole_path_shows_and_the_task_is_cut_at_a_word(tmp_path: Path) -> None:
    # a base folder of one length wherever pytest puts its own (a worker's tmp_path is longer)
    base = Path(tempfile.mkdtemp(prefix="at160-", dir="/tmp"))
    try:
        await _whole_path_at_160(long_path_run(base))
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def _whole_path_at_160(run) -> None:
    app = CockpitApp(run)
    async with app.run_test(size=(160, 40)) as pilot:
        await to_approval(pilot)
        first, second = screen_text(app)[:2]
        assert "agent-tui · support · return-1187 · policy: scripted · awaiting approval: open_return_request" in first
        assert f"transcript: {run.path}" in second, second
        shown = second.rstrip()
        task = shown.split("  ·  “", 1)[1]
        assert task.endswith("…”") and LONG_TASK.startswith(task[:-2]), shown
        assert LONG_TASK[len(task) - 2] == " ", "cut at a space, not inside a word"


BUTTONS = ("a Approve", "A Approve always", "r Reject", "e Edit", "esc Look first")


@pytest.mark.parametrize("size", [(60, 16), (80, 24)], ids=["60x16", "80x24"])
async def test_the_approval_dialog_keeps_its_title_and_every_button(tmp_path: Path, size: tuple[int, int]) -> None:
    app = CockpitApp(long_path_run(tmp_path))
    async with app.run_test(size=size) as pilot:
        for _ in range(2):
            await pilot.press("n")
            await settle(pilot)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.pause()
        text = "\n".join(screen_text(app))
        assert "Approve open_return_request" in text, text
        for label in BUTTONS:
            assert label in text, f"{label!r} not drawn whole:\n{text}"
        dialog = app.screen.query_one("#approval-dialog")
        for button in app.screen.query("Button"):
            assert dialog.region.contains_region(button.region), (button.id, button.region, dialog.region)


async def test_the_take_over_form_fits_80x24_and_marks_focus_and_choice_in_text(tmp_path: Path) -> None:
    from textual.widgets import Select

    from tui.screens.forms import TakeOverScreen

    app = CockpitApp(long_path_run(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, TakeOverScreen)
        text = screen_text(app)
        assert any("Take over: you decide the next step" in row for row in text), text
        assert any("Run this step" in row for row in text), "the action is in sight without scrolling"
        assert any("> Thought" in row for row in text), text
        assert any("[x] one step, then hand back" in row for row in text), text
        assert any("[ ] stay in control" in row for row in text), text
        form.query_one("#tool", Select).value = "get_order_status"
        await pilot.pause()
        await pilot.press("tab")
        await pilot.pause()
        text = screen_text(app)
        assert any("> Tool" in row for row in text) and not any("> Thought" in row for row in text), text
        await pilot.press("tab")
        await pilot.pause()
        text = screen_text(app)
        assert any("> order_id" in row for row in text), text
        assert any("Run this step" in row for row in text), text
        await pilot.press("tab")  # the answer is off while a tool is chosen: the choice of mode is next
        await pilot.pause()
        text = screen_text(app)
        assert any(">[x] one step, then hand back" in row for row in text), "\n".join(text)
        await pilot.press("tab")
        await pilot.pause()
        text = screen_text(app)
        assert any("> Run this step" in row for row in text), "\n".join(text)


async def test_a_notification_never_covers_the_too_small_message(tmp_path: Path) -> None:
    from tui.layout import TooSmallScreen

    app = CockpitApp(long_path_run(tmp_path))
    async with app.run_test(size=(40, 10), notifications=True) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        alone = screen_text(app)
        app.notify("The policy failed: the endpoint answered 503 after three tries", title="step failed", severity="error", timeout=60)
        await wait_until(pilot, lambda: bool(app.screen.query("Toast")), what="the notification's toast")
        await pilot.pause()
        assert screen_text(app) == alone, "\n".join(screen_text(app))
        assert any("terminal too small" in row for row in alone) and any("40x10" in row for row in alone), alone
        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: not isinstance(app.screen, TooSmallScreen), what="the cockpit back")
        await wait_until(pilot, lambda: bool(app.screen.query("Toast")), what="the notification shown once there is room")


@pytest.mark.parametrize("width, height", [(100, 30), (120, 40), (160, 40)])
async def test_the_transcript_gets_the_room_and_the_side_panels_draw_whole(tmp_path: Path, width: int, height: int) -> None:
    from tui.layout import side_width

    app = CockpitApp(long_path_run(tmp_path))
    async with app.run_test(size=(width, height)) as pilot:
        await to_approval(pilot)
        side = app.query_one("#side")
        assert not app.screen.has_class("-narrow") and side.display
        assert app.pane.region.width >= 0.6 * width, (app.pane.region.width, width)
        assert side.region.width == side_width(width) <= 48
        rows = screen_text(app)
        panel = [row[side.region.x :].rstrip() for row in rows[side.region.y : side.region.bottom]]
        drawn = "\n".join(panel)
        for name in ("get_order_status", "estimate_delivery", "open_return_request", "hand_to_human"):
            assert name in drawn, drawn
        assert "…" not in drawn, drawn
        for kind, shown in (("steps", "2/5"), ("tokens", "/2000"), ("cost", "no limit"), ("time", "no limit")):
            assert any(row.lstrip("│ ").startswith(kind) and shown in row for row in panel), drawn


async def test_a_long_approval_at_60x16_scrolls_between_its_title_and_its_buttons(tmp_path: Path) -> None:
    from engine import Decision
    from tests.support.cockpit_worlds import by_step, desk_run

    policy = by_step("long", Decision.act("I pay now. " * 60, "pay", amount=5, to="x" * 400))
    app = CockpitApp(desk_run(policy, tmp_path))
    async with app.run_test(size=(60, 16)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.pause()
        text = screen_text(app)
        assert "Approve pay" in text[1], text
        for label in BUTTONS:
            assert any(label in row for row in text), f"{label!r} not drawn whole:\n" + "\n".join(text)
        assert text[-1].rstrip().endswith("q quit"), "the footer under the dialog stays in sight"


async def test_the_viewer_at_80x24_keeps_where_it_is_and_how_the_run_ended(tmp_path: Path) -> None:
    from engine.stored.replay import Timeline
    from tui.replay_app import ReplayApp

    run = long_path_run(tmp_path, "data", "agent-tui")
    run.engine.approve_mode = "yes"
    run.engine.run()
    while run.engine.status == "awaiting_approval":
        run.engine.approve()
        run.engine.run()
    run.close()
    app = ReplayApp(Timeline.open(run.path))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("end")
        await pilot.pause()
        first, second = screen_text(app)[:2]
        assert first.rstrip().endswith("· ended: answer (final answer)"), first
        assert "replay · event" in first and first.lstrip().startswith("support"), first
        assert second.rstrip().endswith(f"/runs/{NAME}"), second
