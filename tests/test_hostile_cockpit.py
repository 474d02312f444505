"""Hostile text in the cockpit: markup, click actions, terminal escapes and a huge line
are shown as data, never interpreted, and crash nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import Budget, Decision, Param, PolicyError, Scenario, ScriptedPolicy, Task, Tool
from engine.core.policy import RunView
from engine.sessions.run import new_run
from tests.support.cockpit_worlds import fixed_clock, settle
from tui.app import CockpitApp
from tui.screens.approval import ApprovalScreen
from tui.screens.forms import EditArgsScreen
from tui.widgets.tools import ToolRow
from tests.support.hostile import assert_inert, drawn

pytestmark = pytest.mark.anyio

MARKUP = "[bold]loud[/] [/] [@click=app.quit]quit[/] [link=https://evil.example]link[/link] [red"
ESCAPES = "\x1b]8;;https://evil.example\x07osc-link\x1b]8;;\x07 \x1b[2J\x1b[31mred\x07bell\x9b31m"
HUGE = "A" * 100_000
QUIT_CLICK = "[@click=app.quit]"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class HostileWorld:
    def __init__(self) -> None:
        self.tools = [
            Tool(
                "shout",
                f"Says {MARKUP} {ESCAPES}",
                (Param("text", description=MARKUP),),
                lambda text: f"{MARKUP} {ESCAPES} {text[:50]}",
                timeout=None,
            ),
            Tool(
                "wire",
                f"Sends money {MARKUP}",
                (Param("text"),),
                lambda text: f"sent {MARKUP}",
                kind="irreversible",
                timeout=None,
            ),
        ]


def hostile_policy() -> ScriptedPolicy:
    failed: list[bool] = []

    def decide(view: RunView) -> Decision:
        if view.step == 1:
            return Decision.act(f"{MARKUP} {ESCAPES}", "shout", text=f"{MARKUP}\n{ESCAPES}")
        if view.step == 2:
            return Decision.act(f"thinking {MARKUP} {ESCAPES}", "wire", text=f"{MARKUP} {HUGE} {ESCAPES}")
        if view.step == 3 and not failed:
            failed.append(True)
            raise PolicyError(f"backend said {MARKUP} {ESCAPES}")
        return Decision.final(MARKUP, f"{MARKUP} {ESCAPES}")

    return ScriptedPolicy(f"pol {MARKUP}", decide)


def hostile_run(tmp_path: Path):
    scenario = Scenario(
        name="hostile",
        description="hostile text",
        tasks={"t": Task("t", f"Task {MARKUP} {ESCAPES}")},
        policies={"p": lambda w, t: hostile_policy()},
        make_world=lambda task, options: HostileWorld(),
        budget=Budget(max_steps=10),
    )
    return new_run(scenario, "t", "p", save=True, out=tmp_path / "hostile.jsonl", interactive=True, clock=fixed_clock)


async def test_hostile_text_is_shown_as_data(tmp_path: Path) -> None:
    run = hostile_run(tmp_path)
    app = CockpitApp(run)
    async with app.run_test(size=(120, 40)) as pilot:
        header = app.query_one("#header")
        assert_inert(header, "[bold]loud[/]", QUIT_CLICK, "[link=https://evil.example]")
        assert "policy: pol [bold]loud[/] [/] [@click=app.quit]" in drawn(header)[0]

        await pilot.press("n")
        await settle(pilot)
        assert app.is_running
        assert run.engine.state.tool_calls == {"shout": 1}

        await pilot.press("n")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        assert_inert(modal.query_one("#approval-thought"), "thinking [bold]loud[/]", QUIT_CLICK)
        assert_inert(modal.query_one("#approval-description"), QUIT_CLICK)
        args = assert_inert(modal.query_one("#approval-args-text"), QUIT_CLICK, "[/] [@click")
        assert HUGE in args, "the arguments are never truncated"
        await pilot.click("#approval-thought")
        await pilot.click("#approval-args-text")
        await pilot.pause()
        assert app.is_running and app.screen is modal

        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EditArgsScreen)
        assert HUGE in app.screen.query_one("#arg-0").value
        await pilot.press("escape")
        await pilot.pause()

        row = next(r for r in app.query(ToolRow) if r.info.name == "wire")
        assert row.has_class("-pending")
        await pilot.press("a")
        await settle(pilot)
        assert run.engine.state.tool_calls == {"shout": 1, "wire": 1}

        await pilot.press("n")
        await settle(pilot)
        assert run.engine.status == "policy_failed"
        messages = [n.message for n in app._notifications]
        assert any(QUIT_CLICK in m and "\x1b" not in m for m in messages), messages
        await pilot.pause()
        for toast in app.screen.query("Toast"):
            assert_inert(toast)

        await pilot.press("n")
        await settle(pilot)
        assert run.engine.state.ended is not None and run.engine.state.ended.outcome == "answer"
        assert_inert(app.query_one("#header"), "ended: answer")
        await pilot.click("#header")
        await pilot.click("#transcript")
        await pilot.pause()
        assert app.is_running
        assert app.return_code is None
